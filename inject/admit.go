package inject

import (
	"fmt"
	"slices"
	"time"
)

// admit is Admit, and Explain when ex is not nil.
func (e *Engine) admit(dst, body []byte, o Options, ex *Explanation) ([]byte, Result, error) {
	ps, err := e.profile(o.Profile)
	if err != nil {
		return dst, Result{}, err
	}
	s := e.getScratch()
	defer e.putScratch(s)
	rv := &s.rv
	p := &s.pod
	if err := parseReview(b2s(body), rv, p); err != nil {
		return dst, Result{}, err
	}
	res := Result{Operation: rv.operation, Profile: ps.name, DryRun: rv.dryRun,
		UID: s2b(rv.uid), Namespace: s2b(rv.namespace), Name: s2b(rv.name)}

	if r := decideEnvelope(rv); r != ReasonNone {
		return skip(dst, rv, r, &res), res, nil
	}
	if rv.object == "" {
		return dst, Result{}, fmt.Errorf("%w: request.object is missing for a Pod CREATE", ErrMalformed)
	}
	if slices.Contains(e.impl.excluded, rv.namespace) {
		return skip(dst, rv, ReasonNamespaceExcluded, &res), res, nil
	}
	if !p.metaRead {
		if err := parsePodMeta(rv.object, p); err != nil {
			return dst, Result{}, fmt.Errorf("%w: request.object is not a readable Pod: %w", ErrMalformed, err)
		}
	}
	if len(res.Name) == 0 {
		res.Name = s2b(p.displayName())
	}
	if r := decideMeta(p); r != ReasonNone {
		return skip(dst, rv, r, &res), res, nil
	}
	if err := parsePodSpec(p); err != nil {
		return dst, Result{}, fmt.Errorf("%w: request.object.spec is not a readable Pod spec: %w", ErrMalformed, err)
	}
	if p.hostNetwork && !ps.cfg.InjectHostNetwork {
		return skip(dst, rv, ReasonHostNetwork, &res), res, nil
	}
	if e.late(o.Deadline) {
		return e.fail(dst, rv, ps, ReasonBudgetExceeded, &res), res, nil
	}
	ent, err := e.entryFor(ps, p, s)
	if err != nil {
		return dst, Result{}, err
	}
	if ex != nil {
		ex.Params = ent.params
	}
	if ent.skip {
		return skip(dst, rv, ReasonNoTemplates, &res), res, nil
	}
	if ent.denyMsg != "" {
		res.Decision, res.Reason = DecisionDeny, ent.reason
		if ex != nil {
			ex.Message = ent.denyMsg
			ex.Templates = ent.names
		}
		w := responseWriter{dst: dst}
		w.begin(rv, false)
		w.status(400, "BadRequest", ent.denyMsg)
		return w.end(), res, nil
	}
	pl := ent.plan
	if e.late(o.Deadline) {
		return e.fail(dst, rv, ps, ReasonBudgetExceeded, &res), res, nil
	}
	merge(pl, p, s)
	if len(s.edits) == 0 {
		return skip(dst, rv, ReasonAlreadyInjected, &res), res, nil
	}
	s.shapeKey = appendShapeKey(s.shapeKey[:0], pl.id, s)
	rc := e.impl.shapes.get(s.shapeKey)
	if rc == nil {
		if rc, err = compileRecipe(pl, s); err != nil {
			return e.fail(dst, rv, ps, ReasonInternal, &res), res, nil
		}
		e.impl.shapes.put(s.shapeKey, rc)
	}
	s.tokenVolume = p.tokenVolume()
	if v, ok := p.annotation(annotationLimits); ok && s.injectsContainers() {
		s.resourced = limitRangeDefaults(pl, p, v, s)
	}
	s.patch = appendPatch(s.patch[:0], rc, pl, s)
	if e.late(o.Deadline) {
		return e.fail(dst, rv, ps, ReasonBudgetExceeded, &res), res, nil
	}

	res.Decision = DecisionInject
	res.Templates = pl.templates
	res.PatchOps = len(rc.ops)
	res.PatchBytes = len(s.patch)
	w := responseWriter{dst: dst}
	w.begin(rv, true)
	w.patch(s.patch)
	for _, q := range ent.warnings {
		w.warnRaw(q)
	}
	for _, n := range s.notices {
		w.warn("graft: ", n.kind, ` "`, n.name, `" already exists in the Pod; kept as is, not injected`)
	}
	w.endWarnings()
	w.audit(pl.audit)
	res.Warnings = w.warnings
	if ex != nil {
		ex.Templates = pl.templates
		ex.Patch = append([]byte(nil), s.patch...)
	}
	return w.end(), res, nil
}

// late reports whether the deadline has passed.
func (e *Engine) late(deadline time.Time) bool {
	return !deadline.IsZero() && !e.now().Before(deadline)
}

// decideEnvelope applies the policy that needs only the envelope.
func decideEnvelope(rv *review) Reason {
	switch {
	case rv.kindGroup != "" || rv.kindKind != "Pod":
		return ReasonNotPod
	case rv.subResource != "":
		return ReasonSubresource
	case rv.operation != OpCreate:
		return ReasonOperation
	}
	return ReasonNone
}

// decideMeta applies the policy that needs only the Pod's metadata.
func decideMeta(p *pod) Reason {
	if v, ok := p.label(labelInject); ok && v == "false" {
		return ReasonOptedOut
	}
	if _, ok := p.annotation(annotationMirror); ok {
		return ReasonMirrorPod
	}
	return ReasonNone
}

// skip writes an allowed response without a patch.
func skip(dst []byte, rv *review, r Reason, res *Result) []byte {
	res.Decision, res.Reason = DecisionSkip, r
	w := responseWriter{dst: dst}
	w.begin(rv, true)
	return w.end()
}

// fail answers per the profile's failure mode.
func (e *Engine) fail(dst []byte, rv *review, ps *profileState, r Reason, res *Result) []byte {
	res.Reason = r
	res.Templates, res.PatchOps, res.PatchBytes = nil, 0, 0
	w := responseWriter{dst: dst}
	if ps.cfg.FailureMode == FailDeny {
		res.Decision = DecisionDeny
		w.begin(rv, false)
		w.status(503, "ServiceUnavailable", "graft could not inject sidecars ("+r.String()+"); the profile "+ps.name+" denies Pods it cannot inject, retry the request")
		return w.end()
	}
	res.Decision = DecisionFailOpen
	w.begin(rv, true)
	w.warn("graft: sidecars not injected (", r.String(), "); the Pod is admitted without them")
	w.endWarnings()
	res.Warnings = w.warnings
	return w.end()
}

// Explain admits body like Admit and reports the details behind the answer.
// It allocates freely: it is for humans, not the request path.
func (e *Engine) Explain(body []byte, o Options) (*Explanation, error) {
	ex := &Explanation{}
	resp, res, err := e.admit(nil, body, o, ex)
	if err != nil {
		return nil, err
	}
	ex.Result = res
	ex.Result.UID = slices.Clone(res.UID)
	ex.Result.Namespace = slices.Clone(res.Namespace)
	ex.Result.Name = slices.Clone(res.Name)
	ex.Profile = res.Profile
	ex.Response = resp
	ex.Warnings = responseWarnings(resp)
	return ex, nil
}
