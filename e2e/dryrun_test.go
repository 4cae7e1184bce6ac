package e2e

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scenario 5: a server-side dry run (dryRun: All) returns the injected Pod
// and stores nothing.
func TestServerSideDryRun(t *testing.T) {
	ns := optedIn(t, "e2e-dryrun")
	got, err := env.client.CoreV1().Pods(ns).Create(t.Context(), simplePod("dry", "app", "worker"),
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry-run create: %v", err)
	}
	requireAgentInjected(t, got)
	_, err = env.client.CoreV1().Pods(ns).Get(t.Context(), "dry", metav1.GetOptions{})
	if !isNotFound(err) {
		t.Fatalf("after a dry run, get Pod: %v, want NotFound", err)
	}
}
