package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/internal/names"
)

// Scenario 13: the shipped guarantee of the default profile, evaluated by
// kube-apiserver itself, admits the Pods graft leaves alone (hostNetwork,
// no templates selected, mirror Pods) and refuses the others with its
// message: a label alone passes nothing, a record not naming the
// profile's templates passes nothing, and a record naming a sidecar the
// Pod lacks is refused as stripped. A copy of it is bound to one namespace whose label
// no webhook serves, so the Pods reach it exactly as written here.
func TestShippedPolicyInAPIServer(t *testing.T) {
	const label = "e2e-policy"
	ns := newNamespace(t, "e2e-policy", map[string]string{names.Inject: label})
	policy := env.shipped.Policy.DeepCopy()
	binding := env.shipped.Binding.DeepCopy()
	policy.Name, policy.ResourceVersion = "graft-injection-required-e2e", ""
	policy.Spec.MatchConstraints.NamespaceSelector = namespaceNamed(ns)
	binding.Name, binding.ResourceVersion = policy.Name, ""
	binding.Spec.PolicyName = policy.Name
	installPolicy(t, policy, binding)

	const (
		notInjected = "graft did not inject this Pod, and namespace " + "e2e-policy" + " requires it (label graft.dev/inject=enabled)"
		stripped    = "graft adds init container graft-proxy (template mesh-proxy) to this Pod, but the Pod leaving admission lacks it"
		unrecorded  = "graft.dev/status records no template mesh-proxy injected at revision default"
		v1          = `{"templates":["agent"],"initContainers":["graft-agent"],"volumes":["graft-agent-run"]}`
		v2          = `{"version":2,"injected":["graft-agent"],"templates":[{"name":"agent","revision":"default","digest":"9f86d081884c7d65","initContainers":["graft-agent"],"volumes":["graft-agent-run"]}]}`
		// A record claiming nothing.
		v2Empty = `{"version":2}`
		// What graft writes for the default profile's mesh-proxy.
		proxyV2 = `{"version":2,"injected":["graft-proxy"],"templates":[{"name":"mesh-proxy","revision":"default","digest":"9f86d081884c7d65","initContainers":["graft-proxy"]}]}`
	)
	dryRun := func(ctx context.Context, p *corev1.Pod) error {
		_, err := env.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	waitFor(t, "the policy to refuse an uninjected Pod", func(ctx context.Context) error {
		if err := dryRun(ctx, simplePod("probe")); err == nil || !strings.Contains(err.Error(), notInjected) {
			return errors.New("not refused yet")
		}
		return nil
	})

	pod := func(status string) *corev1.Pod {
		p := simplePod("p")
		if status != "" {
			p.Annotations = map[string]string{names.Status: status}
		}
		return p
	}
	labelled := simplePod("p")
	labelled.Labels = map[string]string{"graft.dev/injected": "default"}
	hostNet := simplePod("p")
	hostNet.Spec.HostNetwork = true
	noTemplates := simplePod("p")
	noTemplates.Annotations = map[string]string{"graft.dev/templates": " , "}
	oneTemplate := simplePod("p")
	oneTemplate.Annotations = map[string]string{"graft.dev/templates": "agent"}
	mirror := simplePod("p")
	mirror.Annotations = map[string]string{"kubernetes.io/config.mirror": "x"}
	mirror.Spec.NodeName = "node-1" // the API server requires it of mirror Pods
	cases := []struct {
		name string
		pod  *corev1.Pod
		want string // "" admitted, else what the refusal says
	}{
		{"no status", pod(""), notInjected},
		{"labelled graft.dev/injected", labelled, notInjected},
		{"version 2 status naming graft-proxy, not in the Pod", pod(proxyV2), stripped},
		{"version 1 status (graft upgrades it on admission)", pod(v1), unrecorded},
		{"version 2 status of another profile's template", pod(v2), unrecorded},
		{"version 2 status claiming nothing", pod(v2Empty), unrecorded},
		{"a bogus status", pod("x"), unrecorded},
		{"hostNetwork", hostNet, ""},
		{"no templates selected", noTemplates, ""},
		{"a template selected", oneTemplate, notInjected},
		{"mirror Pod", mirror, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := dryRun(t.Context(), c.pod)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want a refusal saying %q", err, c.want)
			}
		})
	}
}
