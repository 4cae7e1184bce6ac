package inject

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/graftdev/graft/internal/names"
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
	s.budget.start(o.Deadline, e.now)
	switch err := parsePodSpec(p, &s.budget); {
	case errors.Is(err, errBudget):
		return e.fail(dst, rv, ps, ReasonBudgetExceeded, &res), res, nil
	case err != nil:
		return dst, Result{}, fmt.Errorf("%w: request.object.spec is not a readable Pod spec: %w", ErrMalformed, err)
	}
	if p.hostNetwork && !ps.cfg.InjectHostNetwork {
		return skip(dst, rv, ReasonHostNetwork, &res), res, nil
	}
	if s.budget.check() {
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
	if p.os.targets()&pl.os == 0 {
		if ex != nil {
			ex.Templates = ent.plan.templates
			ex.Message = fmt.Sprintf("the Pod runs on %s (%s); the templates (%s) run on %s",
				p.os.targets(), p.os.why(pl.os), strings.Join(pl.templates, ", "), pl.os)
		}
		return skip(dst, rv, ReasonOS, &res), res, nil
	}
	if msg := pl.nsDenial(o.PodSecurity); msg != "" {
		return e.deny(dst, rv, ReasonPodSecurity, msg, &res, ex), res, nil
	}
	if s.budget.check() {
		return e.fail(dst, rv, ps, ReasonBudgetExceeded, &res), res, nil
	}
	if ex != nil {
		explainStatus(ex, pl, p, &e.impl.sidecars, ps.cfg.PodRevision)
	}
	mo := mergeOptions{keep: ps.cfg.OnConflict == ConflictKeep, repairs: true, podRevision: ps.cfg.PodRevision, names: &e.impl.sidecars}
	switch out := merge(pl, mo, p, s, &e.impl.records); out {
	case mergeConflict:
		s.patch = conflictMessage(s.patch[:0], s.conflict, ps.name)
		return e.denyConflict(dst, rv, b2s(s.patch), &res, ex), res, nil
	case mergeUpgrade, mergeRepair:
		rw, err := e.rework(ps, pl, rv.object, out == mergeUpgrade, &s.budget)
		switch {
		case errors.Is(err, errBudget) || err == nil && s.budget.check():
			return e.fail(dst, rv, ps, ReasonBudgetExceeded, &res), res, nil
		case errors.Is(err, errTooLarge):
			return e.failTooLarge(dst, rv, ps, tooLarge{what: "patch", limit: e.cfg.MaxPatchBytes}, &res, ex), res, nil
		case err != nil:
			return e.fail(dst, rv, ps, ReasonInternal, &res), res, nil
		case rw.denyMsg != "":
			return e.deny(dst, rv, rw.reason, rw.denyMsg, &res, ex), res, nil
		case len(rw.patch) > e.cfg.MaxPatchBytes:
			return e.failTooLarge(dst, rv, ps, tooLarge{what: "patch", size: len(rw.patch), limit: e.cfg.MaxPatchBytes}, &res, ex), res, nil
		}
		return e.answer(dst, rv, ent, rw.patch, rw.ops, rw.notices, &res, ex), res, nil
	}
	if len(s.podAdds) > 0 && ps.cfg.PodResources == PodResourcesDeny {
		return e.deny(dst, rv, ReasonPodResources, s.podResourcesDenial(pl, ps.name), &res, ex), res, nil
	}
	if s.budget.check() {
		return e.fail(dst, rv, ps, ReasonBudgetExceeded, &res), res, nil
	}
	if len(s.edits) == 0 {
		return e.answer(dst, rv, ent, nil, 0, s.notices, &res, ex), res, nil
	}
	if tl, over := s.annotationsTooLarge(pl, p, rv.object, e.impl.maxAnnotations); over {
		return e.failTooLarge(dst, rv, ps, tl, &res, ex), res, nil
	}
	ops, err := e.writePatch(pl, p, s)
	switch {
	case errors.Is(err, errBudget):
		return e.fail(dst, rv, ps, ReasonBudgetExceeded, &res), res, nil
	case errors.Is(err, errTooLarge):
		return e.failTooLarge(dst, rv, ps, tooLarge{what: "patch", limit: e.cfg.MaxPatchBytes}, &res, ex), res, nil
	case err != nil:
		return e.fail(dst, rv, ps, ReasonInternal, &res), res, nil
	}
	if s.budget.check() {
		return e.fail(dst, rv, ps, ReasonBudgetExceeded, &res), res, nil
	}
	return e.answer(dst, rv, ent, s.patch, ops, s.notices, &res, ex), res, nil
}

// errTooLarge: the patch passed Config.MaxPatchBytes while being written.
var errTooLarge = errors.New("patch too large")

// writePatch appends to s.patch the patch for the edits merge left in s,
// replaying the cached recipe of each edit's shape (compiled on a miss),
// and returns the number of operations. It stops with errBudget when the
// budget runs out and errTooLarge when the patch passes
// Config.MaxPatchBytes, so neither a Pod's size nor its author decides
// how long it runs or how much it writes.
func (e *Engine) writePatch(pl *plan, p *pod, s *scratch) (int, error) {
	s.tokenVolume = p.tokenVolume()
	if v, ok := p.annotation(names.LimitRangerAnnotation); ok && s.injectsContainers() {
		s.resourced = limitRangeDefaults(pl, p, v, s)
	}
	for i := range s.recent {
		s.recent[i].rc = nil // the keys' buffers are kept
	}
	if err := e.recipes(pl, s); err != nil {
		return 0, err
	}
	s.patch = append(s.patch[:0], '[')
	ops := 0
	for i := range s.edits {
		if s.budget.spent() {
			return 0, errBudget
		}
		if len(s.patch) > e.cfg.MaxPatchBytes {
			return 0, errTooLarge
		}
		rc := s.recipes[i]
		s.patch = appendEditOps(s.patch, rc, &s.edits[i], pl, s)
		ops += len(rc.ops)
	}
	if ops > 0 {
		s.patch = s.patch[:len(s.patch)-1] // the last op's comma
	}
	s.patch = append(s.patch, ']')
	var podOps int
	s.patch, podOps = appendPodResourceOps(s.patch, p, s)
	ops += podOps
	if len(s.patch) > e.cfg.MaxPatchBytes {
		return 0, errTooLarge
	}
	return ops, nil
}

// recipe returns the recipe for edit ed's shape: the one the previous edit
// of the same target used when the shape is the same (an app container's
// env is most often shaped like the one before), else the cached one,
// else a new one, cached.
func (e *Engine) recipe(pl *plan, ed *edit, s *scratch) (*patchRecipe, error) {
	s.shapeKey = appendShapeKey(s.shapeKey[:0], pl.id, ed, s)
	last := &s.recent[ed.target]
	if last.rc != nil && bytes.Equal(last.key, s.shapeKey) {
		return last.rc, nil
	}
	rc, _ := e.impl.shapes.get(s.shapeKey)
	if rc == nil {
		var err error
		if rc, err = compileRecipe(pl, ed, s); err != nil {
			return nil, err
		}
		e.impl.shapes.put(s.shapeKey, rc)
	}
	last.key, last.rc = append(last.key[:0], s.shapeKey...), rc
	return rc, nil
}

// answer writes an allowed response: with patch (ops operations), or
// without one as already injected, and the warnings.
func (e *Engine) answer(dst []byte, rv *review, ent *planEntry, patch []byte, ops int, notices []notice, res *Result, ex *Explanation) []byte {
	w := responseWriter{dst: dst}
	w.begin(rv, true)
	res.Kept = keptTemplates(notices)
	if patch == nil {
		res.Decision, res.Reason = DecisionSkip, ReasonAlreadyInjected
	} else {
		res.Decision = DecisionInject
		res.Templates = injectedTemplates(ent.plan.templates, res.Kept)
		res.PatchOps = ops
		res.PatchBytes = len(patch)
		w.patch(patch)
		for _, q := range ent.warnings {
			w.warnRaw(q)
		}
	}
	for i := range notices {
		w.writeNotice(&notices[i])
	}
	w.endWarnings()
	if patch != nil {
		w.audit(ent.plan.audit)
	}
	res.Warnings = w.warnings
	if ex != nil && patch != nil {
		ex.Templates = res.Templates
		ex.Patch = append([]byte(nil), patch...)
	}
	return w.end()
}

// denyConflict refuses a Pod that holds an object named like graft's that
// graft did not inject. 400, not 409: the request can never succeed as
// it is, and clients retry a 409 Conflict (client-go's RetryOnConflict),
// which here would only repeat the denial.
func (e *Engine) denyConflict(dst []byte, rv *review, msg string, res *Result, ex *Explanation) []byte {
	return e.deny(dst, rv, ReasonConflict, msg, res, ex)
}

// deny refuses a Pod for reason with msg, as a 400 Bad Request.
func (e *Engine) deny(dst []byte, rv *review, reason Reason, msg string, res *Result, ex *Explanation) []byte {
	res.Decision, res.Reason = DecisionDeny, reason
	if ex != nil {
		ex.Message = strings.Clone(msg) // msg may view the scratch
	}
	w := responseWriter{dst: dst}
	w.begin(rv, false)
	w.status(400, "BadRequest", msg)
	return w.end()
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
	if v, ok := p.label(names.Inject); ok && v == "false" {
		return ReasonOptedOut
	}
	if _, ok := p.annotation(names.MirrorAnnotation); ok {
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
	return e.failWith(dst, rv, ps, r, "", res)
}

// failTooLarge answers per the failure mode a Pod whose injection passes
// a limit, naming the limit (and telling Explain).
func (e *Engine) failTooLarge(dst []byte, rv *review, ps *profileState, t tooLarge, res *Result, ex *Explanation) []byte {
	var buf [64]byte
	cause := t.appendCause(buf[:0])
	if ex != nil {
		ex.Message = "too large: " + string(cause)
	}
	return e.failWith(dst, rv, ps, ReasonTooLarge, b2s(cause), res)
}

// failWith answers per the profile's failure mode for reason r, with
// cause (may be empty) saying more.
func (e *Engine) failWith(dst []byte, rv *review, ps *profileState, r Reason, cause string, res *Result) []byte {
	res.Reason = r
	res.Templates, res.PatchOps, res.PatchBytes = nil, 0, 0
	sep := ""
	if cause != "" {
		sep = ": "
	}
	w := responseWriter{dst: dst}
	if ps.cfg.FailureMode == FailDeny {
		res.Decision = DecisionDeny
		w.begin(rv, false)
		// Retrying helps a budget, overload or internal failure (503),
		// never a Pod too large for graft (400, as it is sent).
		code, status, retry := 503, "ServiceUnavailable", ", retry the request"
		if r == ReasonTooLarge {
			code, status, retry = 400, "BadRequest", ""
		}
		w.statusParts(code, status, "graft could not inject sidecars (", r.String(), sep, cause,
			"); the profile ", ps.name, " denies Pods it cannot inject", retry)
		return w.end()
	}
	res.Decision = DecisionFailOpen
	w.begin(rv, true)
	w.warn("graft: sidecars not injected (", r.String(), sep, cause, "); the Pod is admitted without them")
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
