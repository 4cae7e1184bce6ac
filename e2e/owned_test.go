package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/internal/names"
)

// Issue 32, through kube-apiserver and graft's webhooks as deploy/base
// ships them: what a Pod author writes proves nothing. A container of a
// graft sidecar's name is graft's only if it is graft's render; a copied
// record exempts nothing; keys in graft's domains are graft's. graft
// refuses each forged Pod with its own message (no guarantee policy is
// bound here: this is the webhook's answer).
func TestGraftRefusesForgedSidecars(t *testing.T) {
	ns := newNamespace(t, "e2e-owned", map[string]string{names.Inject: meshProfile})
	if err := env.waitInjecting(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	real := createPod(t, ns, simplePod("real"))
	if !realProxy(real) {
		t.Fatalf("graft did not inject graft-proxy: %s", containerNames(real))
	}
	// graft's sidecar as stored, less the ServiceAccount plugin's mount
	// of the real Pod's token volume (a Pod of its own gets its own).
	var proxy corev1.Container
	for _, c := range real.Spec.InitContainers {
		if c.Name == proxyName {
			proxy = *c.DeepCopy()
			proxy.VolumeMounts = nil
		}
	}
	// copied is a Pod carrying the record and label of the real one.
	copied := func(name string) *corev1.Pod {
		p := simplePod(name)
		p.Labels = map[string]string{names.Injected: real.Labels[names.Injected]}
		p.Annotations = map[string]string{names.Status: real.Annotations[names.Status]}
		return p
	}
	always := corev1.ContainerRestartPolicyAlways
	root := int64(0)
	for _, c := range []struct {
		name string
		pod  func() *corev1.Pod
		want string
	}{
		{"a sidecar of a template the profile does not select", func() *corev1.Pod {
			p := copied("other-template")
			p.Spec.InitContainers = []corev1.Container{{Name: "graft-secrets-agent", Image: "registry.invalid/evil:1", RestartPolicy: &always,
				SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}}}
			return p
		}, `Pod already has init container "graft-secrets-agent", which graft did not inject: template secrets-agent renders that name`},
		{"graft's name and image, the Pod's command", func() *corev1.Pod {
			p := copied("own-command")
			c := *proxy.DeepCopy()
			c.Command = []string{"/bin/sh", "-c", "exec evil"}
			c.SecurityContext.RunAsUser = &root
			p.Spec.InitContainers = []corev1.Container{c}
			return p
		}, `Pod already has init container "graft-proxy", which graft did not inject: its command differs from template mesh-proxy's`},
		{"an app as the proxy's uid beside graft's sidecar", func() *corev1.Pod {
			p := copied("proxy-uid")
			p.Spec.InitContainers = []corev1.Container{*proxy.DeepCopy()}
			uid := int64(1337)
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: &uid}
			return p
		}, `container "app" runs as uid 1337, which template mesh-proxy reserves for its container "graft-proxy"`},
		{"a key in graft's domain", func() *corev1.Pod {
			p := simplePod("reserved")
			p.Annotations = map[string]string{"graft.dev/exempt": "true"}
			return p
		}, `the Pod sets annotation graft.dev/exempt, which is graft's to set`},
	} {
		t.Run(c.name, func(t *testing.T) {
			created, err := env.client.CoreV1().Pods(ns).Create(t.Context(), c.pod(), metav1.CreateOptions{})
			if err == nil {
				t.Fatalf("admitted: %s", containerNames(created))
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("refused, but not saying %q: %v", c.want, err)
			}
			t.Logf("refused: %v", err)
		})
	}

	// A key graft renders gets graft's value, whatever the Pod set.
	p := simplePod("preset")
	p.Annotations = map[string]string{"redirect.graft.dev/exclude-outbound-ports": "1-65535"}
	got := createPod(t, ns, p)
	if v := got.Annotations["redirect.graft.dev/exclude-outbound-ports"]; v != real.Annotations["redirect.graft.dev/exclude-outbound-ports"] {
		t.Fatalf("redirect.graft.dev/exclude-outbound-ports = %q, want graft's %q", v, real.Annotations["redirect.graft.dev/exclude-outbound-ports"])
	}
}
