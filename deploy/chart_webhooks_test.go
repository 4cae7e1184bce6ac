package deploy

import (
	"os"
	"path/filepath"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/internal/registration"
)

// TestChartWebhooksAreGenerated: with every variant (ci/revisions-values.yaml
// has revisions, tags and a revision injecting hostNetwork Pods), the
// chart's webhooks are exactly those `graft webhooks` writes for the
// configuration the chart renders, for the chart's Service: the template
// follows the generator's rules for whatever profiles, revisions and tags
// the values hold. What the generator leaves to overlays the chart sets
// from values of its own (caBundle; failurePolicy and timeoutSeconds, the
// same for every webhook): those are taken as rendered.
func TestChartWebhooksAreGenerated(t *testing.T) {
	h := newHelm(t)
	for _, v := range chartVariants(t, "") {
		t.Run(v.name, func(t *testing.T) {
			out := h.render(t, v.args...)
			mwcs := out.find("MutatingWebhookConfiguration")
			if len(mwcs) != 1 {
				t.Fatalf("%d MutatingWebhookConfigurations", len(mwcs))
			}
			fullname := mwcs[0].name
			got := one[admissionv1.MutatingWebhookConfiguration](t, out, "MutatingWebhookConfiguration", fullname)
			want, err := registration.Webhooks(renderedConfig(t, out, fullname), registration.Options{Service: fullname, Namespace: namespace})
			if err != nil {
				t.Fatalf("graft webhooks refuses the rendered configuration: %v", err)
			}
			if len(got.Webhooks) == 0 {
				t.Fatal("no webhooks")
			}
			first := got.Webhooks[0]
			for i := range got.Webhooks {
				got.Webhooks[i].ClientConfig.CABundle = nil
				if i < len(want.Webhooks) {
					want.Webhooks[i].FailurePolicy, want.Webhooks[i].TimeoutSeconds = first.FailurePolicy, first.TimeoutSeconds
				}
			}
			if d := gocmp.Diff(want.Webhooks, got.Webhooks); d != "" {
				t.Errorf("the chart's webhooks differ from graft webhooks' (-generated +chart):\n%s", d)
			}
		})
	}
}

// TestChartGuaranteesAreGenerated: with every variant, the chart's
// guarantee policies are exactly those `graft guarantee` writes for the
// configuration and templates the chart renders (the built-in templates'
// facts from files/guarantee-facts.json, those of templates.extra from
// policy.templateFacts), for the chart's Service and namespace; their
// bindings take validationActions from the values.
func TestChartGuaranteesAreGenerated(t *testing.T) {
	h := newHelm(t)
	for _, v := range chartVariants(t, "") {
		t.Run(v.name, func(t *testing.T) {
			out := h.render(t, v.args...)
			vaps := out.find("ValidatingAdmissionPolicy")
			if len(vaps) == 0 {
				return // policy.enabled: false
			}
			fullname := out.find("MutatingWebhookConfiguration")[0].name
			dir := t.TempDir()
			for _, o := range out.find("ConfigMap") {
				if o.name != fullname+"-templates" {
					continue
				}
				for name, body := range one[corev1.ConfigMap](t, out, "ConfigMap", o.name).Data {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			rc, err := renderedConfig(t, out, fullname).RevisionsConfig(dir)
			if err != nil {
				t.Fatal(err)
			}
			want, err := registration.Guarantees(rc, registration.Options{Service: fullname, Namespace: namespace})
			if err != nil {
				t.Fatalf("graft guarantee refuses the rendered configuration: %v", err)
			}
			if len(vaps) != len(want) {
				t.Errorf("%d policies, want %d", len(vaps), len(want))
			}
			bindings := 0
			for _, g := range want {
				got := one[admissionv1.ValidatingAdmissionPolicy](t, out, "ValidatingAdmissionPolicy", g.Policy.Name)
				if d := gocmp.Diff(g.Policy.Spec, got.Spec); d != "" {
					t.Errorf("%s differs from graft guarantee's (-generated +chart):\n%s", g.Policy.Name, d)
				}
				if d := gocmp.Diff(g.Policy.Annotations, got.Annotations); d != "" {
					t.Errorf("%s: annotations differ (-generated +chart):\n%s", g.Policy.Name, d)
				}
				for _, wb := range g.Bindings {
					bindings++
					b := one[admissionv1.ValidatingAdmissionPolicyBinding](t, out, "ValidatingAdmissionPolicyBinding", wb.Name)
					// The chart's bindings take validationActions from its values.
					wb.Spec.ValidationActions = b.Spec.ValidationActions
					if d := gocmp.Diff(wb.Spec, b.Spec); d != "" {
						t.Errorf("binding %s differs from graft guarantee's (-generated +chart):\n%s", wb.Name, d)
					}
				}
			}
			if n := len(out.find("ValidatingAdmissionPolicyBinding")); n != bindings {
				t.Errorf("%d bindings, want %d", n, bindings)
			}
		})
	}
}
