package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scenario 7: a Pod that already has a container named like graft's
// sidecar is created without a duplicate, and the client gets graft's
// warning.
func TestSidecarNameConflict(t *testing.T) {
	ns := optedIn(t, "e2e-conflict")
	for _, tc := range []struct {
		name string
		pod  func() *corev1.Pod
	}{
		{"app-container", func() *corev1.Pod {
			return simplePod("conflict-app", "app", agentContainer)
		}},
		{"init-container", func() *corev1.Pod {
			p := simplePod("conflict-init")
			p.Spec.InitContainers = []corev1.Container{{Name: agentContainer, Image: "registry.invalid/mine:1"}}
			return p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, w := clientWithWarnings(t)
			want := tc.pod()
			if _, err := c.CoreV1().Pods(ns).Create(t.Context(), want, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create: %v", err)
			}
			got := getPod(t, ns, want.Name)
			if n := countContainers(got, agentContainer); n != 1 {
				t.Fatalf("%d containers named %s, want exactly the user's one: %s", n, agentContainer, containerNames(got))
			}
			for _, ctr := range allContainers(got) {
				if ctr.Name == agentContainer && !strings.Contains(ctr.Image, "registry.invalid/") {
					t.Fatalf("the user's %s container was replaced: image %s", agentContainer, ctr.Image)
				}
			}
			var named []string
			for _, msg := range w.all() {
				if strings.Contains(msg, agentContainer) {
					named = append(named, msg)
				}
			}
			if len(named) == 0 {
				t.Fatalf("no warning naming %s reached the client; warnings: %q", agentContainer, w.all())
			}
			t.Logf("warning: %s", named[0])
		})
	}
}
