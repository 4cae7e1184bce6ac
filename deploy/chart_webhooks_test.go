package deploy

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"

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
