package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	regv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// stripRestartPolicy is what a webhook built on a k8s.io/api older than
// native sidecars does to a Pod it decodes and writes back whole: every
// init container loses restartPolicy.
func stripRestartPolicy(p *corev1.Pod) []patchOp {
	var ops []patchOp
	for i, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil {
			ops = append(ops, patchOp{Op: "remove", Path: fmt.Sprintf("/spec/initContainers/%d/restartPolicy", i)})
		}
	}
	return ops
}

// Issue 12, "own what you injected": a webhook ordered after graft strips
// restartPolicy from every init container. graft is reinvoked and puts it
// back on its own sidecar only: every create succeeds, graft's sidecar
// stays native, and the user's sidecar stays as that webhook left it.
//
// The stripping webhook has the default reinvocationPolicy, Never, as
// such webhooks do. One that is IfNeeded too would be called again after
// graft's repair and strip again, and the API server calls no webhook a
// third time: the last writer wins, whoever it is.
func TestSidecarsStayNativeAfterAStrippingWebhook(t *testing.T) {
	ns := optedIn(t, "e2e-strip-restart")
	strip := &foreignMutator{patch: stripRestartPolicy}
	registerForeign(t, ns, strip, regv1.NeverReinvocationPolicy)
	always := corev1.ContainerRestartPolicyAlways
	withUserSidecar := func(name string) *corev1.Pod {
		p := simplePod(name, "app", "worker")
		p.Spec.InitContainers = []corev1.Container{{Name: "user-sidecar", Image: "registry.invalid/sidecar:1", RestartPolicy: &always}}
		return p
	}
	waitFor(t, "the stripping webhook to take effect", func(ctx context.Context) error {
		p, err := env.client.CoreV1().Pods(ns).Create(ctx, withUserSidecar("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if i := slices.IndexFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == "user-sidecar" }); i < 0 || p.Spec.InitContainers[i].RestartPolicy != nil {
			return errors.New("the user's sidecar still has restartPolicy")
		}
		return nil
	})

	const pods = 10
	before := graftRequests(t)
	for i := range pods {
		p := withUserSidecar(fmt.Sprintf("stripped-%d", i))
		if i%2 == 1 {
			p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "registry.invalid/setup:1"}}
		}
		createPod(t, ns, p)
		got := getPod(t, ns, p.Name)
		requireAgentInjected(t, got)
		if got.Spec.InitContainers[0].Name != agentContainer {
			t.Fatalf("%s: graft's sidecar is not first: %s", p.Name, containerNames(got))
		}
		for _, c := range got.Spec.InitContainers[1:] {
			if c.RestartPolicy != nil {
				t.Fatalf("%s: graft restored restartPolicy on %s, which is not its own", p.Name, c.Name)
			}
		}
	}
	if calls := graftRequests(t) - before; calls < 2*pods {
		t.Errorf("graft answered %g reviews for %d creates; want at least two each (the repair is a reinvocation)", calls, pods)
	}
	t.Logf("%d creates, graft called %g times, the stripping webhook %d times", pods, graftRequests(t)-before, strip.calls.Load())
}
