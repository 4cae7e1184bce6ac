package acceptance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	regv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/e2e/internal/podcorpus"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// levels are the Pod Security levels the corpus is created at.
var levels = []string{"privileged", "baseline", "restricted"}

// Outcomes. The first three are what graft may do; the others fail the
// test, but invalidWithoutGraft: the corpus Pod itself breaks the level.
const (
	injected            = "injected"
	skippedPrefix       = "skipped: "
	refusedPrefix       = "refused by graft: "
	invalidWithoutGraft = "invalid without graft (the Pod breaks the level)"
	brokenPrefix        = "BROKEN by graft: "
	guaranteeRefused    = "REFUSED by graft's guarantee"
	mismatchPrefix      = "MISMATCH: "
	otherError          = "OTHER error"
)

// rig is the acceptance cluster's wiring.
type rig struct {
	client   kubernetes.Interface
	engine   *inject.Engine
	profiles []string // the default profile first
}

// namespace names the namespace of profile ("" for none: graft does not
// serve it) at level, with a LimitRange or not.
func namespace(profile, level string, lr bool) string {
	name := "acc-" + cmpOr(profile, "none") + "-" + level
	if lr {
		name += "-lr"
	}
	return name
}

func cmpOr(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

func TestAcceptanceCorpus(t *testing.T) {
	n, seed := 150, uint64(21)
	if v := os.Getenv("GRAFT_ACCEPTANCE_PODS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("GRAFT_ACCEPTANCE_PODS=%q: want a positive number", v)
		}
	}
	if v := os.Getenv("GRAFT_ACCEPTANCE_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("GRAFT_ACCEPTANCE_SEED=%q: %v", v, err)
		}
	}
	r := setup(t)
	corpus := podcorpus.Generate(seed, n)
	t.Logf("%d corpus Pods (seed %d) x %d profiles x %d levels, and each at each level without graft", n, seed, len(r.profiles), len(levels))

	start := time.Now()
	results := r.createAll(t, corpus)
	t.Logf("%d dry-run creates in %s", len(results), time.Since(start).Round(time.Second))
	report(t, r.profiles, results)
}

// result is one create's outcome.
type result struct {
	pod            string
	profile, level string // profile "" for the namespace graft does not serve
	outcome        string
	message        string // the API server's, for the failing outcomes
}

// setup wires graft as deploy/base ships it, creates the namespaces and
// waits until the webhooks and policies are in effect.
func setup(t *testing.T) *rig {
	t.Helper()
	ctx := t.Context()
	cfg := env.RESTConfig()
	cfg.WarningHandler = rest.NoWarnings{} // duplicate ports warn, on purpose
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := cluster.LoadShipped(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.RegisterGraft(ctx, shipped); err != nil {
		t.Fatal(err)
	}
	createGuarantees(t, client)

	f, err := config.Load(filepath.Join(repoRoot, "deploy", "base", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	engine, err := inject.New(f.Config, set)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{client: client, engine: engine, profiles: []string{f.DefaultProfile}}
	for _, p := range slices.Sorted(maps.Keys(f.Profiles)) {
		if p != f.DefaultProfile {
			r.profiles = append(r.profiles, p)
		}
	}

	for _, profile := range append([]string{""}, r.profiles...) {
		for _, level := range levels {
			for _, lr := range []bool{false, true} {
				labels := map[string]string{"pod-security.kubernetes.io/enforce": level}
				if profile != "" {
					labels[names.Inject] = profile
				}
				ns := namespace(profile, level, lr)
				if err := env.CreateNamespace(ctx, ns, labels); err != nil {
					t.Fatal(err)
				}
				if lr {
					if _, err := client.CoreV1().LimitRanges(ns).Create(ctx, podcorpus.LimitRange(), metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	if err := env.WaitInjecting(ctx, namespace(r.profiles[0], "privileged", false)); err != nil {
		t.Fatalf("graft's webhooks never took effect: %v", err)
	}
	// Each profile's guarantee is in effect once it refuses a Pod in a
	// namespace whose graft.dev/rev names no revision (no webhook serves
	// it).
	for _, profile := range r.profiles {
		ns := "acc-probe-" + profile
		if err := env.CreateNamespace(ctx, ns, map[string]string{names.Inject: profile, names.Revision: "none-such"}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the guarantee of "+profile, func(ctx context.Context) error {
			probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
			_, err := client.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil || !strings.Contains(err.Error(), "graft.dev/rev=none-such") {
				return fmt.Errorf("not refused yet: %v", err)
			}
			return nil
		})
	}
	return r
}

// createGuarantees creates every policy and binding of
// deploy/base/validatingadmissionpolicy.yaml.
func createGuarantees(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "base", "validatingadmissionpolicy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ar := client.AdmissionregistrationV1()
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return
			}
			t.Fatal(err)
		}
		var meta metav1.TypeMeta
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "ValidatingAdmissionPolicy":
			var p regv1.ValidatingAdmissionPolicy
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatal(err)
			}
			if _, err := ar.ValidatingAdmissionPolicies().Create(t.Context(), &p, metav1.CreateOptions{}); err != nil {
				t.Fatalf("policy %s: %v", p.Name, err)
			}
		case "ValidatingAdmissionPolicyBinding":
			var b regv1.ValidatingAdmissionPolicyBinding
			if err := json.Unmarshal(raw, &b); err != nil {
				t.Fatal(err)
			}
			if _, err := ar.ValidatingAdmissionPolicyBindings().Create(t.Context(), &b, metav1.CreateOptions{}); err != nil {
				t.Fatalf("binding %s: %v", b.Name, err)
			}
		}
	}
}

// waitFor polls check every 200ms for up to a minute.
func waitFor(t *testing.T, what string, check func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		err := check(ctx)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// job is one Pod's creates: at every level without graft, then in every
// profile's namespace at every level.
type job struct{ p podcorpus.Pod }

// workers creating in parallel: the API server, not the client, is what
// is measured nowhere here.
const workers = 8

func (r *rig) createAll(t *testing.T, corpus []podcorpus.Pod) []result {
	jobs := make(chan job)
	var (
		mu  sync.Mutex
		out []result
		wg  sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				res := r.createOne(t.Context(), j.p)
				mu.Lock()
				out = append(out, res...)
				mu.Unlock()
			}
		})
	}
	for _, p := range corpus {
		jobs <- job{p}
	}
	close(jobs)
	wg.Wait()
	return out
}

// createOne creates p everywhere and classifies each create.
func (r *rig) createOne(ctx context.Context, cp podcorpus.Pod) []result {
	var out []result
	control := map[string]error{}
	for _, level := range levels {
		err := r.dryRun(ctx, namespace("", level, cp.LimitRange), cp.Pod)
		control[level] = err
		res := result{pod: cp.Pod.Name, level: level, outcome: "valid without graft"}
		if err != nil {
			res.outcome, res.message = invalidWithoutGraft, err.Error()
		}
		out = append(out, res)
	}
	for _, profile := range r.profiles {
		for _, level := range levels {
			ns := namespace(profile, level, cp.LimitRange)
			res := result{pod: cp.Pod.Name, profile: profile, level: level}
			created, err := r.createIn(ctx, ns, cp.Pod)
			res.outcome, res.message = r.classify(cp.Pod, ns, profile, created, err, control[level])
			out = append(out, res)
		}
	}
	return out
}

func (r *rig) dryRun(ctx context.Context, ns string, p *corev1.Pod) error {
	_, err := r.createIn(ctx, ns, p)
	return err
}

func (r *rig) createIn(ctx context.Context, ns string, p *corev1.Pod) (*corev1.Pod, error) {
	var created *corev1.Pod
	var err error
	// A busy machine may time a create out: try again, a few times.
	for range 3 {
		created, err = r.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), "timeout") && !strings.Contains(err.Error(), "context deadline exceeded") {
			break
		}
	}
	return created, err
}

var (
	graftDenial     = regexp.MustCompile(`admission webhook "[^"]*inject\.graft\.dev" denied the request`)
	guaranteeDenial = "ValidatingAdmissionPolicy 'graft-injection-required-"
)

// classify says what became of creating p in ns (profile's), given the
// API server's answer and its answer for the same Pod at the same level
// without graft.
func (r *rig) classify(p *corev1.Pod, ns, profile string, created *corev1.Pod, err, control error) (string, string) {
	res := r.offline(p, ns, profile)
	switch {
	case err == nil && created.Annotations[names.Status] != "":
		if res.Decision != inject.DecisionInject {
			return mismatchPrefix + "injected, yet the engine says " + res.Decision.String() + " (" + res.Reason.String() + ")", ""
		}
		return injected, ""
	case err == nil:
		if res.Decision == inject.DecisionInject {
			return mismatchPrefix + "not injected, yet the engine injects", ""
		}
		return skippedPrefix + res.Reason.String(), ""
	case graftDenial.MatchString(err.Error()):
		return refusedPrefix + res.Reason.String(), err.Error()
	case strings.Contains(err.Error(), guaranteeDenial):
		return guaranteeRefused, err.Error()
	case control != nil:
		return invalidWithoutGraft, ""
	case strings.Contains(err.Error(), "violates PodSecurity"):
		return brokenPrefix + "Pod Security", err.Error()
	case strings.Contains(err.Error(), "is invalid"):
		return brokenPrefix + "validation", err.Error()
	}
	return otherError, err.Error()
}

// offline is the engine's decision for p in ns with profile, as graft
// decides it on the API server's first call.
func (r *rig) offline(p *corev1.Pod, ns, profile string) inject.Result {
	q := p.DeepCopy()
	q.Namespace = ns
	raw, err := json.Marshal(q)
	if err != nil {
		return inject.Result{}
	}
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
		`"namespace":` + strconv.Quote(ns) + `,"operation":"CREATE","object":` + string(raw) + `}}`
	_, res, err := r.engine.Admit(nil, []byte(review), inject.Options{Profile: profile})
	if err != nil {
		return inject.Result{}
	}
	return res
}

// report prints the outcome table and fails on what graft must never do.
func report(t *testing.T, profiles []string, results []result) {
	type key struct{ outcome, profile, level string }
	counts := map[key]int{}
	outcomes := map[string]bool{}
	type sample struct {
		n       int
		example string
	}
	messages := map[string]*sample{} // failing outcome + normalised message
	// Messages group by their shape: Pod names, quantities and list
	// indices vary from Pod to Pod.
	shape := []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`"c\d{4}"`), `"<pod>"`},
		{regexp.MustCompile(`Invalid value: "[^"]*"`), `Invalid value: <v>`},
		{regexp.MustCompile(`of \d+[a-zA-Z]*`), `of <n>`},
		{regexp.MustCompile(`\[\d+\]`), `[i]`},
	}
	for _, res := range results {
		counts[key{res.outcome, res.profile, res.level}]++
		outcomes[res.outcome] = true
		if failing(res.outcome) {
			msg := res.message
			for _, sh := range shape {
				msg = sh.re.ReplaceAllString(msg, sh.with)
			}
			m := res.outcome + " | " + dedupe(msg)
			if messages[m] == nil {
				messages[m] = &sample{example: res.pod + " in " + namespace(res.profile, res.level, false) + "[-lr]"}
			}
			messages[m].n++
		}
	}
	var b strings.Builder
	b.WriteString("\n| outcome | profile | privileged | baseline | restricted |\n|---|---|--:|--:|--:|\n")
	for _, o := range slices.Sorted(maps.Keys(outcomes)) {
		for _, p := range append([]string{""}, profiles...) {
			row := fmt.Sprintf("| %s | %s |", o, cmpOr(p, "(none: graft does not serve it)"))
			any := false
			for _, l := range levels {
				c := counts[key{o, p, l}]
				any = any || c > 0
				row += fmt.Sprintf(" %d |", c)
			}
			if any {
				b.WriteString(row + "\n")
			}
		}
	}
	t.Log(b.String())
	failed := 0
	for _, m := range slices.Sorted(maps.Keys(messages)) {
		s := messages[m]
		failed += s.n
		t.Logf("%d x %s\n    e.g. %s", s.n, m, s.example)
	}
	for _, res := range results {
		if res.profile == "" && res.level == "privileged" && res.outcome == invalidWithoutGraft {
			t.Errorf("corpus Pod %s is invalid without graft, even at privileged: %s", res.pod, res.message)
		}
	}
	if failed > 0 {
		t.Errorf("%d creates failed for something graft did (above: BROKEN, REFUSED by the guarantee, MISMATCH, OTHER)", failed)
	}
}

// dedupe drops repeated items from a list message "[a, b, a]", which the
// shapes make identical.
func dedupe(msg string) string {
	head, list, ok := strings.Cut(msg, ": [")
	if !ok || !strings.HasSuffix(list, "]") {
		return msg
	}
	var items []string
	for _, it := range strings.Split(strings.TrimSuffix(list, "]"), ", ") {
		if !slices.Contains(items, it) {
			items = append(items, it)
		}
	}
	return head + ": [" + strings.Join(items, ", ") + "]"
}

// failing reports whether an outcome fails the test.
func failing(outcome string) bool {
	for _, p := range []string{brokenPrefix, guaranteeRefused, mismatchPrefix, otherError} {
		if strings.HasPrefix(outcome, p) {
			return true
		}
	}
	return false
}
