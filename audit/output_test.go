package audit

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestWritePrometheus: the text format parses and counts Pods per
// namespace, class and revision; a report without Pods (an empty
// namespace) still says when it ran.
func TestWritePrometheus(t *testing.T) {
	for _, c := range []struct {
		name  string
		pods  []PodResult
		count map[string]float64 // graft_audit_pods by namespace/class/revision
	}{
		{name: "no Pods"},
		{name: "Pods", pods: []PodResult{
			{Namespace: "shop", Name: "a", Workload: Workload{Kind: "Pod", Name: "a"}, Verdict: Verdict{Class: Stale, Revision: "r1"}},
			{Namespace: "shop", Name: "b", Workload: Workload{Kind: "Pod", Name: "b"}, Verdict: Verdict{Class: Stale, Revision: "r1"}},
			{Namespace: "web", Name: "c", Workload: Workload{Kind: "Pod", Name: "c"}, Verdict: Verdict{Class: Missing}},
		}, count: map[string]float64{"shop/stale/r1": 2, "web/missing/": 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Report{Time: time.Unix(1_800_000_000, 0), Duration: 2 * time.Second, Pods: c.pods}
			var buf bytes.Buffer
			if err := r.WritePrometheus(&buf); err != nil {
				t.Fatal(err)
			}
			parser := expfmt.NewTextParser(model.LegacyValidation)
			fams, err := parser.TextToMetricFamilies(strings.NewReader(buf.String()))
			if err != nil {
				t.Fatalf("%v\n%s", err, buf.String())
			}
			if got := fams["graft_audit_last_run_timestamp_seconds"].GetMetric(); len(got) != 1 || got[0].GetGauge().GetValue() != 1_800_000_000 {
				t.Errorf("last run %v, want 1800000000", got)
			}
			got := map[string]float64{}
			for _, m := range fams["graft_audit_pods"].GetMetric() {
				l := map[string]string{}
				for _, p := range m.GetLabel() {
					l[p.GetName()] = p.GetValue()
				}
				got[l["namespace"]+"/"+l["class"]+"/"+l["revision"]] = m.GetGauge().GetValue()
			}
			if len(got) != len(c.count) {
				t.Errorf("graft_audit_pods %v, want %v", got, c.count)
			}
			for k, v := range c.count {
				if got[k] != v {
					t.Errorf("graft_audit_pods %s = %v, want %v", k, got[k], v)
				}
			}
		})
	}
}
