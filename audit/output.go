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

// jsonReport is the -o json schema (README: Fleet audit).
type jsonReport struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Time       string         `json:"time"`
	Summary    jsonSummary    `json:"summary"`
	Pods       []jsonPod      `json:"pods"`
	Workloads  []jsonWorkload `json:"workloads"`
	// Namespaces whose graft labels select no webhook.
	Namespaces []NamespaceResult `json:"namespaces"`
}

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

// WriteJSON writes r as the documented JSON schema.
func (r *Report) WriteJSON(w io.Writer) error {
	ws := r.Workloads()
	out := jsonReport{APIVersion: ReportVersion, Kind: "AuditReport", Time: r.Time.UTC().Format(time.RFC3339),
		Summary: jsonSummary{Pods: len(r.Pods), Workloads: len(ws), Classes: r.Count()},
		Pods:    make([]jsonPod, 0, len(r.Pods)), Workloads: make([]jsonWorkload, 0, len(ws)),
		Namespaces: append([]NamespaceResult{}, r.Namespaces...)}
	for _, p := range r.Pods {
		out.Pods = append(out.Pods, jsonPod{Namespace: p.Namespace, Name: p.Name, Workload: p.Workload, Class: p.Class,
			Cause: p.Cause, Profile: p.Profile, Revision: p.Revision, TargetRevision: p.Target, Detail: p.Detail, Templates: p.Templates})
	}
	for _, wl := range ws {
		out.Workloads = append(out.Workloads, jsonWorkload{Namespace: wl.Namespace, Kind: wl.Workload.Kind, Name: wl.Workload.Name,
			Pods: wl.Pods, Class: wl.Worst(), Classes: wl.Classes, Revisions: wl.Revisions})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(&out)
}

// WriteTable writes r as kubectl prints tables: one line per Pod, or per
// workload, then the namespaces whose labels select no webhook.
func (r *Report) WriteTable(w io.Writer, workloads bool) error {
	if err := r.writePodTable(w, workloads); err != nil {
		return err
	}
	if len(r.Namespaces) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nNamespaces whose labels select no webhook of graft:")
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tLABELS\tREASON\tDETAIL")
	for _, n := range r.Namespaces {
		labels := names.Inject + "=" + n.Inject
		if n.Revision != "" {
			labels += "," + names.Revision + "=" + n.Revision
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n.Name, labels, n.Reason, n.Detail)
	}
	return tw.Flush()
}

func (r *Report) writePodTable(w io.Writer, workloads bool) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	if workloads {
		fmt.Fprintln(tw, "NAMESPACE\tWORKLOAD\tPODS\tCLASS\tREVISION\tDETAIL")
		for _, wl := range r.Workloads() {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", wl.Namespace, strings.ToLower(wl.Workload.Kind)+"/"+wl.Workload.Name,
				wl.Pods, classCounts(wl.Classes), orDash(strings.Join(wl.Revisions, ",")), orDash(wl.Detail))
		}
		return tw.Flush()
	}
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tCLASS\tREVISION\tDETAIL")
	for _, p := range r.Pods {
		class := string(p.Class)
		if p.Cause != "" {
			class += "/" + p.Cause
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Namespace, p.Name, class, revisionText(p.Verdict), orDash(p.Detail))
	}
	return tw.Flush()
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

// WritePrometheus writes r in the Prometheus text exposition format, for
// node_exporter's textfile collector: graft_audit_pods per namespace,
// class and recorded revision, graft_audit_workloads per namespace and
// most urgent class, and when and how long the run was.
func (r *Report) WritePrometheus(w io.Writer) error {
	type podKey struct {
		ns       string
		class    Class
		revision string
	}
	pods := map[podKey]int{}
	for _, p := range r.Pods {
		pods[podKey{p.Namespace, p.Class, p.Revision}]++
	}
	type wlKey struct {
		ns    string
		class Class
	}
	wls := map[wlKey]int{}
	for _, wl := range r.Workloads() {
		wls[wlKey{wl.Namespace, wl.Worst()}]++
	}
	podFam := family("graft_audit_pods", "Pods per namespace, audit class and the revision their graft.dev/status records.")
	for _, k := range slices.SortedFunc(maps.Keys(pods), func(a, b podKey) int {
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
	fams := []*dto.MetricFamily{podFam, wlFam, last, dur}
	if len(r.Namespaces) > 0 {
		nsFam := family("graft_audit_unselected_namespaces", "Namespaces whose graft labels select no webhook (1 each), by reason.")
		for _, n := range r.Namespaces {
			nsFam.Metric = append(nsFam.Metric, gauge(1, "namespace", n.Name, "reason", n.Reason))
		}
		fams = append(fams, nsFam)
	}
	for _, f := range fams {
		if len(f.Metric) == 0 {
			continue // no Pods (a namespace all of whose creates fail): the format has no empty family
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
