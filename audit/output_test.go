package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// results is a small run: a Deployment with a stale and a current Pod, a
// bare missing Pod, and a namespace graft does not select.
func results() []PodResult {
	web := Workload{Kind: "Deployment", Name: "web"}
	return []PodResult{
		{Namespace: "a", Name: "web-1", Workload: web, Verdict: Verdict{Class: Current, Revision: "r1"}},
		{Namespace: "a", Name: "web-2", Workload: web, Verdict: Verdict{Class: Stale, Cause: "revision-changed", Revision: "r0", Target: "r1", Detail: "image old -> new"}},
		{Namespace: "a", Name: "solo", Workload: Workload{Kind: "Pod", Name: "solo"}, Verdict: Verdict{Class: Missing, Cause: "admitted-without-graft", Target: "r1"}},
		{Namespace: "b", Name: "x", Workload: Workload{Kind: "Pod", Name: "x"}, Verdict: Verdict{Class: NotSelected}},
	}
}

// write streams rs through a Writer of format and closes it.
func write(t *testing.T, format string, workloads bool, rs []PodResult) (string, *Report) {
	t.Helper()
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	w, err := NewWriter(&out, format, workloads, start)
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport(start)
	for i := range rs {
		rep.Add(&rs[i])
		if err := w.Pod(&rs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(rep); err != nil {
		t.Fatal(err)
	}
	return out.String(), rep
}

func TestJSONStream(t *testing.T) {
	for _, tt := range []struct {
		name string
		rs   []PodResult
	}{{"pods", results()}, {"none", nil}} {
		t.Run(tt.name, func(t *testing.T) {
			out, rep := write(t, "json", false, tt.rs)
			var got struct {
				APIVersion string            `json:"apiVersion"`
				Kind       string            `json:"kind"`
				Time       string            `json:"time"`
				Pods       []jsonPod         `json:"pods"`
				Workloads  []jsonWorkload    `json:"workloads"`
				Namespaces []NamespaceResult `json:"namespaces"`
				Summary    jsonSummary       `json:"summary"`
			}
			dec := json.NewDecoder(strings.NewReader(out))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("not the schema: %v\n%s", err, out)
			}
			if got.APIVersion != ReportVersion || got.Kind != "AuditReport" || got.Time != "2026-11-25T12:00:00Z" {
				t.Errorf("header: %s %s %s", got.APIVersion, got.Kind, got.Time)
			}
			if len(got.Pods) != len(tt.rs) || got.Summary.Pods != len(tt.rs) || rep.Pods() != len(tt.rs) {
				t.Fatalf("%d Pods written, summary %d, report %d; want %d", len(got.Pods), got.Summary.Pods, rep.Pods(), len(tt.rs))
			}
			for i, p := range got.Pods {
				if p.Name != tt.rs[i].Name || p.Class != tt.rs[i].Class || p.TargetRevision != tt.rs[i].Target {
					t.Errorf("pod %d: %+v, want %+v", i, p, tt.rs[i])
				}
			}
			if len(got.Summary.Classes) != len(Classes()) {
				t.Errorf("summary classes %v: want every class", got.Summary.Classes)
			}
			if tt.rs == nil {
				if got.Pods == nil || got.Workloads == nil || got.Namespaces == nil {
					t.Errorf("an empty run must still write empty arrays:\n%s", out)
				}
				return
			}
			want := []jsonWorkload{
				{Namespace: "a", Kind: "Deployment", Name: "web", Pods: 2, Class: Stale, Classes: map[Class]int{Current: 1, Stale: 1}, Revisions: []string{"r0", "r1"}},
				{Namespace: "a", Kind: "Pod", Name: "solo", Pods: 1, Class: Missing, Classes: map[Class]int{Missing: 1}},
				{Namespace: "b", Kind: "Pod", Name: "x", Pods: 1, Class: NotSelected, Classes: map[Class]int{NotSelected: 1}},
			}
			if d := cmp.Diff(want, got.Workloads); d != "" {
				t.Errorf("workloads (-want +got):\n%s", d)
			}
		})
	}
}

func TestTableStream(t *testing.T) {
	// More rows than one aligned page, so the table is flushed midway.
	var rs []PodResult
	for i := range tableRows + 7 {
		rs = append(rs, PodResult{Namespace: "a", Name: fmt.Sprintf("p-%d", i), Workload: Workload{Kind: "Pod", Name: "p"}, Verdict: Verdict{Class: Current, Revision: "r1"}})
	}
	out, _ := write(t, "table", false, rs)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(rs)+1 || strings.Join(strings.Fields(lines[0]), " ") != "NAMESPACE POD CLASS REVISION DETAIL" {
		t.Fatalf("%d lines, header %q", len(lines), lines[0])
	}
	if f := strings.Fields(lines[len(lines)-1]); len(f) != 5 || f[1] != fmt.Sprintf("p-%d", len(rs)-1) || f[2] != "current" {
		t.Errorf("last line %q", lines[len(lines)-1])
	}

	out, _ = write(t, "table", true, results())
	want := []string{
		"NAMESPACE WORKLOAD PODS CLASS REVISION DETAIL",
		"a deployment/web 2 stale=1,current=1 r0,r1 image old -> new",
		"a pod/solo 1 missing=1 - -",
		"b pod/x 1 not-selected=1 - -",
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		got = append(got, strings.Join(strings.Fields(l), " "))
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("workloads table (-want +got):\n%s", d)
	}
}

func TestPrometheusStream(t *testing.T) {
	out, _ := write(t, "prometheus", false, results())
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := map[string]float64{}
	for _, m := range fams["graft_audit_pods"].GetMetric() {
		var k []string
		for _, l := range m.GetLabel() {
			k = append(k, l.GetName()+"="+l.GetValue())
		}
		got[strings.Join(k, ",")] = m.GetGauge().GetValue()
	}
	want := map[string]float64{
		"namespace=a,class=current,revision=r1":    1,
		"namespace=a,class=stale,revision=r0":      1,
		"namespace=a,class=missing,revision=":      1,
		"namespace=b,class=not-selected,revision=": 1,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("graft_audit_pods (-want +got):\n%s", d)
	}
	if n := len(fams["graft_audit_workloads"].GetMetric()); n != 3 {
		t.Errorf("%d graft_audit_workloads series, want 3 (a/stale, a/missing, b/not-selected)", n)
	}
}

// TestPrometheusWithoutPods: a run that found no Pods (an empty namespace
// with -n) still parses and says when it ran.
func TestPrometheusWithoutPods(t *testing.T) {
	out, _ := write(t, "prometheus", false, nil)
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := float64(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC).Unix())
	if got := fams["graft_audit_last_run_timestamp_seconds"].GetMetric(); len(got) != 1 || got[0].GetGauge().GetValue() != want {
		t.Errorf("last run %v, want %v", got, want)
	}
	if n := len(fams["graft_audit_pods"].GetMetric()); n != 0 {
		t.Errorf("%d graft_audit_pods series for no Pods", n)
	}
}

func TestNewWriterRefusesUnknownFormats(t *testing.T) {
	if _, err := NewWriter(&bytes.Buffer{}, "yaml", false, time.Now()); err == nil {
		t.Error("NewWriter accepted -o yaml")
	}
}
