package hostile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/config"
)

// Shipped is how deploy/base runs graft, read from its manifests: the
// bench runs graft the same way, on loopback.
type Shipped struct {
	// Args are graft's container arguments with the mounted paths
	// replaced by the files they are made from, and no addresses.
	Args []string
	// MemoryLimit is the container's memory limit, which deploy/base also
	// gives graft as GOMEMLIMIT; CPULimit its CPU limit in whole CPUs
	// (GOMAXPROCS, which Go reads from the cgroup in a cluster).
	MemoryLimit int64
	CPULimit    int
	// ProbeTimeout is the readiness and liveness probes' timeoutSeconds.
	ProbeTimeout time.Duration
	// WebhookPath and WebhookTimeout are the default profile's webhook:
	// its service path and timeoutSeconds, which the API server sends as
	// ?timeout=.
	WebhookPath    string
	WebhookTimeout time.Duration
	// MaxBodyBytes is the largest body graft accepts with the shipped
	// configuration.
	MaxBodyBytes int
}

// ReadShipped reads deploy/base under deployDir. tlsDir holds the serving
// certificate the bench made, which stands for the mounted Secret.
func ReadShipped(deployDir, tlsDir string) (*Shipped, error) {
	base := filepath.Join(deployDir, "base")
	var d appsv1.Deployment
	if err := readYAML(filepath.Join(base, "deployment.yaml"), &d); err != nil {
		return nil, err
	}
	var c *corev1.Container
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == "graft" {
			c = &d.Spec.Template.Spec.Containers[i]
		}
	}
	if c == nil {
		return nil, fmt.Errorf("%s: no container graft", base)
	}
	// Where each mounted volume's files come from here.
	sources := map[string]string{"config": base, "templates": filepath.Join(base, "templates"), "tls": tlsDir}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		src, ok := sources[m.Name]
		if !ok {
			return nil, fmt.Errorf("deployment.yaml mounts %s, which the bench does not know how to stand for", m.Name)
		}
		mounts[m.MountPath] = src
	}
	s := &Shipped{}
	for _, a := range c.Args {
		flag, value, hasValue := strings.Cut(a, "=")
		switch {
		case flag == "--addr" || flag == "--admin-addr":
			continue // the bench's own loopback addresses
		case hasValue:
			for mount, src := range mounts {
				if rest, ok := strings.CutPrefix(value, mount); ok {
					value = src + rest
				}
			}
			if strings.HasPrefix(value, "/etc/") {
				return nil, fmt.Errorf("argument %s: a path the bench cannot stand for", a)
			}
			a = flag + "=" + value
		}
		s.Args = append(s.Args, a)
	}
	mem, cpu := c.Resources.Limits[corev1.ResourceMemory], c.Resources.Limits[corev1.ResourceCPU]
	if mem.IsZero() || cpu.IsZero() {
		return nil, fmt.Errorf("deployment.yaml: graft has no memory or CPU limit")
	}
	s.MemoryLimit = mem.Value()
	s.CPULimit = int(cpu.Value())
	if !setsGOMEMLIMIT(c) {
		return nil, fmt.Errorf("deployment.yaml: GOMEMLIMIT is not the memory limit; the bench runs graft as shipped")
	}
	if p := c.ReadinessProbe; p != nil {
		s.ProbeTimeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	if s.ProbeTimeout <= 0 {
		s.ProbeTimeout = time.Second // the kubelet's default
	}

	var mwc admissionv1.MutatingWebhookConfiguration
	if err := readYAML(filepath.Join(base, "mutatingwebhookconfiguration.yaml"), &mwc); err != nil {
		return nil, err
	}
	for _, w := range mwc.Webhooks {
		if svc := w.ClientConfig.Service; svc != nil && svc.Path != nil && *svc.Path == "/inject" && w.TimeoutSeconds != nil {
			s.WebhookPath, s.WebhookTimeout = *svc.Path, time.Duration(*w.TimeoutSeconds)*time.Second
			break
		}
	}
	if s.WebhookPath == "" {
		return nil, fmt.Errorf("mutatingwebhookconfiguration.yaml: no webhook calls /inject with a timeoutSeconds")
	}

	f, err := config.Load(filepath.Join(base, "config.yaml"))
	if err != nil {
		return nil, err
	}
	if err := f.Server.Default(); err != nil {
		return nil, err
	}
	s.MaxBodyBytes = f.Server.MaxBodyBytes
	return s, nil
}

func setsGOMEMLIMIT(c *corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil &&
			e.ValueFrom.ResourceFieldRef.Resource == "limits.memory" {
			return true
		}
	}
	return false
}

func readYAML(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
