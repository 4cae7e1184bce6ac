package e2e

import (
	"fmt"
	"testing"
	"time"

	regv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scenario 10: with failurePolicy: Fail, a huge Pod (5,000 env vars) is
// injected whole, within graft's own budget (200 ms by default: past it
// graft lets the Pod through uninjected, which fails the test). The
// webhook's timeoutSeconds is the API server's maximum, 30 s: it only
// bounds a hang, since how long the API server takes around the call is
// this machine's load, not graft's. The time the create took is reported.
func TestHugePodInjected(t *testing.T) {
	ns := newNamespace(t, "e2e-budget", nil)
	hook := scopedGraftWebhook("budget.e2e.graft.dev", ns, "/inject")
	// Fail, so that running out of time refuses the Pod instead of
	// passing it through unnoticed.
	limit, fail := int32(30), regv1.Fail
	hook.TimeoutSeconds, hook.FailurePolicy = &limit, &fail
	registerWebhooks(t, "graft-e2e-budget", hook)
	if err := env.waitInjecting(t.Context(), ns); err != nil {
		t.Fatal(err)
	}

	const envVars = 5000
	p := simplePod("huge")
	for i := range envVars {
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env,
			corev1.EnvVar{Name: fmt.Sprintf("VAR_%04d", i), Value: fmt.Sprintf("value-%04d-of-a-huge-pod", i)})
	}
	start := time.Now()
	if _, err := env.client.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create huge Pod: %v", err)
	}
	took := time.Since(start)
	got := getPod(t, ns, "huge")
	// graft must inject it, not give up on its budget and let it through
	// (decision fail-open, reason budget-exceeded in its log).
	requireAgentInjected(t, got)
	if n := len(got.Spec.Containers[0].Env); n != envVars+1 {
		t.Fatalf("app container has %d env vars, want %d (all of its own plus graft's)", n, envVars+1)
	}
	t.Logf("huge Pod (%d env vars) created and injected in %s end to end", envVars, took.Round(time.Millisecond))
}
