package e2e

import (
	"maps"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/e2e/internal/histo"
)

// mapEvaluationsKey counts MutatingAdmissionPolicy evaluations.
const mapEvaluationsKey = "apiserver_mutating_admission_policy_check_duration_seconds"

// policyEvaluations reads how many times the API server has evaluated the
// MutatingAdmissionPolicy named policy.
func policyEvaluations(t *testing.T, policy string) float64 {
	t.Helper()
	c, token := env.cluster.APIServerHTTP()
	mfs := scrape(t, c, env.cluster.APIServerURL()+"/metrics", token)
	mf, ok := mfs[mapEvaluationsKey]
	if !ok {
		return 0
	}
	return histo.FromFamily(mf, func(m *dto.Metric) bool { return histo.Label(m, "policy") == policy }).Total
}

// TestExportEvaluationsPerCreate measures, as TestOneCallPerCreate does
// for the webhook, how often the API server evaluates the exported
// MutatingAdmissionPolicy per Pod create, with the ServiceAccount plugin
// mounting the token and without. kube-apiserver 1.36 runs an IfNeeded
// policy that changed the Pod again whatever runs after it (it marks
// every policy it ran for reinvocation when the object is left changed,
// the changing one included); the policy's match condition tells the Pod
// it has just injected (the plugin's token mount in its containers
// included) and skips it, so the count is one either way.
func TestExportEvaluationsPerCreate(t *testing.T) {
	f := exported.get(t)
	pair := f.pairs["agent"]
	off := false
	noToken := simplePod("evals-no-token", "app", "worker")
	noToken.Spec.AutomountServiceAccountToken = &off
	cases := []struct {
		name  string
		pod   *corev1.Pod
		check func(*corev1.Pod) []string
	}{
		{"automounted-token", simplePod("evals-token", "app", "worker"), tokenEverywhere},
		{"automount-off", noToken, noTokenAnywhere},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := policyEvaluations(t, "graft-agent")
			createPod(t, pair.policy, c.pod)
			evals := policyEvaluations(t, "graft-agent") - before
			got := getPod(t, pair.policy, c.pod.Name)
			requireAgentInjected(t, got)
			if problems := c.check(got); len(problems) > 0 {
				t.Errorf("stored Pod %s:\n  %s", containerNames(got), strings.Join(problems, "\n  "))
			}
			t.Logf("%s: the API server evaluated graft-agent %g times for one create", c.name, evals)
			if evals != 1 {
				t.Errorf("the API server evaluated graft-agent %g times for one create, want 1 (see docs/concepts/webhook-or-policy.md)", evals)
			}
		})
	}
	// Every profile's templates: app env and mounts, volumes, several
	// templates, onConflict: keep; the token mounted in each.
	for _, profile := range slices.Sorted(maps.Keys(f.pairs)) {
		t.Run("profile-"+profile, func(t *testing.T) {
			policy := "graft-" + profile
			before := policyEvaluations(t, policy)
			p := createPod(t, f.pairs[profile].policy, simplePod("evals-"+profile, "app", "worker"))
			evals := policyEvaluations(t, policy) - before
			if !isInjected(p) {
				t.Fatalf("profile %s did not inject the Pod: %s", profile, containerNames(p))
			}
			if evals != 1 {
				t.Errorf("the API server evaluated %s %g times for one create, want 1", policy, evals)
			}
		})
	}
}
