package audit

import (
	"cmp"
	"slices"
	"time"
)

// Workload is the top owner of a Pod: Deployment, StatefulSet, DaemonSet,
// CronJob, Job, ReplicaSet (without a Deployment), another controller,
// or the Pod itself (Kind "Pod").
type Workload struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// PodResult is one Pod's line of a report.
type PodResult struct {
	Namespace string
	Name      string
	Workload  Workload
	Verdict
}

// Report is one audit run, aggregated as its Pods are added: it keeps
// counts per class, per workload and per Prometheus series, which grow
// with namespaces, workloads and revisions, not with Pods. The Pods
// themselves go out through a Writer as they are classified, so auditing
// a fleet takes the memory of one LIST page.
type Report struct {
	// Time is when the run started; Duration how long it took.
	Time     time.Time
	Duration time.Duration
	// Namespaces are those whose graft labels select no webhook, by name
	// (few: set before the Pods are listed).
	Namespaces []NamespaceResult

	pods      int
	classes   map[Class]int
	workloads map[workloadKey]*workloadTally
	series    map[seriesKey]int
}

type workloadKey struct{ ns, kind, name string }

// workloadTally is a WorkloadResult being added to, with the urgency of
// the Pod its detail came from.
type workloadTally struct {
	WorkloadResult
	detailRank int
}

// seriesKey is one graft_audit_pods series.
type seriesKey struct {
	ns       string
	class    Class
	revision string
}

// NewReport starts a report of a run that started at t.
func NewReport(t time.Time) *Report {
	return &Report{Time: t, classes: map[Class]int{}, workloads: map[workloadKey]*workloadTally{}, series: map[seriesKey]int{}}
}

// Add counts one Pod's result.
func (r *Report) Add(p *PodResult) {
	r.pods++
	r.classes[p.Class]++
	r.series[seriesKey{p.Namespace, p.Class, p.Revision}]++
	k := workloadKey{p.Namespace, p.Workload.Kind, p.Workload.Name}
	w, ok := r.workloads[k]
	if !ok {
		w = &workloadTally{WorkloadResult: WorkloadResult{Namespace: p.Namespace, Workload: p.Workload, Classes: map[Class]int{}}, detailRank: len(urgency())}
		r.workloads[k] = w
	}
	w.Pods++
	w.Classes[p.Class]++
	if p.Revision != "" && !slices.Contains(w.Revisions, p.Revision) {
		w.Revisions = append(w.Revisions, p.Revision)
	}
	if rk := rank(p.Class); rk < w.detailRank {
		w.detailRank, w.Detail = rk, p.Detail
	}
}

// Pods is how many Pods the report counts.
func (r *Report) Pods() int { return r.pods }

// WorkloadResult aggregates the Pods of one workload.
type WorkloadResult struct {
	Namespace string
	Workload  Workload
	// Classes counts the workload's Pods per class.
	Classes map[Class]int
	// Revisions are the revisions its Pods' records name, sorted.
	Revisions []string
	// Detail is the detail of its first Pod in the most urgent class.
	Detail string
	Pods   int
}

// Worst is the workload's most urgent class, in the order spoofed,
// conflict, missing, stale, current, opted-out, not-selected.
func (w *WorkloadResult) Worst() Class {
	for _, c := range urgency() {
		if w.Classes[c] > 0 {
			return c
		}
	}
	return NotSelected
}

func urgency() []Class {
	return []Class{Spoofed, Conflict, Missing, Stale, Current, OptedOut, NotSelected}
}

func rank(c Class) int { return slices.Index(urgency(), c) }

// Differs reports whether a Pod of class c differs from what graft would
// make of it now: stale, missing, conflict or spoofed, the classes more
// urgent than current.
func (c Class) Differs() bool { return rank(c) < rank(Current) }

// Workloads is the report's Pods per workload, sorted by namespace, kind
// and name.
func (r *Report) Workloads() []WorkloadResult {
	out := make([]WorkloadResult, 0, len(r.workloads))
	for _, w := range r.workloads {
		wr := w.WorkloadResult
		wr.Revisions = slices.Sorted(slices.Values(w.Revisions))
		out = append(out, wr)
	}
	slices.SortFunc(out, func(a, b WorkloadResult) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Workload.Kind, b.Workload.Kind), cmp.Compare(a.Workload.Name, b.Workload.Name))
	})
	return out
}

// Count returns the number of Pods per class, every class included.
func (r *Report) Count() map[Class]int {
	out := make(map[Class]int, len(Classes()))
	for _, c := range Classes() {
		out[c] = r.classes[c]
	}
	return out
}

// Any reports whether a Pod is in one of classes.
func (r *Report) Any(classes []Class) bool {
	for _, c := range classes {
		if r.classes[c] > 0 {
			return true
		}
	}
	return false
}
