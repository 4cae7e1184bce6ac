package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tokenPath is where the ServiceAccount admission plugin mounts a Pod's
// API token.
const tokenPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// Scenario 12: the API server runs its default admission plugins, and the
// ServiceAccount and LimitRanger plugins re-run after the webhooks. graft's
// answer already holds what they would add to its containers, so the API
// server calls graft exactly once per Pod create, counted from its own
// metrics: for a Pod with an automounted token, one with automounting off,
// and one in a namespace whose LimitRange defaults cpu, memory and
// ephemeral-storage.
func TestOneCallPerCreate(t *testing.T) {
	plain := optedIn(t, "e2e-calls")
	limited := optedIn(t, "e2e-calls-limitrange")
	limits := createLimitRange(t, limited)
	for _, ns := range []string{plain, limited} {
		if err := env.waitInjecting(t.Context(), ns); err != nil {
			t.Fatal(err)
		}
	}
	off := false
	noToken := simplePod("no-token", "app", "worker")
	noToken.Spec.AutomountServiceAccountToken = &off
	cases := []struct {
		name, ns string
		pod      *corev1.Pod
		check    func(*corev1.Pod) []string
	}{
		{"automounted-token", plain, simplePod("token", "app", "worker"), tokenEverywhere},
		{"automount-off", plain, noToken, noTokenAnywhere},
		{"limitrange", limited, simplePod("limited"), func(p *corev1.Pod) []string {
			return append(tokenEverywhere(p), limitsEverywhere(p, limits)...)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := webhookDurations(t, graftWebhookName()).Total
			createPod(t, c.ns, c.pod)
			calls := webhookDurations(t, graftWebhookName()).Total - before
			got := getPod(t, c.ns, c.pod.Name)
			requireAgentInjected(t, got)
			if problems := c.check(got); len(problems) > 0 {
				t.Errorf("stored Pod %s:\n  %s", containerNames(got), strings.Join(problems, "\n  "))
			}
			if calls != 1 {
				t.Errorf("the API server called %s %g times for one create, want 1", graftWebhookName(), calls)
			}
		})
	}
}

// tokenEverywhere lists the containers that do not mount the Pod's token
// volume at the token path exactly once, as the ServiceAccount plugin
// leaves every container.
func tokenEverywhere(p *corev1.Pod) []string {
	var vol string
	for _, v := range p.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			vol = v.Name
			break
		}
	}
	if vol == "" {
		return []string{"no kube-api-access- volume: the ServiceAccount plugin did not run"}
	}
	var out []string
	for _, c := range allContainers(p) {
		n := 0
		for _, m := range c.VolumeMounts {
			if m.MountPath == tokenPath {
				n++
				if m.Name != vol || !m.ReadOnly {
					out = append(out, fmt.Sprintf("container %s mounts %s read-only=%v at the token path, want %s read-only", c.Name, m.Name, m.ReadOnly, vol))
				}
			}
		}
		if n != 1 {
			out = append(out, fmt.Sprintf("container %s has %d mounts at the token path, want 1", c.Name, n))
		}
	}
	return out
}

// noTokenAnywhere lists any token volume or mount.
func noTokenAnywhere(p *corev1.Pod) []string {
	var out []string
	for _, v := range p.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			out = append(out, "volume "+v.Name)
		}
	}
	for _, c := range allContainers(p) {
		for _, m := range c.VolumeMounts {
			if m.MountPath == tokenPath {
				out = append(out, "container "+c.Name+" mounts the token")
			}
		}
	}
	return out
}

// createLimitRange gives ns a LimitRange whose container defaults cover
// cpu, memory and ephemeral-storage, and waits until the API server
// applies it. It must come before any Pod create in ns: LimitRanger
// caches a namespace's absent LimitRanges for 30 seconds.
func createLimitRange(t *testing.T, ns string) corev1.LimitRangeItem {
	t.Helper()
	item := corev1.LimitRangeItem{
		Type: corev1.LimitTypeContainer,
		Default: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi"),
			corev1.ResourceEphemeralStorage: resource.MustParse("2Gi"),
		},
		DefaultRequest: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
			corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
		},
	}
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "defaults"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}}}
	if _, err := env.client.CoreV1().LimitRanges(ns).Create(t.Context(), lr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("LimitRange: %v", err)
	}
	waitFor(t, "the LimitRange to apply", func(ctx context.Context) error {
		p, err := env.client.CoreV1().Pods(ns).Create(ctx, simplePod("limit-probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if _, ok := p.Annotations["kubernetes.io/limit-ranger"]; !ok {
			return errors.New("no kubernetes.io/limit-ranger annotation yet")
		}
		return nil
	})
	return item
}

// limitsEverywhere lists the containers whose requests and limits lack a
// LimitRange default they did not set themselves. graft's agent sets cpu
// and memory, so only ephemeral-storage comes from the LimitRange there.
func limitsEverywhere(p *corev1.Pod, item corev1.LimitRangeItem) []string {
	var out []string
	for _, c := range allContainers(p) {
		for name, want := range item.Default {
			if _, ok := c.Resources.Limits[name]; !ok {
				out = append(out, fmt.Sprintf("container %s has no %s limit", c.Name, name))
			} else if c.Name == agentContainer && name == corev1.ResourceEphemeralStorage && !c.Resources.Limits[name].Equal(want) {
				out = append(out, fmt.Sprintf("container %s limits %s to %s, want the default %s", c.Name, name, c.Resources.Limits.Name(name, resource.BinarySI), want.String()))
			}
		}
		for name, want := range item.DefaultRequest {
			if _, ok := c.Resources.Requests[name]; !ok {
				out = append(out, fmt.Sprintf("container %s has no %s request", c.Name, name))
			} else if c.Name == agentContainer && name == corev1.ResourceEphemeralStorage && !c.Resources.Requests[name].Equal(want) {
				out = append(out, fmt.Sprintf("container %s requests %s of %s, want the default %s", c.Name, c.Resources.Requests.Name(name, resource.BinarySI), name, want.String()))
			}
		}
	}
	return out
}
