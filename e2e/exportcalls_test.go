package e2e

import (
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
// mounting the token and without. kube-apiserver 1.36 evaluates an
// IfNeeded policy that changed the Pod a second time whatever runs after
// it, so mirroring the plugin's token mount into the injected containers,
// as the engine does to be called once, would save nothing: the count is
// two either way, and the second evaluation changes nothing (the policy
// is a fixed point of its own output and of the plugin's re-run).
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
			if evals != 2 {
				t.Errorf("the API server evaluated graft-agent %g times for one create, want 2 (see the README's cost row)", evals)
			}
		})
	}
}
