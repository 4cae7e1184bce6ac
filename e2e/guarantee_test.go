package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	regv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// The guarantee, in kube-apiserver: a Pod leaves admission with graft's
// real sidecars, or is refused saying why. The tests use the mesh-proxy
// profile: the shipped webhooks send its namespaces to graft's
// /inject/mesh-proxy, which injects the native sidecar graft-proxy, and its
// shipped policy is bound, as a copy, to each test's namespaces only.

const (
	meshProfile = "mesh-proxy"
	proxyName   = "graft-proxy"
)

// proxyImage is the mesh-proxy template's default image, which the
// shipped profiles lock.
func proxyImage() string {
	set, err := templates.Builtin()
	if err != nil {
		return ""
	}
	tmpl, ok := set.Get(meshProfile)
	if !ok {
		return ""
	}
	for _, p := range tmpl.Params {
		if p.Name == "image" {
			return p.Default
		}
	}
	return ""
}

// installPolicy creates policy and binding in the API server and removes
// them when the test ends.
func installPolicy(t *testing.T, policy *regv1.ValidatingAdmissionPolicy, binding *regv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	policies := env.client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	bindings := env.client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	if _, err := policies.Create(t.Context(), policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the API server refuses policy %s: %v", policy.Name, err)
	}
	if _, err := bindings.Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding %s: %v", binding.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, err := range []error{
			bindings.Delete(ctx, binding.Name, metav1.DeleteOptions{}),
			policies.Delete(ctx, policy.Name, metav1.DeleteOptions{}),
		} {
			if err != nil && !isNotFound(err) {
				t.Errorf("remove policy %s: %v", policy.Name, err)
			}
		}
	})
}

// shippedGuarantee is profile's policy for namespaces without
// graft.dev/rev, and that binding, in deploy/base/validatingadmissionpolicy.yaml.
func shippedGuarantee(t *testing.T, profile string) (*regv1.ValidatingAdmissionPolicy, *regv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	return shippedPolicy(t, "graft-injection-required-"+profile)
}

// shippedPolicy is the policy called name in
// deploy/base/validatingadmissionpolicy.yaml and its binding of the same
// name.
func shippedPolicy(t *testing.T, name string) (*regv1.ValidatingAdmissionPolicy, *regv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "base", "validatingadmissionpolicy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var policy *regv1.ValidatingAdmissionPolicy
	var binding *regv1.ValidatingAdmissionPolicyBinding
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		var doc metav1.PartialObjectMetadata
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Name != name {
			continue
		}
		switch doc.Kind {
		case "ValidatingAdmissionPolicy":
			policy = &regv1.ValidatingAdmissionPolicy{}
			err = json.Unmarshal(raw, policy)
		case "ValidatingAdmissionPolicyBinding":
			binding = &regv1.ValidatingAdmissionPolicyBinding{}
			err = json.Unmarshal(raw, binding)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if policy == nil || binding == nil {
		t.Fatalf("deploy/base has no policy and binding %s", name)
	}
	return policy, binding
}

// realProxy reports whether p holds graft's graft-proxy as the mesh-proxy
// profile injects it.
func realProxy(p *corev1.Pod) bool {
	i := slices.IndexFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == proxyName })
	return i >= 0 && p.Spec.InitContainers[i].Image == proxyImage() && proxyImage() != "" &&
		p.Spec.InitContainers[i].RestartPolicy != nil && *p.Spec.InitContainers[i].RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// stripGraftInits is a webhook ordered after graft that removes every init
// container graft injected (named graft-*), and nothing else.
func stripGraftInits(p *corev1.Pod) []patchOp {
	var ops []patchOp
	for i := len(p.Spec.InitContainers) - 1; i >= 0; i-- {
		if strings.HasPrefix(p.Spec.InitContainers[i].Name, "graft-") {
			ops = append(ops, patchOp{Op: "remove", Path: fmt.Sprintf("/spec/initContainers/%d", i)})
		}
	}
	return ops
}

// Issue 21: a mutating webhook ordered after graft removes graft's init
// containers. With reinvocationPolicy IfNeeded it strips them again after
// graft, reinvoked, puts them back: the Pod would run without its sidecar
// while graft.dev/status names it, and the guarantee refuses it, saying
// what was removed. With Never, graft's reinvocation has the last word.
// Either way no Pod is stored without graft's real sidecar.
func TestGuaranteeRefusesWhatALaterWebhookStripped(t *testing.T) {
	for _, c := range []struct {
		reinvocation regv1.ReinvocationPolicyType
		refused      bool
	}{
		{regv1.IfNeededReinvocationPolicy, true},
		{regv1.NeverReinvocationPolicy, false},
	} {
		t.Run(string(c.reinvocation), func(t *testing.T) {
			ns := newNamespace(t, "e2e-guarantee-strip-"+strings.ToLower(string(c.reinvocation)), map[string]string{names.Inject: meshProfile})
			probe := newNamespace(t, "e2e-guarantee-strip-probe-"+strings.ToLower(string(c.reinvocation)), nil)
			strip := &foreignMutator{patch: stripGraftInits}
			registerForeign(t, ns, strip, c.reinvocation)
			bindShippedGuarantee(t, meshProfile, ns, probe)
			waitFor(t, "the stripping webhook to take effect", func(ctx context.Context) error {
				_, _ = env.client.CoreV1().Pods(ns).Create(ctx, simplePod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if strip.calls.Load() == 0 {
					return errors.New("the stripping webhook was not called")
				}
				return nil
			})
			for i := range 5 {
				p := simplePod(fmt.Sprintf("stripped-%d", i))
				created, err := env.client.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{})
				switch {
				case err != nil:
					msg := err.Error()
					t.Logf("refused: %s", msg)
					for _, want := range []string{"graft-injection-required-mesh-proxy", "graft adds init container graft-proxy (template mesh-proxy) to this Pod",
						"a mutating admission step after graft removed it"} {
						if !strings.Contains(msg, want) {
							t.Errorf("the refusal does not say %q: %s", want, msg)
						}
					}
					if !c.refused {
						t.Errorf("refused, yet graft's reinvocation should have restored its sidecar")
					}
				case !realProxy(created):
					t.Fatalf("stored without graft's real sidecar: %s", containerNames(created))
				case c.refused:
					t.Errorf("admitted with graft's sidecar, yet the stripping webhook (IfNeeded) should have removed it last")
				}
			}
			t.Logf("the stripping webhook was called %d times", strip.calls.Load())
		})
	}
}

// Issue 21: a Pod author copies graft.dev/status and graft.dev/injected
// from an injected Pod next to a graft-proxy of their own (another image,
// NET_ADMIN). Through graft, the Pod is never stored without graft's real
// sidecar; with graft out of the way (a namespace no webhook serves, the
// policy bound to it), the guarantee refuses it as spoofed.
func TestGuaranteeRefusesSpoofedRecords(t *testing.T) {
	served := newNamespace(t, "e2e-guarantee-spoof", map[string]string{names.Inject: meshProfile})
	bypassed := newNamespace(t, "e2e-guarantee-spoof-bypassed", map[string]string{names.Inject: "e2e-no-webhook"})
	bindShippedGuarantee(t, meshProfile, served, bypassed)

	// A record graft wrote, from a real injection.
	real := createPod(t, served, simplePod("real"))
	if !realProxy(real) {
		t.Fatalf("graft did not inject graft-proxy: %s", containerNames(real))
	}
	spoof := func(name string) *corev1.Pod {
		p := simplePod(name)
		p.Labels = map[string]string{names.Injected: real.Labels[names.Injected]}
		p.Annotations = map[string]string{names.Status: real.Annotations[names.Status]}
		always := corev1.ContainerRestartPolicyAlways
		p.Spec.InitContainers = []corev1.Container{{
			Name: proxyName, Image: "registry.invalid/not-envoy:1", RestartPolicy: &always,
			SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}},
		}}
		return p
	}

	_, err := env.client.CoreV1().Pods(bypassed).Create(t.Context(), spoof("bypassed"), metav1.CreateOptions{})
	if err == nil {
		t.Fatal("a spoofed record and graft-proxy of the Pod's own were admitted with graft out of the way")
	}
	t.Logf("graft bypassed, refused: %v", err)
	for _, want := range []string{"init container graft-proxy is not graft's: field image is not what template mesh-proxy renders for this Pod"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q", want)
		}
	}

	created, err := env.client.CoreV1().Pods(served).Create(t.Context(), spoof("through-graft"), metav1.CreateOptions{})
	switch {
	case err != nil:
		t.Logf("through graft, refused: %v", err)
	case !realProxy(created):
		t.Fatalf("through graft, stored without graft's real sidecar: %s (image %v)", containerNames(created), created.Spec.InitContainers)
	default:
		t.Logf("through graft, stored with graft's real sidecar")
	}
}

// Issue 21: a namespace labelled graft.dev/rev with a typo selects no
// webhook, so graft is never called; the refusal names the unknown value
// and the revisions and tags graft serves, instead of sending the user to
// check that graft is running.
func TestGuaranteeNamesAnUnknownRevision(t *testing.T) {
	ns := newNamespace(t, "e2e-guarantee-typo", map[string]string{names.Inject: meshProfile, names.Revision: "defualt"})
	// The shipped policy for namespaces whose graft.dev/rev graft does not
	// serve, as shipped: it selects this namespace by its labels.
	policy, binding := shippedPolicy(t, "graft-injection-required-known-revision")
	installPolicy(t, policy, binding)
	waitFor(t, "the guarantee to take effect", func(ctx context.Context) error {
		_, err := env.client.CoreV1().Pods(ns).Create(ctx, simplePod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), policy.Name) {
			return fmt.Errorf("not refused by %s yet: %v", policy.Name, err)
		}
		return nil
	})
	before := graftRequests(t)
	_, err := env.client.CoreV1().Pods(ns).Create(t.Context(), simplePod("typo"), metav1.CreateOptions{})
	if err == nil {
		t.Fatal("admitted without graft's sidecar")
	}
	t.Logf("refused: %v", err)
	want := "namespace e2e-guarantee-typo is labelled graft.dev/rev=defualt, which is neither a revision nor a tag graft serves (revisions: default; tags: none)"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("the refusal does not say %q", want)
	}
	if strings.Contains(err.Error(), "Check that graft is running") {
		t.Error("the refusal sends the user to check that graft is running")
	}
	if calls := graftRequests(t) - before; calls != 0 {
		t.Errorf("graft was called %g times", calls)
	}
}

// Issue 21: graft audit reports namespaces whose labels select no
// webhook, with the reason, though they have no Pods (every create in
// them fails under the guarantee).
func TestAuditReportsNamespacesSelectingNoWebhook(t *testing.T) {
	typo := newNamespace(t, "e2e-audit-rev-typo", map[string]string{names.Inject: meshProfile, names.Revision: "defualt"})
	unknown := newNamespace(t, "e2e-audit-profile-typo", map[string]string{names.Inject: "mesh-prxy"})
	kubeconfig := writeKubeconfig(t)
	// -A: without it graft audit, as kubectl, covers the context's namespace.
	out, _ := runAudit(t, kubeconfig, "-A", "-o", "json")
	var rep struct {
		Namespaces []struct {
			Name, Inject, Revision, Reason, Detail string
		} `json:"namespaces"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := map[string]string{}
	for _, n := range rep.Namespaces {
		got[n.Name] = n.Reason + ": " + n.Detail
	}
	for ns, want := range map[string]string{
		typo:    "revision-unknown: graft.dev/rev=defualt is neither a revision nor a tag graft serves (revisions: default; tags: none)",
		unknown: "profile-unknown: graft.dev/inject=mesh-prxy names no profile",
	} {
		if !strings.HasPrefix(got[ns], want) {
			t.Errorf("namespace %s: %q, want it to start %q", ns, got[ns], want)
		}
	}
	table, _ := runAudit(t, kubeconfig, "-n", typo)
	t.Logf("graft audit -n %s:\n%s", typo, table)
	if !strings.Contains(string(table), "revision-unknown") {
		t.Errorf("the table does not report %s", typo)
	}
}
