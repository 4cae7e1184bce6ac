package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/graftdev/graft/internal/names"
)

// ReportVersion is the apiVersion of `graft audit -o json`; a change that
// removes or renames a field gets a new version.
const ReportVersion = "audit.graft.dev/v1alpha1"

// Writer writes a report as its run goes: each Pod as it is classified,
// and what needs every Pod (the summary, the workloads, the Prometheus
// series) once the run is over. Nothing it writes before Close depends on
// a later Pod, so it keeps no Pods.
type Writer interface {
	// Pod writes one Pod's line, in the order the API server lists them.
	Pod(p *PodResult) error
	// Close writes what follows the Pods and flushes.
	Close(r *Report) error
}

// NewWriter writes to w in format "json" (the documented schema), "table"
// (one line per Pod, or per workload with workloads set) or "prometheus"
// (the text format). start is when the run started.
func NewWriter(w io.Writer, format string, workloads bool, start time.Time) (Writer, error) {
	switch format {
	case "json":
		return &jsonWriter{w: w, start: start}, nil
	case "table":
		tw := &tableWriter{tw: tabwriter.NewWriter(w, 0, 8, 3, ' ', 0), workloads: workloads}
		return tw, nil
	case "prometheus":
		return &promWriter{w: w}, nil
	}
	return nil, fmt.Errorf("output format %q: want table, json or prometheus", format)
}

// jsonPod, jsonWorkload and jsonSummary are the -o json schema's
// (apiVersion ReportVersion, kind AuditReport, time, pods, workloads and
// summary, and the namespaces whose graft labels select no webhook; see
// the README's Fleet audit).
type jsonSummary struct {
	Pods      int           `json:"pods"`
	Workloads int           `json:"workloads"`
	Classes   map[Class]int `json:"classes"` // every class, 0 included
}

type jsonPod struct {
	Namespace      string     `json:"namespace"`
	Name           string     `json:"name"`
	Workload       Workload   `json:"workload"`
	Class          Class      `json:"class"`
	Cause          string     `json:"cause,omitempty"`
	Profile        string     `json:"profile,omitempty"`
	Revision       string     `json:"revision,omitempty"`
	TargetRevision string     `json:"targetRevision,omitempty"`
	Detail         string     `json:"detail,omitempty"`
	Templates      []Template `json:"templates,omitempty"`
}

type jsonWorkload struct {
	Namespace string        `json:"namespace"`
	Kind      string        `json:"kind"`
	Name      string        `json:"name"`
	Pods      int           `json:"pods"`
	Class     Class         `json:"class"`   // the most urgent of its Pods' classes
	Classes   map[Class]int `json:"classes"` // classes with Pods only
	Revisions []string      `json:"revisions,omitempty"`
}

// jsonWriter streams the report object: its header, then each Pod as an
// element of "pods", then "workloads" and "summary", which need every Pod
// and so come last (JSON does not order an object's members).
type jsonWriter struct {
	w      io.Writer
	start  time.Time
	opened bool
	pods   int
	err    error
}

// open writes the members before "pods".
func (j *jsonWriter) open() {
	if j.opened {
		return
	}
	j.opened = true
	j.printf("{\n  \"apiVersion\": %q,\n  \"kind\": \"AuditReport\",\n  \"time\": %q,\n  \"pods\": [",
		ReportVersion, j.start.UTC().Format(time.RFC3339))
}

func (j *jsonWriter) printf(format string, args ...any) {
	if j.err == nil {
		_, j.err = fmt.Fprintf(j.w, format, args...)
	}
}

// member writes v indented as a member of the report (an element of one
// of its arrays when array is set).
func (j *jsonWriter) member(v any, array bool) {
	prefix := "  "
	if array {
		prefix = "    "
	}
	b, err := json.MarshalIndent(v, prefix, "  ")
	if err != nil && j.err == nil {
		j.err = err
	}
	j.printf("%s", b)
}

func (j *jsonWriter) Pod(p *PodResult) error {
	j.open()
	if j.pods > 0 {
		j.printf(",")
	}
	j.pods++
	j.printf("\n    ")
	j.member(jsonPod{Namespace: p.Namespace, Name: p.Name, Workload: p.Workload, Class: p.Class, Cause: p.Cause,
		Profile: p.Profile, Revision: p.Revision, TargetRevision: p.Target, Detail: p.Detail, Templates: p.Templates}, true)
	return j.err
}

func (j *jsonWriter) Close(r *Report) error {
	j.open()
	if j.pods > 0 {
		j.printf("\n  ")
	}
	j.printf("],\n  \"workloads\": [")
	ws := r.Workloads()
	for i, wl := range ws {
		if i > 0 {
			j.printf(",")
		}
		j.printf("\n    ")
		j.member(jsonWorkload{Namespace: wl.Namespace, Kind: wl.Workload.Kind, Name: wl.Workload.Name,
			Pods: wl.Pods, Class: wl.Worst(), Classes: wl.Classes, Revisions: wl.Revisions}, true)
	}
	if len(ws) > 0 {
		j.printf("\n  ")
	}
	j.printf("],\n  \"namespaces\": [")
	for i, n := range r.Namespaces {
		if i > 0 {
			j.printf(",")
		}
		j.printf("\n    ")
		j.member(n, true)
	}
	if len(r.Namespaces) > 0 {
		j.printf("\n  ")
	}
	j.printf("],\n  \"summary\": ")
	j.member(jsonSummary{Pods: r.Pods(), Workloads: len(ws), Classes: r.Count()}, false)
	j.printf("\n}\n")
	return j.err
}

// tableRows is how many Pod lines the table aligns at once: its columns
// are as wide as the widest cell among them, the next rows' may differ.
const tableRows = 500

// tableWriter writes the table kubectl-style: one line per Pod, aligned a
// page at a time, or one per workload at the end.
type tableWriter struct {
	tw        *tabwriter.Writer
	workloads bool
	rows      int
}

func (t *tableWriter) Pod(p *PodResult) error {
	if t.workloads {
		return nil
	}
	if t.rows == 0 {
		fmt.Fprintln(t.tw, "NAMESPACE\tPOD\tCLASS\tREVISION\tDETAIL")
	}
	t.rows++
	class := string(p.Class)
	if p.Cause != "" {
		class += "/" + p.Cause
	}
	fmt.Fprintf(t.tw, "%s\t%s\t%s\t%s\t%s\n", p.Namespace, p.Name, class, revisionText(p.Verdict), orDash(p.Detail))
	if t.rows%tableRows == 0 {
		return t.tw.Flush()
	}
	return nil
}

// Close writes the workloads' lines (with workloads set), then the
// namespaces whose labels select no webhook.
func (t *tableWriter) Close(r *Report) error {
	if !t.workloads {
		if t.rows == 0 {
			fmt.Fprintln(t.tw, "NAMESPACE\tPOD\tCLASS\tREVISION\tDETAIL")
		}
	} else {
		fmt.Fprintln(t.tw, "NAMESPACE\tWORKLOAD\tPODS\tCLASS\tREVISION\tDETAIL")
		for _, wl := range r.Workloads() {
			fmt.Fprintf(t.tw, "%s\t%s\t%d\t%s\t%s\t%s\n", wl.Namespace, strings.ToLower(wl.Workload.Kind)+"/"+wl.Workload.Name,
				wl.Pods, classCounts(wl.Classes), orDash(strings.Join(wl.Revisions, ",")), orDash(wl.Detail))
		}
	}
	if err := t.tw.Flush(); err != nil || len(r.Namespaces) == 0 {
		return err
	}
	fmt.Fprintln(t.tw, "\nNamespaces whose labels select no webhook of graft:")
	fmt.Fprintln(t.tw, "NAMESPACE\tLABELS\tREASON\tDETAIL")
	for _, n := range r.Namespaces {
		labels := names.Inject + "=" + n.Inject
		if n.Revision != "" {
			labels += "," + names.Revision + "=" + n.Revision
		}
		fmt.Fprintf(t.tw, "%s\t%s\t%s\t%s\n", n.Name, labels, n.Reason, n.Detail)
	}
	return t.tw.Flush()
}

// classCounts is e.g. "stale=2,current=1", most urgent first.
func classCounts(m map[Class]int) string {
	var parts []string
	for _, c := range urgency() {
		if n := m[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", c, n))
		}
	}
	return strings.Join(parts, ",")
}

// revisionText is the recorded revision, and where graft would take the
// Pod when that differs: "old->new", "none->new".
func revisionText(v Verdict) string {
	rev := v.Revision
	if (v.Class == Stale || v.Class == Missing) && v.Target != "" && v.Target != rev {
		return cmpOr(rev, "none") + "->" + v.Target
	}
	return orDash(rev)
}

func cmpOr(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

func orDash(s string) string { return cmpOr(s, "-") }

// promWriter writes the Prometheus text exposition format, for
// node_exporter's textfile collector: graft_audit_pods per namespace,
// class and recorded revision, graft_audit_workloads per namespace and
// most urgent class, graft_audit_unselected_namespaces per namespace
// whose labels select no webhook, and when and how long the run was. Every series
// needs every Pod, so it writes at Close only.
type promWriter struct{ w io.Writer }

func (*promWriter) Pod(*PodResult) error { return nil }

func (p *promWriter) Close(r *Report) error {
	w := p.w
	pods := r.series
	type wlKey struct {
		ns    string
		class Class
	}
	wls := map[wlKey]int{}
	for _, wl := range r.Workloads() {
		wls[wlKey{wl.Namespace, wl.Worst()}]++
	}
	podFam := family("graft_audit_pods", "Pods per namespace, audit class and the revision their "+names.Status+" records.")
	for _, k := range slices.SortedFunc(maps.Keys(pods), func(a, b seriesKey) int {
		return strings.Compare(a.ns+"\x00"+string(a.class)+"\x00"+a.revision, b.ns+"\x00"+string(b.class)+"\x00"+b.revision)
	}) {
		podFam.Metric = append(podFam.Metric, gauge(float64(pods[k]), "namespace", k.ns, "class", string(k.class), "revision", k.revision))
	}
	wlFam := family("graft_audit_workloads", "Workloads per namespace and the most urgent audit class of their Pods.")
	for _, k := range slices.SortedFunc(maps.Keys(wls), func(a, b wlKey) int {
		return strings.Compare(a.ns+"\x00"+string(a.class), b.ns+"\x00"+string(b.class))
	}) {
		wlFam.Metric = append(wlFam.Metric, gauge(float64(wls[k]), "namespace", k.ns, "class", string(k.class)))
	}
	last := family("graft_audit_last_run_timestamp_seconds", "When the audit run started, in seconds since the Unix epoch.")
	last.Metric = append(last.Metric, gauge(float64(r.Time.UnixNano())/1e9))
	dur := family("graft_audit_last_run_duration_seconds", "How long the audit run took.")
	dur.Metric = append(dur.Metric, gauge(r.Duration.Seconds()))
	nsFam := family("graft_audit_unselected_namespaces", "Namespaces whose graft labels select no webhook (1 each), by reason.")
	for _, n := range r.Namespaces {
		nsFam.Metric = append(nsFam.Metric, gauge(1, "namespace", n.Name, "reason", n.Reason))
	}
	for _, f := range []*dto.MetricFamily{podFam, wlFam, last, dur, nsFam} {
		if len(f.Metric) == 0 {
			// No Pods (an empty namespace with -n): the text format has
			// no way to write a family without samples.
			continue
		}
		if _, err := expfmt.MetricFamilyToText(w, f); err != nil {
			return fmt.Errorf("prometheus output: %w", err)
		}
	}
	return nil
}

func family(name, help string) *dto.MetricFamily {
	return &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: dto.MetricType_GAUGE.Enum()}
}

func gauge(v float64, labels ...string) *dto.Metric {
	m := &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(v)}}
	for i := 0; i+1 < len(labels); i += 2 {
		m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(labels[i]), Value: proto.String(labels[i+1])})
	}
	return m
}
