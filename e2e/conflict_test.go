package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/internal/names"
)

// conflictPods bring their own container, init container or volume named
// like one the agent template injects.
var conflictPods = []struct {
	name, object string
	pod          func(name string) *corev1.Pod
}{
	{"app-container", `container "` + agentContainer + `"`, func(name string) *corev1.Pod {
		return simplePod(name, "app", agentContainer)
	}},
	{"init-container", `init container "` + agentContainer + `"`, func(name string) *corev1.Pod {
		p := simplePod(name)
		p.Spec.InitContainers = []corev1.Container{{Name: agentContainer, Image: "registry.invalid/mine:1"}}
		return p
	}},
	{"volume", `volume "` + agentVolume + `"`, func(name string) *corev1.Pod {
		p := simplePod(name)
		p.Spec.Volumes = []corev1.Volume{{Name: agentVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		return p
	}},
}

// Scenario 7: a Pod that brings its own object named like graft's. By
// default (onConflict: deny) the create is refused with a message naming
// the object, the template and the option to change.
func TestSidecarNameConflictDenied(t *testing.T) {
	ns := optedIn(t, "e2e-conflict")
	for _, tc := range conflictPods {
		t.Run(tc.name, func(t *testing.T) {
			_, err := env.client.CoreV1().Pods(ns).Create(t.Context(), tc.pod("conflict-"+tc.name), metav1.CreateOptions{})
			if err == nil {
				t.Fatal("created; want a denial")
			}
			for _, want := range []string{"Pod already has " + tc.object, "onConflict: keep", "without agent"} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("denial %q does not say %q", err, want)
				}
			}
			t.Logf("denied: %v", err)
		})
	}
}

// With onConflict: keep the Pod is created as the user wrote it, with a
// warning, and graft injects nothing of the template and records nothing
// of it.
func TestSidecarNameConflictKept(t *testing.T) {
	ns := newNamespace(t, "e2e-conflict-keep", nil)
	registerWebhooks(t, "graft-e2e-conflict-keep", scopedGraftWebhook("keep.conflict.e2e.graft.dev", ns, "/inject/keep"))
	if err := env.waitInjecting(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	for _, tc := range conflictPods {
		t.Run(tc.name, func(t *testing.T) {
			c, w := clientWithWarnings(t)
			want := tc.pod("keep-" + tc.name)
			if _, err := c.CoreV1().Pods(ns).Create(t.Context(), want, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create: %v", err)
			}
			got := getPod(t, ns, want.Name)
			if len(got.Spec.Containers)+len(got.Spec.InitContainers) != len(want.Spec.Containers)+len(want.Spec.InitContainers) ||
				withoutToken(got.Spec.Volumes) != len(want.Spec.Volumes) {
				t.Fatalf("graft added to a Pod whose template it left out: containers %s, %d volumes besides the token's", containerNames(got), withoutToken(got.Spec.Volumes))
			}
			for _, ctr := range got.Spec.Containers {
				if countEnv(ctr, agentEnv) > 0 || countMounts(ctr, agentVolume) > 0 {
					t.Fatalf("container %s got the agent's env or mount", ctr.Name)
				}
			}
			var st struct {
				Injected  []string          `json:"injected"`
				Templates []json.RawMessage `json:"templates"`
			}
			if err := json.Unmarshal([]byte(got.Annotations[names.Status]), &st); err != nil || len(st.Injected)+len(st.Templates) != 0 {
				t.Fatalf("status %q (%v): want one that records nothing", got.Annotations[names.Status], err)
			}
			if !strings.Contains(strings.Join(w.all(), "\n"), "template agent not injected: the Pod already has "+tc.object) {
				t.Fatalf("no warning naming %s reached the client; warnings: %q", tc.object, w.all())
			}
		})
	}
}

// withoutToken counts the volumes but the ServiceAccount plugin's token
// volume, which the API server adds after every webhook.
func withoutToken(vols []corev1.Volume) int {
	n := 0
	for _, v := range vols {
		if !strings.HasPrefix(v.Name, "kube-api-access-") {
			n++
		}
	}
	return n
}
