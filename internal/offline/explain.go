package offline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/manifest"
)

// Explanation is one Pod's explanation, as -o json prints it.
type Explanation struct {
	Source    string `json:"source"`
	Document  int    `json:"document"`
	Object    string `json:"object"`
	Namespace string `json:"namespace"`
	// Label is the namespace's graft.dev/inject value; LabelFrom says
	// where the namespace's labels came from (see selection).
	Label     string   `json:"label"`
	LabelFrom string   `json:"labelFrom"`
	Decision  string   `json:"decision"`
	Reason    string   `json:"reason"`
	Profile   string   `json:"profile"`
	Revision  string   `json:"revision"`
	Tag       string   `json:"tag,omitempty"`
	Templates []string `json:"templates"`
	// Kept are the templates left out under onConflict: keep, and why.
	Kept     []ExplainedKept    `json:"kept,omitempty"`
	Params   []ExplainedParam   `json:"params"`
	Warnings []string           `json:"warnings"`
	Message  string             `json:"message,omitempty"`
	Patch    []manifest.PatchOp `json:"patch"`
	// Audit is a live Pod's audit class (graft explain pod/NAME).
	Audit *ExplainedAudit `json:"audit,omitempty"`
	// Pods are a live workload's Pods and their audit classes (graft
	// explain deploy/NAME).
	Pods []ExplainedPod `json:"pods,omitempty"`
	// Configuration says which configuration judged a Pod read from the
	// cluster: a file, or the ConfigMaps graft's Deployment mounts.
	Configuration string `json:"configuration,omitempty"`
	excluded      bool   // the namespace is never injected
}

// ExplainedAudit is what graft audit says of a live Pod.
type ExplainedAudit struct {
	Class    string `json:"class"`
	Cause    string `json:"cause,omitempty"`
	Revision string `json:"revision,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// ExplainedPod is one of a workload's Pods and what graft audit says of
// it.
type ExplainedPod struct {
	Name string `json:"name"`
	ExplainedAudit
}

// ExplainedKept is a template left out under onConflict: keep, and why
// (what the webhook's warning says).
type ExplainedKept struct {
	Template string `json:"template"`
	Why      string `json:"why"`
}

// ExplainedParam is a template parameter's value and where it came from.
type ExplainedParam struct {
	Template string `json:"template"`
	Param    string `json:"param"`
	Value    string `json:"value"`
	Source   string `json:"source"`
}

// Explain explains every Pod and Pod template of the input, and returns
// the explanations as text (one block per Pod) or, with jsonOut, as one
// JSON object per Pod. It returns every document's errors.
func (r *Run) Explain(jsonOut bool) ([]byte, error) {
	var out bytes.Buffer
	var errs []error
	n := 0
	for _, d := range r.docs {
		spots, err := manifest.FindPods(d)
		if err != nil {
			errs = append(errs, d.WrapError("", err))
			continue
		}
		for _, s := range spots {
			if s.Foreign != "" {
				reportNoTemplate(d, s, r.report)
				continue
			}
			ex, err := r.admitter.explain(d, s, r.report)
			if err != nil {
				errs = append(errs, d.WrapErrorAt(s.Object, s.What, err))
				continue
			}
			if !jsonOut && n > 0 {
				out.WriteByte('\n')
			}
			if err := WriteExplanation(&out, ex, jsonOut); err != nil {
				return nil, err
			}
			n++
		}
	}
	if len(errs) > 0 {
		return nil, manifest.JoinProblems(errs...)
	}
	if n == 0 {
		return nil, errors.New("no Pods or Pod templates in the input")
	}
	return out.Bytes(), nil
}

// explain explains the Pod at spot: the namespace's selection, then the
// engine's answer, with graft's own warnings about the manifest.
func (a *admitter) explain(d *manifest.Document, spot manifest.PodSpot, rep *Report) (*Explanation, error) {
	out := &Explanation{
		Source:    d.Source(),
		Document:  d.Index(),
		Object:    spot.What,
		Templates: []string{},
		Params:    []ExplainedParam{},
		Warnings:  []string{},
		Patch:     []manifest.PatchOp{},
	}
	if spot.Holder == nil {
		ns, err := a.namespaceFor(spot)
		out.Namespace, out.Decision, out.Reason, out.Message = ns, "no-pod-template", "none", spot.NoTemplate
		return out, err
	}
	ns, sel, body, err := a.request(spot)
	if err != nil {
		return nil, err
	}
	out.Namespace, out.Label, out.LabelFrom = ns, sel.label, sel.from
	out.excluded = sel.reason == "namespace-excluded"
	out.Warnings = append(out.Warnings, podWarnings(spot)...)
	if sel.from == fromAssumed {
		rep.note(a.sel.assumption(ns))
	}
	if body == nil {
		out.Decision, out.Reason, out.Message = "not-selected", sel.reason, sel.why
		return out, nil
	}
	ex, err := a.engine.Explain(body, sel.options())
	if err != nil {
		return nil, err
	}
	out.fill(ex)
	if len(ex.Patch) > 0 {
		if out.Patch, err = spot.DocumentOps(ex.Patch); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// LiveObject is an object graft explain KIND/NAME read from the cluster.
type LiveObject struct {
	// Ref is the object as explain names it: "deployment/web".
	Ref string
	// Template is the JSON pointer of the Pod template in the object,
	// which the patch's paths start with; "" for a Pod, which gets its
	// own audit class.
	Template string
	// Pods hands a workload's Pods, as they run, to each; nil for a Pod.
	Pods func(each func(audit.Pod) error) error
}

// ExplainFromCluster explains pod, read from the cluster as obj (for a
// workload, the Pod it would create now), in its namespace ns, with the
// namespace's labels: the webhook's decision for it as if created now,
// and the audit class of the Pod, or of each of the workload's Pods.
func ExplainFromCluster(engine audit.Engine, ns audit.Namespace, pod audit.Pod, obj LiveObject) (*Explanation, error) {
	auditor := audit.New(engine)
	out, err := explainPod(engine, auditor, ns, pod)
	if err != nil {
		return nil, err
	}
	out.Source, out.Object = fromCluster, obj.Ref
	for i := range out.Patch {
		out.Patch[i].Path = obj.Template + out.Patch[i].Path
		if out.Patch[i].From != "" {
			out.Patch[i].From = obj.Template + out.Patch[i].From
		}
	}
	if obj.Pods == nil {
		v, err := auditor.Classify(ns, pod)
		if err != nil {
			return nil, err
		}
		out.Audit = explainedAudit(v)
		return out, nil
	}
	out.Pods = []ExplainedPod{}
	err = obj.Pods(func(p audit.Pod) error {
		v, err := auditor.Classify(ns, p)
		if err != nil {
			return fmt.Errorf("pod %s: %w", p.Name, err)
		}
		out.Pods = append(out.Pods, ExplainedPod{Name: p.Name, ExplainedAudit: *explainedAudit(v)})
		return nil
	})
	return out, err
}

func explainedAudit(v audit.Verdict) *ExplainedAudit {
	return &ExplainedAudit{Class: string(v.Class), Cause: v.Cause, Revision: v.Revision, Detail: v.Detail}
}

// explainPod runs pod through the engine as the webhook its namespace
// selects would.
func explainPod(engine audit.Engine, a *audit.Auditor, ns audit.Namespace, pod audit.Pod) (*Explanation, error) {
	out := &Explanation{Namespace: ns.Name, LabelFrom: fromCluster, Templates: []string{}, Params: []ExplainedParam{},
		Warnings: []string{}, Patch: []manifest.PatchOp{}}
	sel := a.Select(ns)
	out.Label, out.excluded = sel.Label, sel.Reason == "namespace-excluded"
	if sel.Profile == "" {
		out.Decision, out.Reason, out.Message = "not-selected", sel.Reason, sel.Why
		return out, nil
	}
	ex, err := engine.Explain(audit.Review(pod), inject.Options{Profile: sel.Profile, Revision: sel.Revision, PodSecurity: sel.PodSecurity})
	if err != nil {
		return nil, err
	}
	out.fill(ex)
	if len(ex.Patch) > 0 {
		if err := json.Unmarshal(ex.Patch, &out.Patch); err != nil {
			return nil, fmt.Errorf("engine patch: %w", err)
		}
	}
	return out, nil
}

// fill takes the engine's explanation, all but the patch (whose paths
// depend on where the Pod was read).
func (out *Explanation) fill(ex *inject.Explanation) {
	out.Decision, out.Reason = ex.Result.Decision.String(), ex.Result.Reason.String()
	out.Profile, out.Message = ex.Profile, ex.Message
	out.Revision, out.Tag = ex.Result.Revision, ex.Selection.Tag
	out.Templates = append(out.Templates, ex.Templates...)
	for _, k := range ex.Result.Kept {
		out.Kept = append(out.Kept, ExplainedKept{Template: k.Template, Why: k.Why})
	}
	out.Warnings = append(out.Warnings, ex.Warnings...)
	for _, p := range ex.Params {
		out.Params = append(out.Params, ExplainedParam{Template: p.Template, Param: p.Param, Value: p.Value, Source: p.Source})
	}
}
