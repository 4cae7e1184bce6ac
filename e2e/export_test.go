package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	regv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/export"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// `graft export` against the webhook: for each profile, one namespace
// served by graft (the shipped webhook registration on /inject/<profile>)
// and one by the exported policies, and the same Pod created (dry run) in
// both must come out the same, field for field, graft.dev/status included,
// or be refused by both with the same message.

// exportLabel selects a profile's policy namespace in these tests; the
// exported bindings' own selector (graft.dev/inject) would also call the
// suite's shipped webhook.
const exportLabel = "e2e.graft.dev/export"

// exportPair is a profile wired twice.
type exportPair struct {
	profile           string
	webhookNS, policy string
}

// exportFixture wires every profile of the suite's configuration once for
// the tests below.
type exportFixture struct {
	once sync.Once
	err  error
	cfg  inject.Config
	set  *templates.Set
	// revision is the configuration's, which the policies record.
	revision string
	pairs    map[string]exportPair
}

var exported exportFixture

func (f *exportFixture) get(t *testing.T) *exportFixture {
	t.Helper()
	needsKubernetes(t, 36, "MutatingAdmissionPolicy v1, which graft export writes (GA in 1.36)")
	f.once.Do(func() { f.err = f.setup(context.Background()) })
	if f.err != nil {
		t.Fatalf("wire exported policies: %v", f.err)
	}
	return f
}

func (f *exportFixture) setup(ctx context.Context) error {
	var err error
	if f.cfg, err = suiteConfig(); err != nil {
		return err
	}
	defaulted, err := f.cfg.Defaulted()
	if err != nil {
		return err
	}
	f.revision = defaulted.Revision
	// The built-in templates and the engine's fixtures the suite's
	// profiles name (agent, token-aware), as graft serves them here.
	if f.set, err = config.Templates(filepath.Join(repoRoot, "inject", "testdata", "templates")); err != nil {
		return err
	}
	f.pairs = map[string]exportPair{}
	var hooks []regv1.MutatingWebhook
	for _, profile := range slices.Sorted(maps.Keys(f.cfg.Profiles)) {
		pair := exportPair{profile: profile, webhookNS: "e2e-exp-wh-" + profile, policy: "e2e-exp-pol-" + profile}
		if err := env.cluster.CreateNamespace(ctx, pair.webhookNS, nil); err != nil {
			return err
		}
		if err := env.cluster.CreateNamespace(ctx, pair.policy, map[string]string{exportLabel: profile}); err != nil {
			return err
		}
		h := scopedGraftWebhook(profile+".export.e2e.graft.dev", pair.webhookNS, "/inject/"+profile)
		if f.cfg.Profiles[profile].InjectHostNetwork {
			// As the shipped registration says for such profiles.
			h.MatchConditions = slices.DeleteFunc(h.MatchConditions, func(c regv1.MatchCondition) bool { return c.Name == "not-host-network" })
		}
		hooks = append(hooks, h)
		pols, err := export.Export(f.cfg, f.set, profile)
		if err != nil {
			return fmt.Errorf("export %s: %w", profile, err)
		}
		cluster.SelectNamespaces(pols, &metav1.LabelSelector{MatchLabels: map[string]string{exportLabel: profile}})
		if err := env.cluster.CreatePolicies(ctx, pols); err != nil {
			return fmt.Errorf("profile %s: %w", profile, err)
		}
		f.pairs[profile] = pair
	}
	cfg := &regv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "graft-e2e-export"}, Webhooks: hooks}
	if _, err := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, pair := range f.pairs {
		for _, ns := range []string{pair.webhookNS, pair.policy} {
			if err := env.waitInjecting(ctx, ns); err != nil {
				return fmt.Errorf("profile %s never injected in %s: %w", pair.profile, ns, err)
			}
		}
	}
	return nil
}

// outcome is what a dry-run create gave: the stored Pod, or the refusal.
type outcome struct {
	pod    *corev1.Pod
	refuse string
}

func dryRun(ctx context.Context, ns string, p *corev1.Pod) outcome {
	got, err := env.client.CoreV1().Pods(ns).Create(ctx, placed(p, p.Name, ns), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return outcome{refuse: refusal(err, ns)}
	}
	return outcome{pod: got}
}

// refusal keeps what decides a refusal: the message of whichever
// admission step refused (a webhook and a policy word their prefixes
// differently), or the API server's validation errors as a sorted set
// (it lists the errors of a map, annotations say, in map order), with the
// namespace blanked.
func refusal(err error, ns string) string {
	msg := err.Error()
	var st apierrors.APIStatus
	if errors.As(err, &st) && !strings.Contains(msg, "denied") {
		if d := st.Status().Details; d != nil && len(d.Causes) > 0 {
			var causes []string
			for _, c := range d.Causes {
				causes = append(causes, c.Field+": "+c.Message)
			}
			slices.Sort(causes)
			msg = "invalid: " + strings.Join(causes, "\n")
		}
	}
	for _, marker := range []string{"denied the request: ", "denied request: "} {
		if i := strings.Index(msg, marker); i >= 0 {
			msg = "denied: " + msg[i+len(marker):]
			break
		}
	}
	return strings.ReplaceAll(msg, ns, "NS")
}

// requireSame creates p through the webhook and through the policies: the
// same Pod or the same refusal, unless p is one the policies refuse by
// design (policyOnlyRefusal), which they must then refuse with that
// message. It returns the webhook's outcome and whether p was such a Pod.
func (f *exportFixture) requireSame(t *testing.T, pair exportPair, p *corev1.Pod) (outcome, bool) {
	t.Helper()
	wh := dryRun(t.Context(), pair.webhookNS, p)
	pol := dryRun(t.Context(), pair.policy, p)
	in, _ := json.Marshal(p)
	if want := f.policyOnlyRefusal(pair.profile, p, wh); want != "" {
		if pol.refuse != "denied: "+want {
			t.Fatalf("profile %s: the policies should refuse %s\nwith %q\ngot refusal %q", pair.profile, in, want, pol.refuse)
		}
		return wh, true
	}
	// The label rule is what graft does to a Pod whose author did not
	// write the label; a hand-set one is the author's, kept as it is
	// (TestExportHandSetLabel), and compared below like any field.
	if _, own := p.Labels[names.Injected]; !own {
		checkInjectedLabel(t, f.revision, wh.pod, pol.pod)
	}
	var whPod, polPod any
	if wh.pod != nil {
		whPod = comparable(wh.pod)
	}
	if pol.pod != nil {
		polPod = comparable(pol.pod)
	}
	if d := cmp.Diff(whPod, polPod); d != "" || withoutOwnershipDetail(wh.refuse) != pol.refuse {
		t.Fatalf("profile %s: the policies and the webhook disagree on %s\nwebhook refusal: %q\npolicy refusal:  %q\n(-webhook +policy):\n%s",
			pair.profile, in, wh.refuse, pol.refuse, d)
	}
	return wh, false
}

// ownershipDetail is the webhook's account of why an object named like a
// sidecar is not graft's (": its image differs from template agent's"):
// it compares the object with its render, which the exported policies do
// not do (docs/tasks/export.md, "Known differences"), so their message
// stops at "which graft did not inject". The rest must be the same.
var ownershipDetail = regexp.MustCompile(`(, which graft did not inject): [^;]+(; rename it, or set onConflict: keep in profile )`)

func withoutOwnershipDetail(msg string) string {
	return ownershipDetail.ReplaceAllString(msg, "$1$2")
}

// TestExportGoldenEquivalence: every Pod CREATE of the engine's golden
// corpus, with the profile its golden names.
func TestExportGoldenEquivalence(t *testing.T) {
	f := exported.get(t)
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.in.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	ran := 0
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".in.json")
		var in struct {
			Profile string `json:"profile"`
			Review  struct {
				Request struct {
					Kind        struct{ Kind string }
					Operation   string          `json:"operation"`
					SubResource string          `json:"subResource"`
					Object      json.RawMessage `json:"object"`
				} `json:"request"`
			} `json:"review"`
		}
		readJSON(t, file, &in)
		r := in.Review.Request
		if r.Kind.Kind != "Pod" || r.Operation != "CREATE" || r.SubResource != "" {
			continue // not what an admission policy on Pod CREATE sees
		}
		profile := in.Profile
		if profile == "" {
			profile = f.cfg.DefaultProfile
		}
		t.Run(name, func(t *testing.T) {
			var p corev1.Pod
			if err := json.Unmarshal(r.Object, &p); err != nil {
				t.Fatal(err)
			}
			if _, ok := p.Annotations["kubernetes.io/limit-ranger"]; ok {
				// graft gives its containers the defaults LimitRanger's
				// record names (inject/limitrange.go); the policies leave
				// that to LimitRanger's re-run, which gives the same in a
				// namespace whose LimitRange wrote the record. This one
				// has none: the record is the golden's own.
				t.Skip("LimitRanger's record without a LimitRange: by design, only graft reads the record")
			}
			if why, ok := webhookOnly[name]; ok {
				t.Skip("decided by graft's webhook only: " + why + " (docs/concepts/pod-security.md)")
			}
			p.Name = "golden-" + name
			if refusal, ok := refusedInACluster[name]; ok {
				// The webhook refuses its own sidecar after the
				// ServiceAccount plugin's re-run mounted the Pod's
				// emptyDir kube-api-access-x into it (golden_test.go);
				// the policies, which do not compare the sidecar with
				// its render, inject the Pod.
				pair := f.pairs[profile]
				wh, pol := dryRun(t.Context(), pair.webhookNS, &p), dryRun(t.Context(), pair.policy, &p)
				if !strings.Contains(wh.refuse, refusal) || pol.refuse != "" || pol.pod == nil || pol.pod.Annotations[names.Status] == "" {
					t.Fatalf("webhook refusal %q, want %q; policy refusal %q, want it injected", wh.refuse, refusal, pol.refuse)
				}
				return
			}
			out, policyOnly := f.requireSame(t, f.pairs[profile], &p)
			t.Logf("profile %s: refused=%t, refused by the policies only=%t", profile, out.refuse != "", policyOnly)
		})
		ran++
	}
	t.Logf("%d golden inputs compared", ran)
}

// webhookOnly are the golden cases whose decision the exported policies
// do not make (docs/concepts/pod-security.md, "What graft export does not do").
var webhookOnly = map[string]string{
	"collide-port-name":      "a port name an app container shares with a sidecar",
	"collide-port-number":    "a port an app container shares with a sidecar",
	"collide-uid-container":  "a uid a template reserves",
	"collide-uid-pod":        "a uid a template reserves",
	"os-windows":             "a Pod for another operating system",
	"os-node-selector":       "a Pod for another operating system",
	"pod-resources-both":     "pod-level resources",
	"pod-resources-limits":   "pod-level resources",
	"pod-resources-requests": "pod-level resources",
}

// TestExportPropertyEquivalence: generated Pods across every profile,
// with collisions, awkward lists and maps, and valid and invalid graft
// annotations.
func TestExportPropertyEquivalence(t *testing.T) {
	f := exported.get(t)
	profiles := slices.Sorted(maps.Keys(f.pairs))
	gens := map[string]*podGen{}
	for _, prof := range profiles {
		g, err := newPodGen(f.cfg, f.set, prof)
		if err != nil {
			t.Fatal(err)
		}
		gens[prof] = g
	}
	const pods = 320
	r := rand.New(rand.NewPCG(14, 2026))
	injected, refused, policyOnly := 0, 0, 0
	for i := range pods {
		prof := profiles[i%len(profiles)]
		p := gens[prof].pod(r, fmt.Sprintf("gen-%d", i))
		out, only := f.requireSame(t, f.pairs[prof], p)
		switch {
		case only:
			policyOnly++
		case out.refuse != "":
			refused++
		case out.pod.Annotations[names.Status] != "":
			injected++
		}
	}
	t.Logf("%d generated Pods over %d profiles: %d injected alike, %d refused by both, %d refused by the policies only (parameters CEL cannot record), the rest skipped by both",
		pods, len(profiles), injected, refused, policyOnly)
	// Under onConflict: deny (the default) the generator's name
	// collisions make many Pods refused by both.
	if injected < pods/5 || refused < pods/20 || policyOnly < pods/40 {
		t.Errorf("the generator is off: %d injected, %d refused, %d refused by the policies only, of %d", injected, refused, policyOnly, pods)
	}
}

// TestExportRefusesInvalidParameters: each kind of invalid annotation is
// refused by the exported ValidatingAdmissionPolicy with the message the
// webhook gives.
func TestExportRefusesInvalidParameters(t *testing.T) {
	f := exported.get(t)
	cases := []struct{ profile, key, value, want string }{
		{"agent", "graft.dev/agent.port", "80", `annotation graft.dev/agent.port="80": must be at least 1024`},
		{"agent", "graft.dev/agent.port", "http", `annotation graft.dev/agent.port="http": must be an integer`},
		{"agent", "graft.dev/agent.cpu", "3", `annotation graft.dev/agent.cpu="3": must be at most 2`},
		{"agent", "graft.dev/agent.memory", "lots", `annotation graft.dev/agent.memory="lots": must be a Kubernetes quantity such as 100m or 64Mi`},
		{"agent", "graft.dev/agent.logLevel", "loud", `annotation graft.dev/agent.logLevel="loud": must be one of debug, info, warn, error`},
		{"agent", "graft.dev/agent.flushInterval", "1d", `annotation graft.dev/agent.flushInterval="1d": must be a duration such as 30s or 5m`},
		{"agent", "graft.dev/agent.flushInterval", "500ms", `annotation graft.dev/agent.flushInterval="500ms": must be at least 1s`},
		{"agent", "graft.dev/agent.debug", "yes", `annotation graft.dev/agent.debug="yes": must be "true" or "false"`},
		{"agent", "graft.dev/agent.image", "Bad\x01Image", `annotation graft.dev/agent.image="Bad\x01Image": must be a container image reference: it has upper-case letters (only the registry host may)`},
		{"agent", "graft.dev/agent.image", "ghcr.io/graftdev/../agent:1", `annotation graft.dev/agent.image="ghcr.io/graftdev/../agent:1": must be a container image reference: it contains ".."`},
		{"agent", "graft.dev/agent.image", "ghcr.io//agent:1", `annotation graft.dev/agent.image="ghcr.io//agent:1": must be a container image reference: it has an empty path segment`},
		{"agent", "graft.dev/agent.colour", "blue", `annotation graft.dev/agent.colour: template agent has no parameter "colour"`},
		{"agent", "graft.dev/templates", "agent, mesh-proxy", `annotation graft.dev/templates="agent, mesh-proxy": template "mesh-proxy" is not allowed here (allowed: agent)`},
		{"mesh-proxy", "graft.dev/mesh-proxy.excludeInboundPorts", "80,,443", `annotation graft.dev/mesh-proxy.excludeInboundPorts="80,,443": must be a comma-separated list without empty items`},
		{"mesh-proxy", "graft.dev/mesh-proxy.excludeInboundPorts", "80, 99999", `annotation graft.dev/mesh-proxy.excludeInboundPorts="80, 99999": item "99999" must match ^([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$`},
		{"secrets-agent", "graft.dev/secrets-agent.secretPaths", "", `annotation graft.dev/secrets-agent.secretPaths="": must have at least 1 items`},
		{"secrets-agent", "graft.dev/secrets-agent.refreshInterval", "48h", `annotation graft.dev/secrets-agent.refreshInterval="48h": must be at most 24h`},
	}
	for _, tc := range cases {
		t.Run(tc.profile+"/"+tc.value, func(t *testing.T) {
			p := simplePod("bad-param")
			p.Annotations = map[string]string{tc.key: tc.value}
			out, _ := f.requireSame(t, f.pairs[tc.profile], p)
			if want := "denied: " + tc.want; out.refuse != want {
				t.Fatalf("refusal %q, want %q", out.refuse, want)
			}
			// The validating policy passes Pods labelled graft.dev/injected
			// by selector; the mutating one takes a hand-set label off the
			// Pods it must refuse.
			p.Labels = map[string]string{names.Injected: f.revision}
			if out, _ := f.requireSame(t, f.pairs[tc.profile], p); out.refuse != "denied: "+tc.want {
				t.Fatalf("with the label set by hand: refusal %q, want %q", out.refuse, "denied: "+tc.want)
			}
		})
	}
}

// TestExportedBindingSelectsNamespaces applies a profile's policies as
// exported, selectors included: only its labelled namespace is injected,
// and the Pods graft skips are skipped.
func TestExportedBindingSelectsNamespaces(t *testing.T) {
	f := exported.get(t)
	// A profile no shipped webhook serves (deploy/base ships none for the
	// agent fixture), so only the policies act; not the suite's default
	// profile, whose bindings would also select every namespace labelled
	// graft.dev/inject=enabled, other tests' included.
	const profile = "keep"
	pols, err := export.Export(f.cfg, f.set, profile)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []*metav1.ObjectMeta{&pols.Mutating.ObjectMeta, &pols.MutatingBinding.ObjectMeta} {
		o.Name += "-selectors"
	}
	pols.MutatingBinding.Spec.PolicyName = pols.Mutating.Name
	for i := range pols.Validating {
		pols.Validating[i].Name += "-selectors"
		pols.Bindings[i].Name += "-selectors"
		pols.Bindings[i].Spec.PolicyName = pols.Validating[i].Name
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := env.cluster.DeletePolicies(ctx, pols); err != nil {
			t.Errorf("delete the exported policies: %v", err)
		}
	})
	if err := env.cluster.CreatePolicies(t.Context(), pols); err != nil {
		t.Fatal(err)
	}
	labelled := newNamespace(t, "e2e-exp-selected", map[string]string{names.Inject: profile})
	other := newNamespace(t, "e2e-exp-unselected", map[string]string{names.Inject: "e2e-none"})
	if err := env.waitInjecting(t.Context(), labelled); err != nil {
		t.Fatal(err)
	}
	create := func(ns string, p *corev1.Pod) *corev1.Pod {
		got, err := env.client.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatalf("create in %s: %v", ns, err)
		}
		return got
	}
	requireAgentInjected(t, create(labelled, simplePod("selected", "a", "b")))
	requireUntouched(t, create(other, simplePod("unselected")))
	optedOut := simplePod("opted-out")
	optedOut.Labels = map[string]string{names.Inject: "false"}
	requireUntouched(t, create(labelled, optedOut))
	hostNet := simplePod("host-network")
	hostNet.Spec.HostNetwork = true
	requireUntouched(t, create(labelled, hostNet))
	mirror := simplePod("mirror")
	mirror.Annotations = map[string]string{"kubernetes.io/config.mirror": "x"}
	mirror.Spec.NodeName = "node-1" // as a mirror Pod must
	requireUntouched(t, create(labelled, mirror))
	// Idempotent: the injected Pod through the policies again is unchanged.
	first := create(labelled, simplePod("again"))
	resubmit := first.DeepCopy()
	resubmit.ResourceVersion, resubmit.UID, resubmit.CreationTimestamp = "", "", metav1.Time{}
	if d := cmp.Diff(comparable(first), comparable(create(labelled, resubmit))); d != "" {
		t.Fatalf("a second pass changed the Pod (-first +second):\n%s", d)
	}
}

// TestExportReinvocationWithForeignMutator: with the foreign mutator of
// TestReinvocationWithForeignMutator after it, the exported policy (run
// again, reinvocationPolicy: IfNeeded) leaves the Pod as graft does: the
// foreign container gets graft's app-container edits, nothing twice.
func TestExportReinvocationWithForeignMutator(t *testing.T) {
	f := exported.get(t)
	const profile = "agent"
	pair := exportPair{profile: profile,
		webhookNS: newNamespace(t, "e2e-exp-wh-foreign", nil),
		policy:    newNamespace(t, "e2e-exp-pol-foreign", map[string]string{exportLabel: profile})}
	registerWebhooks(t, "graft-e2e-export-foreign", scopedGraftWebhook("foreign.export.e2e.graft.dev", pair.webhookNS, "/inject/"+profile))
	for _, ns := range []string{pair.webhookNS, pair.policy} {
		registerForeign(t, ns, &foreignMutator{}, regv1.IfNeededReinvocationPolicy)
		waitFor(t, "graft and the foreign webhook in "+ns, func(ctx context.Context) error {
			p, err := env.client.CoreV1().Pods(ns).Create(ctx, simplePod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				return err
			}
			if countContainers(p, foreignContainer) == 0 || !isInjected(p) {
				return fmt.Errorf("containers %s, injected %t", containerNames(p), isInjected(p))
			}
			return nil
		})
	}
	p := simplePod("reinvoked", "app", "worker")
	p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "registry.invalid/setup:1"}}
	if _, policyOnly := f.requireSame(t, pair, p); policyOnly {
		t.Fatal("refused by the policies only")
	}
	got, err := env.client.CoreV1().Pods(pair.policy).Create(t.Context(), p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	requireAgentInjected(t, got) // every app container, the foreign one too
}

// TestExportHandSetLabel: the exported validating policy's match
// condition passes over a Pod labelled graft.dev/injected whose record's
// containers are all there, without evaluating its checks. A Pod
// author's own label must not take a Pod past it: the mutating
// policy takes the label off every Pod it leaves for the validating
// policy to refuse, and the Pod is refused as without the label (as the
// webhook refuses it, or by the policies' design).
func TestExportHandSetLabel(t *testing.T) {
	f := exported.get(t)
	conflict := simplePod("hand-label-conflict", "app", "graft-agent")
	stale := simplePod("hand-label-stale")
	stale.Annotations = map[string]string{names.Status: `{"version":1,"injected":["graft-agent"]}`}
	unhashable := simplePod("hand-label-port")
	unhashable.Annotations = map[string]string{"graft.dev/agent.port": "9100"}
	lenient := simplePod("hand-label-lenient")
	lenient.Annotations = map[string]string{"graft.dev/agent.port": "80"}
	cases := []struct {
		profile string
		pod     *corev1.Pod
	}{{"agent", conflict}, {"agent", stale}, {"agent", unhashable}, {"lenient", lenient}, {"keep", conflict}}
	for _, tc := range cases {
		t.Run(tc.profile+"/"+tc.pod.Name, func(t *testing.T) {
			bare, _ := f.requireSame(t, f.pairs[tc.profile], tc.pod)
			p := tc.pod.DeepCopy()
			p.Labels = map[string]string{names.Injected: f.revision}
			labelled, _ := f.requireSame(t, f.pairs[tc.profile], p)
			if (bare.refuse == "") != (labelled.refuse == "") {
				t.Fatalf("refused without the label: %q; with it: %q", bare.refuse, labelled.refuse)
			}
		})
	}
}

// stripInit removes the init container called name, as a webhook ordered
// after graft that does not want it would.
func stripInit(name string) func(*corev1.Pod) []patchOp {
	return func(p *corev1.Pod) []patchOp {
		var ops []patchOp
		for i := len(p.Spec.InitContainers) - 1; i >= 0; i-- {
			if p.Spec.InitContainers[i].Name == name {
				ops = append(ops, patchOp{Op: "remove", Path: fmt.Sprintf("/spec/initContainers/%d", i)})
			}
		}
		return ops
	}
}

// TestExportGuaranteeAfterAStrippingWebhook: a webhook after the exported
// mutating policy removes its sidecar. Never reinvoked, it loses: the
// policy, run again, puts the sidecar back. Reinvoked (IfNeeded), it
// strips again after that, and the validating policy refuses the Pod,
// though the Pod carries graft.dev/injected and its record.
func TestExportGuaranteeAfterAStrippingWebhook(t *testing.T) {
	exported.get(t)
	for _, c := range []struct {
		name   string
		policy regv1.ReinvocationPolicyType
	}{{"never", regv1.NeverReinvocationPolicy}, {"ifneeded", regv1.IfNeededReinvocationPolicy}} {
		t.Run(c.name, func(t *testing.T) {
			ns := newNamespace(t, "e2e-exp-strip-"+c.name, map[string]string{exportLabel: "agent"})
			strip := &foreignMutator{patch: stripInit(agentContainer)}
			registerForeign(t, ns, strip, c.policy)
			waitFor(t, "the stripping webhook to take effect", func(ctx context.Context) error {
				if strip.calls.Load() > 0 {
					return nil
				}
				_, _ = env.client.CoreV1().Pods(ns).Create(ctx, simplePod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				return errors.New("not called yet")
			})
			p, err := env.client.CoreV1().Pods(ns).Create(t.Context(), simplePod("stripped", "app"), metav1.CreateOptions{})
			if c.policy == regv1.NeverReinvocationPolicy {
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				requireAgentInjected(t, p)
				return
			}
			const want = "this Pod lacks containers graft injected"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("create after a stripping webhook: got %v (Pod %v), want a refusal saying %q", err, p, want)
			}
		})
	}
}
