package e2e

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	regv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
)

// canaryImage is the agent image of the revision "next"; the top-level
// revision "default" injects the template's own.
const canaryImage = "registry.invalid/agent:2.0.0"

// Binomial bound for the canary's share. Each owner's uid hashes to one
// of 100 buckets and the tag sends 10 of them to "next", so with uids
// the hash cannot predict each owner is on the canary with p = 0.1,
// independently: the count X over n = 100 owners is Binomial(100, 0.1),
// mean 10, standard deviation 3. Exactly:
//
//	P(X = 0)  = 0.9^100             = 2.66e-5
//	P(X >= 25) = sum_{k>=25} C(100,k) 0.1^k 0.9^(100-k) = 1.31e-5
//
// so accepting 1 <= X <= 24 fails a correct implementation with
// probability 3.97e-5 < 1e-4 (and 0.9^100 alone rules out n below 88 for
// a non-zero lower bound). binomialTails recomputes both tails, so the
// bound and this derivation cannot drift apart.
const (
	canaryOwners    = 100
	canaryShare     = 0.1
	canaryMin       = 1
	canaryMax       = 24
	podsPerOwner    = 2
	maxFailureOdds  = 1e-4
	canaryNamespace = "rev-canary"
)

// binomialTails returns P(X < lo) + P(X > hi) for X ~ Binomial(n, p).
func binomialTails(n int, p float64, lo, hi int) float64 {
	sum := 0.0
	for k := 0; k <= n; k++ {
		if k >= lo && k <= hi {
			continue
		}
		lg, _ := math.Lgamma(float64(n + 1))
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(n - k + 1))
		sum += math.Exp(lg - lk - lnk + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
	}
	return sum
}

// TestCanaryTag: a namespace on the tag canary, splitting 10% to revision
// next, gets every ReplicaSet's Pods from one revision and about a tenth
// of the ReplicaSets on next; moving the tag (rewriting graft's config,
// which graft reloads) sends the next creates to next, with no create
// failing while it happens.
func TestCanaryTag(t *testing.T) {
	if odds := binomialTails(canaryOwners, canaryShare, canaryMin, canaryMax); odds >= maxFailureOdds {
		t.Fatalf("the bound [%d, %d] fails a correct split with probability %.3g", canaryMin, canaryMax, odds)
	}
	path := env.cluster.GraftConfigPath()
	original, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	base, err := config.Parse(path, original)
	if err != nil {
		t.Fatal(err)
	}
	withCanary := func(canary config.Tag) []byte {
		f := base
		f.Revisions = map[string]config.Revision{"next": {Profiles: map[string]inject.Profile{
			"agent": {Templates: []string{"agent"}, Params: map[string]map[string]string{"agent": {"image": canaryImage}}},
		}}}
		f.Tags = map[string]config.Tag{"stable": {Revision: "default"}, "canary": canary}
		out, err := yaml.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	split := config.Tag{Split: []config.Share{{Revision: "next", Percent: 10}, {Revision: "default", Percent: 90}}}
	reloadGraft(t, withCanary(split))
	// Runs after the registration below is gone: the suite's own
	// configuration serves on, as every other test expects.
	t.Cleanup(func() { reloadGraft(t, original) })

	// The registration graft webhooks writes for this configuration: of
	// it, the agent profile's webhook for namespaces on canary (the
	// shipped one serves the others).
	hooks := generatedWebhooks(t, path, "agent.canary.rev.inject.graft.dev")
	registerWebhooks(t, "graft-e2e-canary", hooks...)
	ns := newNamespace(t, canaryNamespace, map[string]string{names.Inject: "agent", "graft.dev/rev": "canary"})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := env.cluster.WaitInjecting(ctx, ns); err != nil {
		t.Fatalf("the canary webhook never took effect: %v", err)
	}

	owners := make([]metav1.OwnerReference, canaryOwners)
	for i := range owners {
		owners[i] = createReplicaSet(t, ns, fmt.Sprintf("web-%d", i))
	}
	onNext := 0
	for i, owner := range owners {
		var first string
		for j := range podsPerOwner {
			rev, err := createOwnedPod(t.Context(), ns, owner)
			if err != nil {
				t.Fatal(err)
			}
			if j == 0 {
				first = rev
			} else if rev != first {
				t.Fatalf("ReplicaSet %d (%s): Pod %d on %s, Pod 0 on %s", i, owner.UID, j, rev, first)
			}
		}
		if first == "next" {
			onNext++
		}
	}
	t.Logf("%d of %d ReplicaSets on the canary revision (accepting %d to %d)", onNext, canaryOwners, canaryMin, canaryMax)
	if onNext < canaryMin || onNext > canaryMax {
		t.Errorf("%d of %d ReplicaSets on next, outside [%d, %d]", onNext, canaryOwners, canaryMin, canaryMax)
	}

	// Move the tag while Pods are being created.
	creates := startCreating(t, ns, owners)
	time.Sleep(300 * time.Millisecond)
	reloadGraft(t, withCanary(config.Tag{Revision: "next"}))
	moved := time.Now()
	creates.waitAfter(moved, 30)
	results := creates.stop()
	var before, beforeDefault, after, failed int
	for _, r := range results {
		switch {
		case r.err != nil:
			failed++
			t.Errorf("create at %s failed: %v", r.start.Format(time.StampMilli), r.err)
		case r.start.After(moved):
			after++
			if r.revision != "next" {
				t.Errorf("a create started %s after the move got revision %s", r.start.Sub(moved), r.revision)
			}
		default:
			before++
			if r.revision == "default" {
				beforeDefault++
			}
		}
	}
	t.Logf("%d creates while the tag moved, %d failed: %d started before graft had reloaded (%d on default), %d after (all on next)",
		len(results), failed, before, beforeDefault, after)
	if beforeDefault == 0 || after == 0 {
		t.Errorf("the creates do not show the move: %d on default before it, %d after it", beforeDefault, after)
	}
}

// reloadGraft rewrites graft's config file and waits until graft has
// reloaded it, failing if graft rejects it. It runs in cleanups too, so
// it is bounded by a context of its own rather than t's.
func reloadGraft(t *testing.T, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	okBefore, errBefore := graftReloads(ctx, t)
	path := env.cluster.GraftConfigPath()
	tmp := filepath.Join(filepath.Dir(path), ".reload.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	for {
		ok, bad := graftReloads(ctx, t)
		switch {
		case bad > errBefore:
			t.Fatalf("graft rejected the configuration:\n%s\n%s", data, env.cluster.GraftLog(4<<10))
		case ok > okBefore:
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("graft did not reload its configuration: %v", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// graftReloads reads graft_config_reloads_total by result.
func graftReloads(ctx context.Context, t *testing.T) (success, failure float64) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}
	mf := scrapeCtx(ctx, t, c, "http://"+env.cluster.GraftAdminAddr()+"/metrics", "")["graft_config_reloads_total"]
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "result" && l.GetValue() == "success" {
				success = m.GetCounter().GetValue()
			} else if l.GetName() == "result" {
				failure = m.GetCounter().GetValue()
			}
		}
	}
	return success, failure
}

// generatedWebhooks runs `graft webhooks --config path` and returns the
// named webhooks of its output, pointed at graft on loopback.
func generatedWebhooks(t *testing.T, path string, names ...string) []regv1.MutatingWebhook {
	t.Helper()
	out, err := exec.Command(graftBin(t), "webhooks", "--config", path).Output()
	if err != nil {
		t.Fatalf("graft webhooks: %v", err)
	}
	var mwc regv1.MutatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(out, &mwc); err != nil {
		t.Fatalf("graft webhooks wrote no MutatingWebhookConfiguration: %v", err)
	}
	loop := (&cluster.Shipped{Webhook: &mwc}).LoopbackWebhook(env.cluster.GraftAddr(), env.cluster.GraftCA())
	var hooks []regv1.MutatingWebhook
	for _, w := range loop.Webhooks {
		if slices.Contains(names, w.Name) {
			hooks = append(hooks, w)
		}
	}
	if len(hooks) != len(names) {
		t.Fatalf("graft webhooks wrote %d of the webhooks %v", len(hooks), names)
	}
	return hooks
}

// createReplicaSet creates a ReplicaSet of no replicas (no controller runs
// here) and returns a controller reference to it, with the uid the API
// server gave it.
func createReplicaSet(t *testing.T, ns, name string) metav1.OwnerReference {
	t.Helper()
	zero := int32(0)
	labels := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       simplePod("").Spec,
			},
		},
	}
	got, err := env.client.AppsV1().ReplicaSets(ns).Create(t.Context(), rs, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ReplicaSet %s: %v", name, err)
	}
	return *metav1.NewControllerRef(got, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
}

// createOwnedPod creates a Pod of owner, as its controller would, and
// says which revision injected it.
func createOwnedPod(ctx context.Context, ns string, owner metav1.OwnerReference) (string, error) {
	p := simplePod("")
	p.GenerateName = owner.Name + "-"
	p.OwnerReferences = []metav1.OwnerReference{owner}
	got, err := env.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	for _, c := range allContainers(got) {
		if c.Name != agentContainer {
			continue
		}
		if c.Image == canaryImage {
			return "next", nil
		}
		return "default", nil
	}
	return "", fmt.Errorf("Pod %s was not injected: %s", got.Name, containerNames(got))
}

// creator creates Pods in the background, cycling through owners.
type creator struct {
	mu      sync.Mutex
	results []canaryCreate
	cancel  context.CancelFunc
	done    chan struct{}
}

type canaryCreate struct {
	start    time.Time
	revision string
	err      error
}

func startCreating(t *testing.T, ns string, owners []metav1.OwnerReference) *creator {
	ctx, cancel := context.WithCancel(context.Background())
	c := &creator{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for i := 0; ctx.Err() == nil; i++ {
			start := time.Now()
			rev, err := createOwnedPod(ctx, ns, owners[i%len(owners)])
			if ctx.Err() != nil {
				return // stopped mid-create: not a failure of graft's
			}
			c.mu.Lock()
			c.results = append(c.results, canaryCreate{start: start, revision: rev, err: err})
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() { c.stop() })
	return c
}

// waitAfter waits until n creates have started after t0.
func (c *creator) waitAfter(t0 time.Time, n int) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		c.mu.Lock()
		count := 0
		for _, r := range c.results {
			if r.start.After(t0) {
				count++
			}
		}
		c.mu.Unlock()
		if count >= n {
			return
		}
	}
}

// stop ends the creates and returns their results.
func (c *creator) stop() []canaryCreate {
	c.cancel()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.results
}
