package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	regv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/e2e/internal/histo"
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
// a non-zero lower bound). histo.BinomialTails recomputes both tails, so the
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

// TestCanaryTag: a namespace on the tag canary, splitting 10% to revision
// next, gets every ReplicaSet's Pods from one revision and about a tenth
// of the ReplicaSets on next, over a hundred Deployments rolled out by the
// controllers; moving the tag (rewriting graft's config, which graft
// reloads) while the controllers roll a fifth of them again sends the
// creates after it to next, with no create failing while it happens.
func TestCanaryTag(t *testing.T) {
	needsWorkloads(t)
	if odds := histo.BinomialTails(canaryOwners, canaryShare, canaryMin, canaryMax); odds >= maxFailureOdds {
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

	// A hundred Deployments rolled out by the controllers: graft sees each
	// Pod with its ReplicaSet as owner, and hashes the owner's uid.
	for i := range canaryOwners {
		createDeployments(t, ns, newDeployment(fmt.Sprintf("web-%d", i), podsPerOwner))
	}
	waitRolledOut(t, ns)
	bySet := revisionsByReplicaSet(t, ns)
	if len(bySet) != canaryOwners {
		t.Fatalf("%d ReplicaSets with Pods, want %d", len(bySet), canaryOwners)
	}
	onNext := 0
	for uid, pods := range bySet {
		if len(pods) != podsPerOwner {
			t.Errorf("ReplicaSet %s: %d Pods, want %d", uid, len(pods), podsPerOwner)
		}
		for _, p := range pods[1:] {
			if p.revision != pods[0].revision {
				t.Fatalf("ReplicaSet %s: Pod %s on %s, Pod %s on %s", uid, p.name, p.revision, pods[0].name, pods[0].revision)
			}
		}
		if pods[0].revision == "next" {
			onNext++
		}
	}
	t.Logf("%d of %d ReplicaSets on the canary revision (accepting %d to %d)", onNext, canaryOwners, canaryMin, canaryMax)
	if onNext < canaryMin || onNext > canaryMax {
		t.Errorf("%d of %d ReplicaSets on next, outside [%d, %d]", onNext, canaryOwners, canaryMin, canaryMax)
	}

	// Move the tag while the controllers roll a fifth of the Deployments
	// anew.
	var restarted []string
	for i := range canaryOwners / 5 {
		restarted = append(restarted, fmt.Sprintf("web-%d", i))
	}
	restartDeployments(t, ns, restarted...)
	waitFor(t, "the restart's first Pods", func(ctx context.Context) error {
		if n := len(restartedPods(t, ns)); n < 10 {
			return fmt.Errorf("%d Pods of the restart so far", n)
		}
		return nil
	})
	reloadGraft(t, withCanary(config.Tag{Revision: "next"}))
	moved := time.Now()
	waitRolledOut(t, ns)
	if failed := failedCreates(t, ns); len(failed) > 0 {
		t.Errorf("%d Pod creates failed while the tag moved:\n%s", len(failed), strings.Join(failed, "\n"))
	}
	// creationTimestamp is set after admission and counts whole
	// seconds: a Pod stamped a second or more after the move was
	// admitted after it, one stamped a second or more before, before.
	var before, beforeDefault, after int
	for _, p := range restartedPods(t, ns) {
		switch {
		case !p.created.Before(moved.Add(time.Second)):
			after++
			if p.revision != "next" {
				t.Errorf("Pod %s, created %s after the move, got revision %s", p.name, p.created.Sub(moved), p.revision)
			}
		case !p.created.Add(time.Second).After(moved):
			before++
			if p.revision == "default" {
				beforeDefault++
			}
		}
	}
	t.Logf("the restart while the tag moved: %d Pods created before graft had reloaded (%d on default), %d after (all on next)",
		before, beforeDefault, after)
	if beforeDefault == 0 || after == 0 {
		t.Errorf("the creates do not show the move: %d on default before it, %d after it", beforeDefault, after)
	}
}

// canaryPod is what TestCanaryTag reads of a Pod: which revision
// injected it, by the agent's image.
type canaryPod struct {
	name, revision string
	created        time.Time
}

// revisionsByReplicaSet reads every running Pod of ns by its ReplicaSet.
func revisionsByReplicaSet(t *testing.T, ns string) map[types.UID][]canaryPod {
	t.Helper()
	out := map[types.UID][]canaryPod{}
	for uid, pods := range podsByController(t, ns) {
		for i := range pods {
			out[uid] = append(out[uid], readCanaryPod(t, &pods[i]))
		}
	}
	return out
}

// restartedPods are the Pods of ns that `kubectl rollout restart` made.
func restartedPods(t *testing.T, ns string) []canaryPod {
	t.Helper()
	var out []canaryPod
	for _, pods := range podsByController(t, ns) {
		for i := range pods {
			if _, ok := pods[i].Annotations["kubectl.kubernetes.io/restartedAt"]; ok {
				out = append(out, readCanaryPod(t, &pods[i]))
			}
		}
	}
	return out
}

func readCanaryPod(t *testing.T, p *corev1.Pod) canaryPod {
	t.Helper()
	for _, c := range allContainers(p) {
		if c.Name != agentContainer {
			continue
		}
		rev := "default"
		if c.Image == canaryImage {
			rev = "next"
		}
		return canaryPod{name: p.Name, revision: rev, created: p.CreationTimestamp.Time}
	}
	t.Fatalf("Pod %s was not injected: %s", p.Name, containerNames(p))
	return canaryPod{}
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
