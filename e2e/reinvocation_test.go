package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	regv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scenario 6: graft and a foreign mutator registered after it, both
// reinvocationPolicy: IfNeeded. The stored Pod has exactly one of each
// thing graft injects, keeps every foreign edit, and the foreign container
// got graft's app-container edits (so graft was reinvoked).
func TestReinvocationWithForeignMutator(t *testing.T) {
	ns := optedIn(t, "e2e-reinvocation")
	foreign := &foreignMutator{}
	registerForeign(t, ns, foreign, regv1.IfNeededReinvocationPolicy)
	waitFor(t, "the foreign webhook to take effect", func(ctx context.Context) error {
		p, err := env.client.CoreV1().Pods(ns).Create(ctx, simplePod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if countContainers(p, foreignContainer) == 0 {
			return fmt.Errorf("no %s container yet", foreignContainer)
		}
		return nil
	})

	before := graftRequests(t)
	p := simplePod("reinvoked", "app", "worker")
	p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "registry.invalid/setup:1"}}
	createPod(t, ns, p)
	got := getPod(t, ns, "reinvoked")
	calls := graftRequests(t) - before

	// graft's injection, once, in every app container including the
	// foreign one.
	requireAgentInjected(t, got)
	if calls < 2 {
		t.Errorf("graft answered %g reviews for one create; want at least 2 (a reinvocation)", calls)
	}
	var problems []string
	if n := countContainers(got, foreignContainer); n != 1 {
		problems = append(problems, fmt.Sprintf("%d %s containers, want 1", n, foreignContainer))
	}
	if got.Annotations[foreignAnnotation] != "seen" {
		problems = append(problems, "foreign annotation lost")
	}
	// The foreign edits, once, on every container, graft's included.
	for _, c := range allContainers(got) {
		if n := countEnv(c, foreignEnv); n != 1 {
			problems = append(problems, fmt.Sprintf("container %s has %d %s env vars, want 1", c.Name, n, foreignEnv))
		}
		if c.ImagePullPolicy != corev1.PullAlways {
			problems = append(problems, fmt.Sprintf("container %s has imagePullPolicy %q, want Always", c.Name, c.ImagePullPolicy))
		}
	}
	if len(problems) > 0 {
		t.Fatalf("stored Pod %s:\n  %s", containerNames(got), strings.Join(problems, "\n  "))
	}
	t.Logf("graft called %g times, foreign mutator %d times (including the probe) for containers %s",
		calls, foreign.calls.Load(), containerNames(got))
}

// waitFor polls check every 200ms for up to a minute.
func waitFor(t *testing.T, what string, check func(context.Context) error) {
	t.Helper()
	waitWithin(t, what, time.Minute, check)
}

// waitWithin is waitFor with a limit of d.
func waitWithin(t *testing.T, what string, d time.Duration, check func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	var last error
	for {
		if last = check(ctx); last == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last: %v)", what, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
