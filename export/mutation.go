package export

import (
	"strings"

	"github.com/graftdev/graft/internal/names"
)

// The MutatingAdmissionPolicy's CEL: the engine's merge (inject/merge.go)
// as one JSON Patch. Everything is added only when missing, by name (app
// volume mounts by name or path), init containers at their template's
// placement, graft.dev/status written as the engine writes it, and the
// graft.dev/injected label.

// selectionVars are the variables every policy starts with: the Pod's
// annotations and the templates it gets, in order.
func (p *profile) selectionVars() []celVar {
	profileList := celList(p.cfg.Templates)
	allowed := celList(p.allowed)
	templates := "variables.selection.distinct()"
	if p.lenient {
		// An invalid selection falls back to the profile's templates.
		templates = "variables.selection.all(n, n in " + allowed + ") ? variables.selection.distinct() : " + profileList
	}
	return []celVar{
		{"annotations", "object.metadata.?annotations.orValue({})"},
		{"selection", celString(names.Templates) + ` in variables.annotations ? ` +
			`variables.annotations[` + celString(names.Templates) + `].split(",").map(n, n.trim()).filter(n, n != "") : ` + profileList},
		{"templates", templates},
	}
}

func celList(items []string) string {
	var q []string
	for _, s := range items {
		q = append(q, celString(s))
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// paramVarList declares, per template, the texts of the parameters its
// fragment reads, and the items of its list parameters (see params.go).
func (p *profile) paramVarList() []celVar {
	var out []celVar
	used := p.usedParams()
	for _, tn := range p.order {
		var texts, lists []string
		for _, prm := range used[tn] {
			raw := p.rawValue(tn, prm)
			texts = append(texts, celString(prm.Name)+": "+textExpr(prm, raw))
			if prm.Type == "list" {
				lists = append(lists, celString(prm.Name)+": "+itemsExpr(paramVars{tmpl: tn}.text(holeSrc{param: prm, item: -1})))
			}
		}
		if len(texts) > 0 {
			out = append(out, celVar{celIdent("p", tn), "{" + strings.Join(texts, ", ") + "}"})
		}
		if len(lists) > 0 {
			out = append(out, celVar{celIdent("l", tn), "{" + strings.Join(lists, ", ") + "}"})
		}
	}
	return out
}

// templateLists declares a variable per list (listVars, prefixed with
// prefix) over the templates in the CEL list tmpls.
func (p *profile) templateLists(kinds []listKind, prefix, tmpls string, namesOnly bool) ([]celVar, error) {
	var vars []celVar
	for _, kind := range kinds {
		per := map[string]string{}
		for _, tn := range p.order {
			l, err := p.listEntries(tn, kind, namesOnly)
			if err != nil {
				return nil, err
			}
			per[tn] = l
		}
		vars = append(vars, celVar{prefix + listVars[kind], byTemplate(per, p.order, tmpls)})
	}
	return vars, nil
}

// conflictLists are the names conflicts are found among: init
// containers, containers and volumes of every template the Pod gets, and
// the app env vars and mounts that collide with the app containers'.
var conflictLists = []listKind{listInits, listContainers, listVolumes, listEnv, listMounts}

// scopeVars are what both policies read after the selection: the
// parameters, digests, the Pod's record, and the conflicts among the
// lists of every template the Pod gets (declared with prefix; namesOnly
// leaves their values out).
func (p *profile) scopeVars(prefix string, namesOnly bool) ([]celVar, error) {
	vars := append(p.paramVarList(), p.digestVars()...)
	vars = append(vars, p.recordVars()...)
	vars = append(vars, p.stalenessVars()...)
	lists, err := p.templateLists(conflictLists, prefix, "variables.templates", namesOnly)
	if err != nil {
		return nil, err
	}
	vars = append(vars, lists...)
	l := "variables." + prefix
	return append(vars, conflictVars(l+listVars[listInits], l+listVars[listContainers], l+listVars[listVolumes],
		l+listVars[listEnv], l+listVars[listMounts], p.names)...), nil
}

// mutationVars are the MutatingAdmissionPolicy's variables.
func (p *profile) mutationVars() ([]celVar, error) {
	scope, err := p.scopeVars("all_", false)
	if err != nil {
		return nil, err
	}
	vars := p.selectionVars()
	if !p.lenient {
		// A Pod with a parameter problem is refused: left uninjected and
		// unlabelled for the validating policy (see patchExpr).
		vars = append(vars, p.problemVars()...)
	}
	vars = append(vars, scope...)
	// What the templates graft injects add: those of the conflicts are
	// left out (onConflict: keep; deny refuses the Pod in the validating
	// policy).
	for _, kind := range conflictLists {
		vars = append(vars, celVar{listVars[kind], "variables.all_" + listVars[kind] + ".filter(e, e.t in variables.kept)"})
	}
	rest, err := p.templateLists([]listKind{listSecrets}, "", "variables.kept", false)
	if err != nil {
		return nil, err
	}
	vars = append(vars, rest...)
	for _, labels := range []bool{false, true} {
		per := map[string]string{}
		for _, tn := range p.order {
			per[tn] = p.metaEntries(tn, labels)
		}
		name := "addAnnotations"
		if labels {
			name = "addLabels"
		}
		vars = append(vars, celVar{name, byTemplate(per, p.order, "variables.kept")})
	}
	vars = append(vars,
		celVar{"podNames", "object.spec.?containers.orValue([]).map(c, c.name) + object.spec.?initContainers.orValue([]).map(c, c.name)"},
		// The engine edits every container but those the record says it
		// injected, whoever added them.
		celVar{"own", "variables.ownedC"},
	)
	vars = append(vars, additionVars()...)
	vars = append(vars, p.statusVars()...)
	return append(vars, initVars()...), nil
}

// patchExpr is the JSON Patch: the fast path's for the Pods it covers,
// else the general merge's, empty for a Pod that selects no template.
func (p *profile) patchExpr(fast *fastPath) (string, error) {
	general := p.mergeExpr()
	if fast == nil {
		return general, nil
	}
	ops, err := fast.patchExpr()
	if err != nil {
		return "", err
	}
	return "(" + fast.guard() + ") ?\n" + ops + "\n: " + general, nil
}

// mergeExpr is the general merge's JSON Patch.
func (p *profile) mergeExpr() string {
	ops := []string{
		initOps(),
		appendOps("/spec/containers", "object.spec.?containers.orValue([])", "variables.addedContainers"),
		appendOps("/spec/volumes", "object.spec.?volumes.orValue([])", "variables.addedVolumes"),
		appendOps("/spec/imagePullSecrets", "object.spec.?imagePullSecrets.orValue([])", "variables.addedSecrets"),
		appContainerOps("env", "variables.env", "!c.env.exists(x, x.name == e.n)"),
		appContainerOps("volumeMounts", "variables.mounts", "!c.volumeMounts.exists(x, x.name == e.n || x.mountPath == e.m)"),
		metaOps("annotations", "variables.addedAnnotations", true),
		metaOps("labels", "variables.setLabels", false),
	}
	// Pods the validating policy refuses are left as they are, so that it
	// sees what they carried, and without graft.dev/injected, so that it
	// sees them at all (it passes labelled Pods by selector).
	refused := "size(variables.unhashable) > 0 || !(variables.recNone || variables.recOK && size(variables.recStale) == 0)"
	if !p.keep {
		refused += " || size(variables.conflicts) > 0"
	}
	if !p.lenient {
		refused = `variables.problem != "" || ` + refused
	}
	unlabel := "(" + celString(names.Injected) + ` in object.metadata.?labels.orValue({}) ? [JSONPatch{op: "remove", path: "/metadata/labels/` +
		pointerToken(names.Injected) + `"}] : [])`
	return "size(variables.templates) == 0 ? [] : " + refused + " ? " + unlabel + " :\n" + strings.Join(ops, "\n+ ")
}

// initVars split the missing init containers by placement.
func initVars() []celVar {
	missing := "variables.addedInits"
	return []celVar{
		{"initsFirst", missing + `.filter(e, e.p == "f")`},
		{"initsBefore", missing + `.filter(e, e.p == "b")`},
		{"initsLast", missing + `.filter(e, e.p == "l")`},
	}
}

// initOps places missing init containers as the engine does: "first" ones
// at the front, "before-init" ones after the Pod's native sidecars (up to
// its first ordinary init container), "last" ones at the end, each group
// in template order.
func initOps() string {
	cur := "object.spec.?initContainers.orValue([])"
	first, before, last := "variables.initsFirst", "variables.initsBefore", "variables.initsLast"
	// The index of the first ordinary init container, or the length.
	boundary := "(lists.range(size(" + cur + ")).filter(i, " + cur + `[i].?restartPolicy.orValue("") != "Always") + [size(` + cur + ")])[0]"
	return "(size(" + first + ") + size(" + before + ") + size(" + last + ") == 0 ? [] : size(" + cur + ") == 0 ?\n" +
		`  [JSONPatch{op: "add", path: "/spec/initContainers", value: (` + first + " + " + before + " + " + last + ").map(e, e.v)}] :\n" +
		"  lists.range(size(" + first + `)).map(i, JSONPatch{op: "add", path: "/spec/initContainers/" + string(i), value: ` + first + "[i].v})\n" +
		"  + lists.range(size(" + before + `)).map(i, JSONPatch{op: "add", path: "/spec/initContainers/" + string(size(` + first + ") + " + boundary + " + i), value: " + before + "[i].v})\n" +
		"  + " + last + `.map(e, JSONPatch{op: "add", path: "/spec/initContainers/-", value: e.v}))`
}

// appendOps appends the entries of add.
func appendOps(path, cur, add string) string {
	return "(size(" + add + ") == 0 ? [] : size(" + cur + ") == 0 ?\n" +
		`  [JSONPatch{op: "add", path: "` + path + `", value: ` + add + ".map(e, e.v)}] :\n" +
		"  " + add + `.map(e, JSONPatch{op: "add", path: "` + path + `/-", value: e.v}))`
}

// appContainerOps appends to every app container (spec.containers not
// named like one graft injects) the entries it lacks.
func appContainerOps(field, want, missing string) string {
	return "(size(" + want + ") == 0 ? [] : object.spec.?containers.orValue([]).transformList(i, c, !(c.name in variables.own),\n" +
		"  !has(c." + field + ") || size(c." + field + ") == 0 ?\n" +
		`    [JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/` + field + `", value: ` + want + ".map(e, e.v)}] :\n" +
		"    " + want + ".filter(e, " + missing + `).map(e, JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/` + field + `/-", value: e.v})).flatten())`
}

// metaOps adds the entries of add (and, for annotations, sets
// graft.dev/status when it changes), creating the map first when there is
// none.
func metaOps(field, add string, status bool) string {
	cur := "object.metadata.?" + field + ".orValue({})"
	create := `(size(` + cur + `) == 0 ? [JSONPatch{op: "add", path: "/metadata/` + field + `", value: {}}] : [])`
	adds := add + `.map(e, JSONPatch{op: "add", path: "/metadata/` + field + `/" + e.pk, value: e.v})`
	if !status {
		return "(size(" + add + ") == 0 ? [] : " + create + " + " + adds + ")"
	}
	return create + "\n+ " + adds + "\n+ " + `(!variables.recHas || variables.rec != variables.status ? ` +
		`[JSONPatch{op: "add", path: "/metadata/annotations/` + pointerToken(names.Status) + `", value: variables.status}] : [])`
}
