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
	Label     string             `json:"label"`
	LabelFrom string             `json:"labelFrom"`
	Decision  string             `json:"decision"`
	Reason    string             `json:"reason"`
	Profile   string             `json:"profile"`
	Revision  string             `json:"revision"`
	Tag       string             `json:"tag,omitempty"`
	Templates []string           `json:"templates"`
	Params    []ExplainedParam   `json:"params"`
	Warnings  []string           `json:"warnings"`
	Message   string             `json:"message,omitempty"`
	Patch     []manifest.PatchOp `json:"patch"`
	// Audit is a live Pod's audit class (graft explain pod/NAME).
	Audit    *ExplainedAudit `json:"audit,omitempty"`
	excluded bool            // the namespace is never injected
}

// ExplainedAudit is what graft audit says of a live Pod.
type ExplainedAudit struct {
	Class    string `json:"class"`
	Cause    string `json:"cause,omitempty"`
	Revision string `json:"revision,omitempty"`
	Detail   string `json:"detail,omitempty"`
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
				errs = append(errs, d.WrapError(s.What, err))
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
		return nil, errors.Join(errs...)
	}
	if n == 0 {
		return nil, errors.New("no Pods or Pod templates in the input")
	}
	return out.Bytes(), nil
}

// explain explains the Pod at spot: the namespace's selection, then the
// engine's answer, with graft's own warnings about the manifest.
func (a *admitter) explain(d *manifest.Document, spot manifest.PodSpot, rep *reporter) (*Explanation, error) {
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

// ExplainFromCluster explains pod, read from the cluster as object
// ("deployment/web"; for a workload, the Pod it would create now), in
// its namespace ns, with the namespace's labels: the webhook's decision
// for it as if created now, and, with classify (a Pod that exists), its
// audit class.
func ExplainFromCluster(engine audit.Engine, ns audit.Namespace, pod audit.Pod, object string, classify bool) (*Explanation, error) {
	auditor := audit.New(engine)
	out, err := explainPod(engine, auditor, ns, pod)
	if err != nil {
		return nil, err
	}
	out.Source, out.Object = fromCluster, object
	if classify {
		v, err := auditor.Classify(ns, pod)
		if err != nil {
			return nil, err
		}
		out.Audit = &ExplainedAudit{Class: string(v.Class), Cause: v.Cause, Revision: v.Revision, Detail: v.Detail}
	}
	return out, nil
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
	out.Warnings = append(out.Warnings, ex.Warnings...)
	for _, p := range ex.Params {
		out.Params = append(out.Params, ExplainedParam{Template: p.Template, Param: p.Param, Value: p.Value, Source: p.Source})
	}
}
