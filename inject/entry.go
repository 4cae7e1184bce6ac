package inject

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// planEntry is the cached outcome of choosing templates and parameters for
// a profile and a set of Pod annotations: a plan to inject, or a denial.
type planEntry struct {
	plan *plan
	// skip is set when the Pod selected no templates.
	skip bool
	// denyMsg, when set, denies the Pod with reason; names are the
	// templates that were chosen, for explain.
	denyMsg string
	names   []string
	reason  Reason
	// warnings are quoted JSON strings, returned with the response.
	warnings [][]byte
	params   []ParamValue
}

// planCache holds entries for Pods that carry graft annotations, keyed by
// profile and those annotations. Bounded like shapeCache.
type planCache struct {
	mu sync.RWMutex
	m  map[string]*planEntry
}

const maxPlans = 1024

// maxPlanKey bounds the key of a cached plan (the profile and the Pod's
// graft annotations): a Pod's author writes the annotations, and the
// cache must not hold what they choose. Real keys are a few hundred
// bytes; a Pod with larger ones is planned per request.
const maxPlanKey = 4 << 10

// entryFor returns the plan entry for p under ps. Pods without graft
// annotations share the profile's default entry; others hit the cache and,
// on a miss, render (the only place the request path runs a template).
func (e *Engine) entryFor(ps *profileState, p *pod, s *scratch) (*planEntry, error) {
	if !p.hasGraftAnnotations() {
		return ps.def, nil
	}
	key := append(s.planKey[:0], ps.name...)
	for _, a := range p.annotationKeys {
		if strings.HasPrefix(a.key, names.Prefix) && a.key != names.Status {
			key = append(key, 0)
			key = append(key, a.key...)
			key = append(key, 0)
			key = append(key, a.value...)
		}
	}
	s.planKey = key
	c := &e.impl.plans
	c.mu.RLock()
	ent := c.m[string(key)]
	c.mu.RUnlock()
	if ent != nil {
		return ent, nil
	}
	ent, err := e.entryForAnnotations(ps, p)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) < maxPlans && len(key) <= maxPlanKey {
		c.m[string(key)] = ent
	}
	c.mu.Unlock()
	return ent, nil
}

// entryForAnnotations decides templates and parameters from the Pod's
// annotations and renders the plan. Slow path: allocates freely.
func (e *Engine) entryForAnnotations(ps *profileState, p *pod) (*planEntry, error) {
	var warnings []string
	chosen := ps.templates
	selection := "" // graft.dev/templates, when it chose the templates
	if raw, ok := p.annotation(names.Templates); ok {
		val, err := unquoteRaw(raw, strings.Contains(raw, `\`))
		if err != nil {
			return nil, err
		}
		sel, problem := ps.selectTemplates(val)
		switch {
		case problem == "":
			chosen, selection = sel, strings.Clone(val)
		case ps.cfg.OnInvalidParams == InvalidDeny:
			return &planEntry{denyMsg: problem, reason: ReasonTemplateSelection}, nil
		default:
			warnings = append(warnings, problem+"; using the profile's templates")
		}
	}
	if len(chosen) == 0 {
		return &planEntry{skip: true}, nil
	}
	tmplNames := templateNames(chosen)
	overrides := map[string]map[string]string{}
	for _, a := range p.annotationKeys {
		rest, ok := strings.CutPrefix(a.key, names.Prefix)
		if !ok {
			continue
		}
		tmplName, param, ok := strings.Cut(rest, ".")
		if !ok {
			continue
		}
		t := findTemplate(chosen, tmplName)
		if t == nil {
			continue
		}
		val, err := unquoteRaw(a.value, strings.Contains(a.value, `\`))
		if err != nil {
			return nil, err
		}
		prm, ok := t.Param(param)
		if !ok {
			problem := fmt.Sprintf("annotation %s: template %s has no parameter %q", a.key, tmplName, param)
			if ps.cfg.OnInvalidParams == InvalidDeny {
				return &planEntry{denyMsg: problem, reason: ReasonInvalidParams, names: tmplNames}, nil
			}
			warnings = append(warnings, problem+"; ignored")
			continue
		}
		if _, err := prm.Parse(val); err != nil {
			perr := &templates.ParamError{Template: tmplName, Param: param, Value: val, Rule: err.Error()}
			if ps.cfg.OnInvalidParams == InvalidDeny {
				return &planEntry{denyMsg: perr.Error(), reason: ReasonInvalidParams, names: tmplNames}, nil
			}
			warnings = append(warnings, perr.Error()+"; using the default")
			continue
		}
		if problem, reason := ps.guardParam(t, prm, a.key, val); problem != "" {
			if ps.cfg.OnInvalidParams == InvalidDeny {
				return &planEntry{denyMsg: problem, reason: reason, names: tmplNames}, nil
			}
			warnings = append(warnings, problem+"; using the default")
			continue
		}
		if overrides[t.Name] == nil {
			overrides[t.Name] = map[string]string{}
		}
		// The value lands in a cached entry (ParamValue), which outlives
		// the body it was read from.
		overrides[t.Name][prm.Name] = strings.Clone(val)
	}
	ent, more, err := e.buildForPod(ps, chosen, overrides, selection)
	if err != nil {
		return nil, err
	}
	for _, w := range append(warnings, more...) {
		ent.warnings = append(ent.warnings, appendJSONString(nil, shortWarning("graft: "+w)))
	}
	return ent, nil
}

// selectTemplates parses a graft.dev/templates value against what the
// profile allows. problem is empty when the selection is valid.
func (ps *profileState) selectTemplates(val string) (chosen []*templates.Template, problem string) {
	for _, n := range strings.Split(val, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		t := findTemplate(ps.allowed, n)
		if t == nil {
			return nil, fmt.Sprintf("annotation %s=%q: template %q is not allowed here (allowed: %s)",
				names.Templates, val, n, strings.Join(templateNames(ps.allowed), ", "))
		}
		if !slices.Contains(chosen, t) {
			chosen = append(chosen, t)
		}
	}
	return chosen, ""
}

// findTemplate returns the template of that name in ts, or nil.
func findTemplate(ts []*templates.Template, name string) *templates.Template {
	for _, t := range ts {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// templateNames lists the names of ts. They are the set's own strings,
// never the request's, so cached plans may keep them.
func templateNames(ts []*templates.Template) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

// buildForPod builds the entry for a Pod's templates and parameter
// overrides. Every render is validated (Render, then the templates against
// each other); the profile's own values passed in New, so a render that
// fails is the Pod's doing: answered per onInvalidParams with a message
// naming the annotations that changed the failing templates' values, and
// never cached as a plan. The warnings are for the response.
func (e *Engine) buildForPod(ps *profileState, chosen []*templates.Template, overrides map[string]map[string]string, selection string) (*planEntry, []string, error) {
	deny := ps.cfg.OnInvalidParams == InvalidDeny
	var warnings []string
	for {
		ent, err := e.buildEntry(ps, chosen, overrides)
		bad := invalidRender(err)
		if bad == nil {
			return ent, warnings, err
		}
		blamed := ps.blame(chosen, overrides, bad)
		if len(blamed) == 0 {
			// No value the Pod set: the templates it selected clash.
			if selection == "" {
				return nil, nil, err
			}
			problem := fmt.Sprintf("annotation %s=%q: %s", names.Templates, selection, err.Error())
			if deny {
				return &planEntry{denyMsg: problem, reason: denyReason(err, ReasonTemplateSelection), names: templateNames(chosen)}, nil, nil
			}
			def := *ps.def
			return &def, append(warnings, problem+"; using the profile's templates"), nil
		}
		if deny {
			return &planEntry{denyMsg: blamed + ": " + err.Error(), reason: denyReason(err, ReasonInvalidParams), names: templateNames(chosen)}, nil, nil
		}
		warnings = append(warnings, blamed+" ignored: "+err.Error())
		for _, t := range bad {
			delete(overrides, t)
		}
	}
}

// invalidRender returns the templates a failed build is about when the
// rendered fragments are at fault (invalid for the API server, or
// clashing), and nil for any other error.
func invalidRender(err error) []string {
	if re, ok := errors.AsType[*templates.RenderError](err); ok {
		return []string{re.Template}
	}
	if ce, ok := errors.AsType[*conflictError](err); ok {
		return []string{ce.first, ce.second}
	}
	if ie, ok := errors.AsType[*imageError](err); ok {
		return []string{ie.template}
	}
	if le, ok := errors.AsType[*levelError](err); ok {
		return []string{le.need.template}
	}
	return nil
}

// denyReason is the reason to deny a Pod whose values render err: a Pod
// Security level the profile does not allow has its own, so that
// operators see it apart from mistyped values.
func denyReason(err error, otherwise Reason) Reason {
	if _, ok := errors.AsType[*levelError](err); ok {
		return ReasonPodSecurity
	}
	return otherwise
}

// blame names the overrides of the templates called tmplNames that change a
// value from the profile's: `annotation graft.dev/<t>.<p>="v"`, or
// `annotations ...` for several; "" when there are none.
func (ps *profileState) blame(chosen []*templates.Template, overrides map[string]map[string]string, tmplNames []string) string {
	var out []string
	for _, n := range tmplNames {
		t := findTemplate(chosen, n)
		for _, pn := range slices.Sorted(maps.Keys(overrides[n])) {
			v := overrides[n][pn]
			if prm, ok := t.Param(pn); ok && v != ps.baseValue(n, prm) {
				out = append(out, fmt.Sprintf("%s=%q", t.AnnotationKey(pn), v))
			}
		}
	}
	switch len(out) {
	case 0:
		return ""
	case 1:
		return "annotation " + out[0]
	}
	return "annotations " + strings.Join(out, ", ")
}

// baseValue is what parameter prm of template tmpl is without the Pod's
// annotation: the profile's value, else the default.
func (ps *profileState) baseValue(tmpl string, prm *templates.Param) string {
	if v, ok := ps.cfg.Params[tmpl][prm.Name]; ok {
		return v
	}
	return prm.Default
}

// buildEntry renders tmpls with the profile's parameters overlaid by the
// Pod's overrides (template name -> parameter -> value).
func (e *Engine) buildEntry(ps *profileState, tmpls []*templates.Template, overrides map[string]map[string]string) (*planEntry, error) {
	params := map[string]map[string]string{}
	var sources []ParamValue
	for _, t := range tmpls {
		n := t.Name
		vals := map[string]string{}
		for _, prm := range t.Params {
			v, src := prm.Default, "default"
			if pv, ok := ps.cfg.Params[n][prm.Name]; ok {
				v, src = pv, "profile"
			}
			if ov, ok := overrides[n][prm.Name]; ok {
				v, src = ov, "annotation"
			}
			if src != "default" {
				vals[prm.Name] = v
			}
			sources = append(sources, ParamValue{Template: n, Param: prm.Name, Value: v, Source: src})
		}
		for pn := range ps.cfg.Params[n] {
			if _, ok := t.Param(pn); !ok {
				return nil, fmt.Errorf("profile sets unknown parameter %s.%s", n, pn)
			}
		}
		params[n] = vals
	}
	pl, err := buildPlan(e.impl.nextPlanID.Add(1), e.cfg.Revision, tmpls, params)
	if err == nil {
		err = checkImages(pl, ps.cfg.AllowedImages)
	}
	if err == nil {
		err = checkLevel(pl, ps)
	}
	if err != nil {
		var perr *templates.ParamError
		if errors.As(err, &perr) {
			return &planEntry{denyMsg: perr.Error(), reason: ReasonInvalidParams}, nil
		}
		return nil, err
	}
	return &planEntry{plan: pl, params: sources}, nil
}

// maxWarning keeps each warning under the 120 characters kubectl shows.
const maxWarning = 119

// shortWarning cuts w to maxWarning characters, marking the cut.
func shortWarning(w string) string {
	r := []rune(w)
	if len(r) <= maxWarning {
		return w
	}
	return string(r[:maxWarning-1]) + "…"
}
