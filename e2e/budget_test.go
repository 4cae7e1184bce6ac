package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scenario 10: with timeoutSeconds: 1 and failurePolicy: Fail, a huge Pod
// (5,000 env vars) is injected in time.
func TestHugePodWithinOneSecondTimeout(t *testing.T) {
	ns := newNamespace(t, "e2e-budget", nil)
	hook := scopedGraftWebhook("budget.e2e.graft.dev", ns, "/inject")
	one := int32(1)
	hook.TimeoutSeconds = &one
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
	requireAgentInjected(t, got)
	if n := len(got.Spec.Containers[0].Env); n != envVars+1 {
		t.Fatalf("app container has %d env vars, want %d (all of its own plus graft's)", n, envVars+1)
	}
	t.Logf("huge Pod (%d env vars) created and injected in %s end to end", envVars, took.Round(time.Millisecond))
}
