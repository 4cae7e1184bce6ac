package podcorpus

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestGenerateIsDeterministic: the same seed gives the same Pods; another
// seed, others.
func TestGenerateIsDeterministic(t *testing.T) {
	a, b, c := Generate(7, 300), Generate(7, 300), Generate(8, 300)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave different corpora")
	}
	if reflect.DeepEqual(a, c) {
		t.Fatal("another seed gave the same corpus")
	}
}

// TestGenerateCovers: 2,000 Pods with distinct names; a prefix of twice
// the traits covers each trait twice, and the corpus holds every kind of
// Pod the acceptance test is about.
func TestGenerateCovers(t *testing.T) {
	corpus := Generate(21, 2000)
	names := map[string]bool{}
	traits := map[string]int{}
	for i, p := range corpus {
		if names[p.Pod.Name] {
			t.Fatalf("name %s twice", p.Pod.Name)
		}
		names[p.Pod.Name] = true
		if i < 2*len(Traits()) {
			traits[p.Trait]++
		}
		checkShape(t, p.Pod)
	}
	for _, tr := range Traits() {
		if traits[tr] != 2 {
			t.Errorf("trait %s: %d Pods in the first %d, want 2", tr, traits[tr], 2*len(Traits()))
		}
	}
	count := func(f func(Pod) bool) int {
		n := 0
		for _, p := range corpus {
			if f(p) {
				n++
			}
		}
		return n
	}
	for what, n := range map[string]int{
		"pod-level requests":  count(func(p Pod) bool { return p.Pod.Spec.Resources != nil && p.Pod.Spec.Resources.Requests != nil }),
		"pod-level limits":    count(func(p Pod) bool { return p.Pod.Spec.Resources != nil && p.Pod.Spec.Resources.Limits != nil }),
		"LimitRange":          count(func(p Pod) bool { return p.LimitRange }),
		"Windows by spec.os":  count(func(p Pod) bool { return p.Pod.Spec.OS != nil && p.Pod.Spec.OS.Name == corev1.Windows }),
		"Windows by selector": count(func(p Pod) bool { return p.Pod.Spec.NodeSelector["kubernetes.io/os"] == "windows" }),
		"hostNetwork":         count(func(p Pod) bool { return p.Pod.Spec.HostNetwork }),
		"automount off":       count(func(p Pod) bool { a := p.Pod.Spec.AutomountServiceAccountToken; return a != nil && !*a }),
		"native sidecar":      count(func(p Pod) bool { return slices.ContainsFunc(p.Pod.Spec.InitContainers, isSidecar) }),
		"port 15021": count(func(p Pod) bool {
			return slices.ContainsFunc(p.Pod.Spec.Containers, func(c corev1.Container) bool {
				return slices.ContainsFunc(c.Ports, func(q corev1.ContainerPort) bool { return q.ContainerPort == 15021 })
			})
		}),
		"restricted seccomp per container": count(func(p Pod) bool {
			c := p.Pod.Spec.Containers[0]
			return c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil && p.Pod.Spec.SecurityContext == nil
		}),
		"large (6+ containers)": count(func(p Pod) bool { return len(p.Pod.Spec.Containers) >= 6 }),
	} {
		if n < 20 {
			t.Errorf("%s: %d Pods, want at least 20", what, n)
		}
	}
}

func isSidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// checkShape holds what the API server would refuse regardless of
// namespace: names and port names unique, no Linux-only field on a Pod
// for Windows.
func checkShape(t *testing.T, p *corev1.Pod) {
	t.Helper()
	var names, portNames []string
	for _, c := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
		if slices.Contains(names, c.Name) {
			t.Fatalf("%s: container %s twice", p.Name, c.Name)
		}
		names = append(names, c.Name)
		for _, q := range c.Ports {
			if q.Name != "" && slices.Contains(portNames, q.Name) {
				t.Fatalf("%s: port name %s twice", p.Name, q.Name)
			}
			portNames = append(portNames, q.Name)
		}
		if p.Spec.OS != nil && p.Spec.OS.Name == corev1.Windows && c.SecurityContext != nil {
			t.Fatalf("%s: a Windows Pod with a container security context", p.Name)
		}
	}
	if _, err := json.Marshal(p); err != nil {
		t.Fatal(err)
	}
}
