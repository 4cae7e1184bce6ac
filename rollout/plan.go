// Package rollout turns `graft audit`'s classification into action: a
// plan of the workloads to restart (as `kubectl rollout restart` does) so
// their Pods come back through graft, and of the Pods whose sidecars can
// be upgraded in place; what a restart may not touch (a budget that
// allows no disruption, Pods of Jobs, bare Pods) is said, never forced.
// It decides; internal/live reads and writes the cluster. Every class and
// cause comes from package audit: there is no second definition of stale
// or missing here.
package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/graftdev/graft/audit"
)

// Owner is the workload a Pod belongs to, as the audit names it (a
// Deployment's Pods are the Deployment's, through their ReplicaSet).
type Owner struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
}

func (o Owner) String() string {
	return o.Namespace + "/" + strings.ToLower(o.Kind) + "/" + o.Name
}

// Restartable reports whether graft restarts owners of kind: the
// controllers whose rollout replaces every Pod from its template.
func Restartable(kind string) bool {
	switch kind {
	case "Deployment", "StatefulSet", "DaemonSet":
		return true
	}
	return false
}

// Action is what the plan does with an owner.
type Action string

const (
	// Restart: a rollout restart (the pod-template annotation
	// kubectl.kubernetes.io/restartedAt), then a wait for it to complete.
	Restart Action = "restart"
	// InPlace: each Pod's sidecar images and record patched in place; the
	// kubelet restarts only those containers.
	InPlace Action = "in-place"
	// Report: listed, never touched (Pods of Jobs, bare Pods, Pods no
	// restart would inject).
	Report Action = "report"
)

// Pod is one Pod that put its owner on the plan.
type Pod struct {
	Name  string      `json:"name"`
	Class audit.Class `json:"class"`
	Cause string      `json:"cause,omitempty"`
	// Refusal says why the Pod cannot be upgraded in place (--in-place).
	Refusal Refusal `json:"inPlaceRefusal,omitempty"`
	// Detail is the audit's line for people, or the refusal's.
	Detail string `json:"detail,omitempty"`
	// Upgrade is the in-place patch (InPlace owners only).
	Upgrade *Upgrade `json:"upgrade,omitempty"`
}

// Item is one owner of the plan, and once applied what became of it.
type Item struct {
	Owner
	Action Action `json:"action"`
	// Why says why the owner is reported rather than acted on.
	Why  string `json:"why,omitempty"`
	Pods []Pod  `json:"pods"`
	// State and Message are the outcome: planned until applied.
	State   State  `json:"state"`
	Message string `json:"message,omitempty"`
}

// State is what became of an Item.
type State string

const (
	Planned State = "planned"
	// Done: restarted and rolled out, or every Pod upgraded in place.
	Done State = "done"
	// SkippedBudget: a PodDisruptionBudget selecting the owner's Pods
	// allowed no disruption when its turn came.
	SkippedBudget State = "skipped-pdb"
	// Failed: the rollout did not complete in time, or a write failed.
	Failed State = "failed"
	// NotStarted: the run stopped at a failure before this owner.
	NotStarted State = "not-started"
	// Reported: a Report item, left as it is.
	Reported State = "reported"
)

// Plan is the owners to act on, grouped by namespace and kind.
type Plan struct {
	Items []Item
}

// restartFixes reports whether Pods of class and cause come back as graft
// would inject them now from a restart: stale Pods (unless graft would
// refuse them now), and Pods missing graft because it did not answer or
// the namespace was labelled after them. A Pod no webhook of graft is
// called for, or one graft would deny, would come back the same, or not
// at all.
func restartFixes(c audit.Class, cause string) (bool, string) {
	switch {
	case cause == audit.CauseWouldBeDenied:
		return false, "graft would deny its Pods now: a restart would leave it without them"
	case c == audit.Stale:
		return true, ""
	case c == audit.Missing && cause == audit.CauseNotCalled:
		return false, "no webhook of graft is called for its namespace: a restart would not inject it"
	case c == audit.Missing:
		return true, ""
	}
	return false, ""
}

// Planner builds a Plan from the audit's results, one Pod at a time: it
// keeps the Pods that put an owner on the plan, not the others.
type Planner struct {
	classes []audit.Class
	items   map[Owner]*Item
}

// NewPlanner plans for Pods of classes (nil: stale and missing).
func NewPlanner(classes []audit.Class) *Planner {
	if len(classes) == 0 {
		classes = []audit.Class{audit.Stale, audit.Missing}
	}
	return &Planner{classes: classes, items: map[Owner]*Item{}}
}

// Wants reports whether a Pod with verdict v goes on the plan.
func (p *Planner) Wants(v audit.Verdict) bool {
	return slices.Contains(p.classes, v.Class) && (v.Class == audit.Stale || v.Class == audit.Missing)
}

// Add puts r's Pod on the plan if its class is wanted; up, when not nil,
// is its in-place upgrade, else refusal says why it has none ("" when
// in-place upgrades were not asked for).
func (p *Planner) Add(r *audit.PodResult, up *Upgrade, refusal Refusal, why string) {
	if !p.Wants(r.Verdict) {
		return
	}
	o := Owner{Namespace: r.Namespace, Kind: r.Workload.Kind, Name: r.Workload.Name}
	pod := Pod{Name: r.Name, Class: r.Class, Cause: r.Cause, Refusal: refusal, Detail: r.Detail, Upgrade: up}
	if refusal != "" {
		pod.Detail = why
	}
	action, reason := Restart, ""
	fixes, notFixed := restartFixes(r.Class, r.Cause)
	switch {
	case up != nil:
		action = InPlace
	case !fixes:
		action, reason = Report, notFixed
	case !Restartable(o.Kind):
		action, reason = Report, notRestartable(o.Kind)
	}
	// An owner whose Pods cannot all be upgraded in place is restarted:
	// its in-place Pods are replaced with the rest.
	key := o
	if action == InPlace {
		key.Kind += "\x00in-place"
	}
	it, ok := p.items[key]
	if !ok {
		it = &Item{Owner: o, Action: action, Why: reason, State: Planned}
		p.items[key] = it
	}
	if action == Restart && it.Action == Report {
		it.Action, it.Why = Restart, ""
	}
	it.Pods = append(it.Pods, pod)
}

func notRestartable(kind string) string {
	switch kind {
	case "Job", "CronJob":
		return "Pods of a " + kind + " run to completion: graft never deletes them; the next Job's Pods are injected"
	case "Pod":
		return "a bare Pod: graft never deletes it; recreate it to inject it"
	case "ReplicaSet":
		return "a ReplicaSet without a Deployment does not replace its Pods when its template changes: delete them to replace them"
	}
	return fmt.Sprintf("owned by a %s, which graft does not restart", kind)
}

// Plan returns the plan: owners sorted by namespace, kind and name,
// in-place upgrades of an owner before its restart (none when the owner
// is restarted: a restart replaces every Pod), Pods by name.
func (p *Planner) Plan() *Plan {
	// Owners' items first, then their in-place Pods, so that a fold
	// lands in the item the plan returns whatever order the map gives;
	// the planner's own items are left as they are (Plan may be called
	// again).
	out := &Plan{}
	restart := map[Owner]int{}
	for k, it := range p.items {
		if k != it.Owner {
			continue
		}
		item := *it
		item.Pods = slices.Clone(it.Pods)
		if item.Action == Restart {
			restart[item.Owner] = len(out.Items)
		}
		out.Items = append(out.Items, item)
	}
	for k, it := range p.items {
		if k == it.Owner {
			continue
		}
		i, restarted := restart[it.Owner]
		if !restarted {
			item := *it
			item.Pods = slices.Clone(it.Pods)
			out.Items = append(out.Items, item)
			continue
		}
		// Fold the owner's in-place Pods into its restart.
		for _, pod := range it.Pods {
			pod.Upgrade = nil
			out.Items[i].Pods = append(out.Items[i].Pods, pod)
		}
	}
	for i := range out.Items {
		slices.SortFunc(out.Items[i].Pods, func(a, b Pod) int { return cmp.Compare(a.Name, b.Name) })
		if out.Items[i].Action == Report {
			out.Items[i].State = Reported
		}
	}
	slices.SortFunc(out.Items, func(a, b Item) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name),
			cmp.Compare(actionOrder(a.Action), actionOrder(b.Action)))
	})
	return out
}

func actionOrder(a Action) int { return slices.Index([]Action{InPlace, Restart, Report}, a) }

// Count is how many items have action a.
func (p *Plan) Count(a Action) int {
	n := 0
	for _, it := range p.Items {
		if it.Action == a {
			n++
		}
	}
	return n
}

// States counts the items per state.
func (p *Plan) States() map[State]int {
	out := map[State]int{}
	for _, it := range p.Items {
		out[it.State]++
	}
	return out
}
