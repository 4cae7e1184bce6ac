package e2e

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// The API server under test is the one the builder module pins, and it
// serves what that version was chosen for: admissionregistration.k8s.io/v1
// MutatingAdmissionPolicy (GA in 1.36).
func TestAPIServerIsThePinnedVersion(t *testing.T) {
	mod, err := os.ReadFile("tools/kube-apiserver/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?k8s\.io/kubernetes (v\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("tools/kube-apiserver/go.mod pins no k8s.io/kubernetes version")
	}
	if want := string(m[1]); env.serverVersion != want {
		t.Fatalf("kube-apiserver reports %q, the builder module pins %q", env.serverVersion, want)
	}
	res, err := env.client.Discovery().ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range res.APIResources {
		names = append(names, r.Name)
	}
	for _, want := range []string{"mutatingwebhookconfigurations", "validatingadmissionpolicies", "mutatingadmissionpolicies"} {
		if !slices.Contains(names, want) {
			t.Errorf("admissionregistration.k8s.io/v1 does not serve %s: %v", want, names)
		}
	}
}
