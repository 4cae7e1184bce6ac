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

// Report is one audit run.
type Report struct {
	// Time is when the run started; Duration how long it took.
	Time     time.Time
	Duration time.Duration
	// Pods are in the order the API server listed them (namespace, name).
	Pods []PodResult
	// Namespaces are those whose graft labels select no webhook, by name.
	Namespaces []NamespaceResult
}

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

// Workloads aggregates the report's Pods per workload, sorted by
// namespace, kind and name.
func (r *Report) Workloads() []WorkloadResult {
	type key struct{ ns, kind, name string }
	idx := map[key]int{}
	var out []WorkloadResult
	detailRank := map[int]int{}
	for i := range r.Pods {
		p := &r.Pods[i]
		k := key{p.Namespace, p.Workload.Kind, p.Workload.Name}
		j, ok := idx[k]
		if !ok {
			j = len(out)
			idx[k] = j
			out = append(out, WorkloadResult{Namespace: p.Namespace, Workload: p.Workload, Classes: map[Class]int{}})
			detailRank[j] = len(urgency())
		}
		w := &out[j]
		w.Pods++
		w.Classes[p.Class]++
		if p.Revision != "" && !slices.Contains(w.Revisions, p.Revision) {
			w.Revisions = append(w.Revisions, p.Revision)
		}
		if r := rank(p.Class); r < detailRank[j] {
			detailRank[j], w.Detail = r, p.Detail
		}
	}
	for i := range out {
		slices.Sort(out[i].Revisions)
	}
	slices.SortStableFunc(out, func(a, b WorkloadResult) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Workload.Kind, b.Workload.Kind), cmp.Compare(a.Workload.Name, b.Workload.Name))
	})
	return out
}

// Count returns the number of Pods per class.
func (r *Report) Count() map[Class]int {
	out := make(map[Class]int, len(Classes()))
	for _, c := range Classes() {
		out[c] = 0
	}
	for i := range r.Pods {
		out[r.Pods[i].Class]++
	}
	return out
}

// Any reports whether a Pod is in one of classes.
func (r *Report) Any(classes []Class) bool {
	for i := range r.Pods {
		if slices.Contains(classes, r.Pods[i].Class) {
			return true
		}
	}
	return false
}
