package export

import (
	"strings"
)

// The MutatingAdmissionPolicy's CEL: the engine's merge (inject/merge.go)
// as one JSON Patch. Everything is added only when missing, by name (app
// volume mounts by name or path), init containers at their template's
// placement, and graft.dev/status always set.

const statusKey = "graft.dev/status"

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
		{"selection", `"graft.dev/templates" in variables.annotations ? ` +
			`variables.annotations["graft.dev/templates"].split(",").map(n, n.trim()).filter(n, n != "") : ` + profileList},
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

// paramVarList declares a variable per parameter the templates read.
func (p *profile) paramVarList() []celVar {
	var out []celVar
	used := p.usedParams()
	for _, tn := range p.order {
		for _, prm := range used[tn] {
			raw := rawValue(tn, prm, p.defaults[tn][prm.Name])
			name := celIdent("p", tn, prm.Name)
			out = append(out, celVar{name, textExpr(prm, raw)})
			if prm.Type == "list" {
				out = append(out, celVar{celIdent("l", tn, prm.Name), itemsExpr("variables." + name)})
			}
		}
	}
	return out
}

// mutationVars are the MutatingAdmissionPolicy's variables.
func (p *profile) mutationVars() ([]celVar, error) {
	vars := append(p.selectionVars(), p.paramVarList()...)
	for kind := range numLists {
		per := map[string]string{}
		for _, tn := range p.order {
			l, err := p.listEntries(tn, kind)
			if err != nil {
				return nil, err
			}
			per[tn] = l
		}
		vars = append(vars, celVar{listVars[kind], byTemplate(per, p.order)})
	}
	for _, labels := range []bool{false, true} {
		per := map[string]string{}
		for _, tn := range p.order {
			per[tn] = p.metaEntries(tn, labels)
		}
		name := "addAnnotations"
		if labels {
			name = "addLabels"
		}
		vars = append(vars, celVar{name, byTemplate(per, p.order)})
	}
	vars = append(vars,
		celVar{"podNames", "object.spec.?containers.orValue([]).map(c, c.name) + object.spec.?initContainers.orValue([]).map(c, c.name)"},
		// The engine leaves alone the app-container edits of every
		// container named like one it injects, whoever added it.
		celVar{"own", "variables.inits.map(e, e.n) + variables.containers.map(e, e.n)"},
		celVar{"status", statusExpr()},
	)
	return append(vars, initVars()...), nil
}

// statusExpr is graft.dev/status as the engine writes it (inject/plan.go):
// the templates, then the names of every container, init container and
// volume they inject, empty lists left out.
func statusExpr() string {
	list := func(key, v string) string {
		return `(size(variables.` + v + `) > 0 ? ',"` + key + `":[' + variables.` + v +
			`.map(e, '"' + e.n + '"').join(",") + ']' : "")`
	}
	return `'{"templates":[' + variables.templates.map(t, '"' + t + '"').join(",") + ']' + ` +
		list("containers", "containers") + " + " + list("initContainers", "inits") + " + " + list("volumes", "volumes") + ` + "}"`
}

// patchExpr is the JSON Patch: empty for a Pod that selects no template.
func (p *profile) patchExpr() string {
	ops := []string{
		initOps(),
		appendOps("/spec/containers", "object.spec.?containers.orValue([])", "variables.containers",
			"!(e.n in variables.podNames)"),
		appendOps("/spec/volumes", "object.spec.?volumes.orValue([])", "variables.volumes",
			"!object.spec.?volumes.orValue([]).exists(v, v.name == e.n)"),
		appendOps("/spec/imagePullSecrets", "object.spec.?imagePullSecrets.orValue([])", "variables.pullSecrets",
			"!object.spec.?imagePullSecrets.orValue([]).exists(s, s.name == e.n)"),
		appContainerOps("env", "variables.env", "!c.env.exists(x, x.name == e.n)"),
		appContainerOps("volumeMounts", "variables.mounts", "!c.volumeMounts.exists(x, x.name == e.n || x.mountPath == e.m)"),
		metaOps("annotations", "variables.addAnnotations", true),
		metaOps("labels", "variables.addLabels", false),
	}
	return "size(variables.templates) == 0 ? [] :\n" + strings.Join(ops, "\n+ ")
}

// initVars split the missing init containers by placement.
func initVars() []celVar {
	missing := "variables.inits.filter(e, !(e.n in variables.podNames))"
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

// appendOps appends the entries of want that missing says are missing.
func appendOps(path, cur, want, missing string) string {
	m := want + ".filter(e, " + missing + ")"
	return "(size(" + m + ") == 0 ? [] : size(" + cur + ") == 0 ?\n" +
		`  [JSONPatch{op: "add", path: "` + path + `", value: ` + m + ".map(e, e.v)}] :\n" +
		"  " + m + `.map(e, JSONPatch{op: "add", path: "` + path + `/-", value: e.v}))`
}

// appContainerOps appends to every app container (spec.containers not
// named like one graft injects) the entries it lacks.
func appContainerOps(field, want, missing string) string {
	return "(size(" + want + ") == 0 ? [] : object.spec.?containers.orValue([]).transformList(i, c, !(c.name in variables.own),\n" +
		"  !has(c." + field + ") || size(c." + field + ") == 0 ?\n" +
		`    [JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/` + field + `", value: ` + want + ".map(e, e.v)}] :\n" +
		"    " + want + ".filter(e, " + missing + `).map(e, JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/` + field + `/-", value: e.v})).flatten())`
}

// metaOps adds the entries whose key the map lacks (and, for annotations,
// sets graft.dev/status), creating the map first when there is none.
func metaOps(field, want string, status bool) string {
	cur := "object.metadata.?" + field + ".orValue({})"
	m := want + ".filter(e, !(e.k in " + cur + "))"
	create := `(size(` + cur + `) == 0 ? [JSONPatch{op: "add", path: "/metadata/` + field + `", value: {}}] : [])`
	adds := m + `.map(e, JSONPatch{op: "add", path: "/metadata/` + field + `/" + e.pk, value: e.v})`
	if !status {
		return "(size(" + m + ") == 0 ? [] : " + create + " + " + adds + ")"
	}
	return create + "\n+ " + adds + "\n+ " + `[JSONPatch{op: "add", path: "/metadata/annotations/` + pointerToken(statusKey) + `", value: variables.status}]`
}
