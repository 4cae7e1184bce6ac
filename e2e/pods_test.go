package e2e

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/graftdev/graft/internal/names"
)

// What the built-in agent template injects, as its file declares.
const (
	agentContainer = "graft-agent"
	agentVolume    = "graft-agent-run"
	agentEnv       = "GRAFT_AGENT_ADDR"
)

// simplePod is a one-container Pod that never runs (there is no scheduler).
func simplePod(name string, containers ...string) *corev1.Pod {
	if len(containers) == 0 {
		containers = []string{"app"}
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "registry.invalid/" + c + ":1"})
	}
	return p
}

func isInjected(p *corev1.Pod) bool {
	_, ok := p.Annotations[names.Status]
	return ok
}

// allContainers lists init containers then containers.
func allContainers(p *corev1.Pod) []corev1.Container {
	return append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...)
}

func countContainers(p *corev1.Pod, name string) int {
	n := 0
	for _, c := range allContainers(p) {
		if c.Name == name {
			n++
		}
	}
	return n
}

func countVolumes(p *corev1.Pod, name string) int {
	n := 0
	for _, v := range p.Spec.Volumes {
		if v.Name == name {
			n++
		}
	}
	return n
}

func countEnv(c corev1.Container, name string) int {
	n := 0
	for _, e := range c.Env {
		if e.Name == name {
			n++
		}
	}
	return n
}

func countMounts(c corev1.Container, volume string) int {
	n := 0
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			n++
		}
	}
	return n
}

// agentProblems lists every way p differs from a Pod the default profile
// injected exactly once: the annotation, one native sidecar, one volume,
// and the env var and mount in every app container.
func agentProblems(p *corev1.Pod) []string {
	var out []string
	if !isInjected(p) {
		out = append(out, "no "+names.Status+" annotation")
	}
	if n := countContainers(p, agentContainer); n != 1 {
		out = append(out, fmt.Sprintf("%d containers named %s, want 1", n, agentContainer))
	}
	sidecar := slices.IndexFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == agentContainer })
	if sidecar < 0 {
		out = append(out, agentContainer+" is not an init container")
	} else if rp := p.Spec.InitContainers[sidecar].RestartPolicy; rp == nil || *rp != corev1.ContainerRestartPolicyAlways {
		out = append(out, agentContainer+" is not a native sidecar (restartPolicy: Always)")
	}
	if n := countVolumes(p, agentVolume); n != 1 {
		out = append(out, fmt.Sprintf("%d volumes named %s, want 1", n, agentVolume))
	}
	for _, c := range p.Spec.Containers {
		if n := countEnv(c, agentEnv); n != 1 {
			out = append(out, fmt.Sprintf("container %s has %d %s env vars, want 1", c.Name, n, agentEnv))
		}
		if n := countMounts(c, agentVolume); n != 1 {
			out = append(out, fmt.Sprintf("container %s has %d mounts of %s, want 1", c.Name, n, agentVolume))
		}
	}
	return out
}

func requireAgentInjected(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if problems := agentProblems(p); len(problems) > 0 {
		t.Fatalf("Pod %s/%s is not injected as the agent template says:\n  %s\ncontainers: %s",
			p.Namespace, p.Name, strings.Join(problems, "\n  "), containerNames(p))
	}
}

// requireUntouched fails unless p carries nothing graft would add.
func requireUntouched(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if isInjected(p) || countContainers(p, agentContainer) > 0 || countVolumes(p, agentVolume) > 0 {
		t.Fatalf("Pod %s/%s was injected, want untouched: containers %s, annotations %v",
			p.Namespace, p.Name, containerNames(p), p.Annotations)
	}
	for _, c := range p.Spec.Containers {
		if countEnv(c, agentEnv) > 0 || countMounts(c, agentVolume) > 0 {
			t.Fatalf("container %s was edited by graft: env %v", c.Name, c.Env)
		}
	}
}

func containerNames(p *corev1.Pod) string {
	var names []string
	for _, c := range p.Spec.InitContainers {
		names = append(names, "init:"+c.Name)
	}
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	return "[" + strings.Join(names, " ") + "]"
}

func createPod(t *testing.T, ns string, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	got, err := env.client.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Pod %s/%s: %v", ns, p.Name, err)
	}
	return got
}

// getPod reads the Pod back as stored.
func getPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	got, err := env.client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Pod %s/%s: %v", ns, name, err)
	}
	return got
}

// warnings collects the Warning headers the API server relays to a client.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs)
}

// clientWithWarnings is a clientset whose warnings land in the returned
// collector instead of the log.
func clientWithWarnings(t *testing.T) (kubernetes.Interface, *warnings) {
	t.Helper()
	w := &warnings{}
	cfg := env.cluster.RESTConfig()
	cfg.WarningHandler = w
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, w
}
