package e2e

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/internal/names"
)

// Scenario 2: a namespace without the label is never sent to graft, so its
// Pods are stored as created and graft's request counter does not move.
func TestUnlabelledNamespaceNeverCallsGraft(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
	}{
		{"e2e-unlabelled", nil},
		{"e2e-other-labels", map[string]string{"team": "payments"}},
		{"e2e-disabled", map[string]string{names.Inject: "disabled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t, tc.name, tc.labels)
			before := graftRequests(t)
			createPod(t, ns, simplePod("untouched", "app", "helper"))
			requireUntouched(t, getPod(t, ns, "untouched"))
			if after := graftRequests(t); after != before {
				t.Fatalf("graft answered %g reviews for a namespace that is not opted in", after-before)
			}
		})
	}
}

// Scenario 3: a Pod labelled graft.dev/inject: "false" in an opted-in
// namespace is stored untouched.
func TestPodOptOut(t *testing.T) {
	ns := optedIn(t, "e2e-optout")
	// The same Pod without the label, in the same namespace, is injected:
	// the label alone makes the difference.
	createPod(t, ns, simplePod("opted-in"))
	requireAgentInjected(t, getPod(t, ns, "opted-in"))

	p := simplePod("opted-out")
	p.Labels = map[string]string{names.Inject: "false"}
	createPod(t, ns, p)
	requireUntouched(t, getPod(t, ns, "opted-out"))
}

// Scenario 4: kube-system and graft's own namespace are never injected,
// even when labelled for injection.
func TestExcludedNamespacesNeverInjected(t *testing.T) {
	excluded := []string{"kube-system", env.shipped.Namespace}
	// The API server reads namespace labels from its cache. Labelling a
	// control namespace last and waiting until it injects proves the cache
	// has seen the excluded namespaces' labels too (events arrive in order).
	control := newNamespace(t, "e2e-excluded-control", nil)
	for _, name := range append(excluded, control) {
		setInjectLabel(t, name)
	}
	if err := env.waitInjecting(t.Context(), control); err != nil {
		t.Fatalf("control namespace never injected: %v", err)
	}
	for _, name := range excluded {
		t.Run(name, func(t *testing.T) {
			createPod(t, name, simplePod("never-injected"))
			requireUntouched(t, getPod(t, name, "never-injected"))
		})
	}
}

// setInjectLabel labels namespace name graft.dev/inject=enabled, creating
// it if it does not exist.
func setInjectLabel(t *testing.T, name string) {
	t.Helper()
	ns, err := env.client.CoreV1().Namespaces().Get(t.Context(), name, metav1.GetOptions{})
	if isNotFound(err) {
		newNamespace(t, name, map[string]string{names.Inject: "enabled"})
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[names.Inject] = "enabled"
	if _, err := env.client.CoreV1().Namespaces().Update(t.Context(), ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
