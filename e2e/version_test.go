package e2e

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// The API server under test is the one the run was built for: the version
// `make e2e-matrix` names (GRAFT_E2E_KUBE_VERSION), or else the one the
// builder module pins. It serves what graft's manifests use:
// admissionregistration.k8s.io/v1 webhooks, ValidatingAdmissionPolicy
// with CEL's list library (new policies may use it from 1.35), and from
// 1.36 MutatingAdmissionPolicy
// (GA in 1.36).
func TestAPIServerIsThePinnedVersion(t *testing.T) {
	want := os.Getenv("GRAFT_E2E_KUBE_VERSION")
	if want == "" {
		mod, err := os.ReadFile("tools/kube-apiserver/go.mod")
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?k8s\.io/kubernetes (v\S+)`).FindSubmatch(mod)
		if m == nil {
			t.Fatal("tools/kube-apiserver/go.mod pins no k8s.io/kubernetes version")
		}
		want = string(m[1])
	}
	if env.serverVersion != want {
		t.Fatalf("kube-apiserver reports %q, want %q", env.serverVersion, want)
	}
	res, err := env.client.Discovery().ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range res.APIResources {
		names = append(names, r.Name)
	}
	served := []string{"mutatingwebhookconfigurations", "validatingadmissionpolicies"}
	if env.serverMinor >= 36 {
		served = append(served, "mutatingadmissionpolicies")
	}
	for _, want := range served {
		if !slices.Contains(names, want) {
			t.Errorf("admissionregistration.k8s.io/v1 does not serve %s: %v", want, names)
		}
	}
}
