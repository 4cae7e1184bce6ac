package export

import "github.com/graftdev/graft/internal/names"

// graft.dev/status as the MutatingAdmissionPolicy writes it: what this
// call adds, merged into the Pod's record (see record.go) exactly as the
// engine merges (inject/recordwrite.go).

// additionVars are what this call adds, by list: the entries the Pod
// lacks (by name; app volume mounts by name or path), and per app
// container and template the env var and mount names it gets.
func additionVars() []celVar {
	return []celVar{
		{"addedInits", "variables.inits.filter(e, !(e.n in variables.podNames))"},
		{"addedContainers", "variables.containers.filter(e, !(e.n in variables.podNames))"},
		{"addedVolumes", "variables.volumes.filter(e, !object.spec.?volumes.orValue([]).exists(v, v.name == e.n))"},
		{"addedSecrets", "variables.pullSecrets.filter(e, !object.spec.?imagePullSecrets.orValue([]).exists(s, s.name == e.n))"},
		{"addedAnnotations", metaAdded("annotations", "variables.addAnnotations")},
		{"addedLabels", metaAdded("labels", "variables.addLabels")},
		// What the record names: what this call adds, and a key in
		// graft's domains the Pod holds with graft's value (graft's).
		{"recordAnnotations", metaRecorded("annotations", "variables.addAnnotations")},
		{"recordLabels", metaRecorded("labels", "variables.addLabels")},
		{"appAdds", `object.spec.?containers.orValue([]).filter(c, !(c.name in variables.own)).map(c, variables.kept.map(t, {` +
			`"c": dyn(c.name), "t": dyn(t), ` +
			`"env": dyn(variables.env.filter(e, e.t == t && !c.?env.orValue([]).exists(x, x.name == e.n)).map(e, e.n)), ` +
			`"mounts": dyn(variables.mounts.filter(e, e.t == t && !c.?volumeMounts.orValue([]).exists(x, x.name == e.n || x.mountPath == e.m)).map(e, e.n))` +
			`})).flatten().filter(a, size(a.env) + size(a.mounts) > 0)`},
	}
}

// metaAdded are the entries of add (annotations or labels) this call
// writes: those the Pod lacks, and those in graft's domains it holds with
// another value, which graft's replaces (inject/merge.go, markRendered).
func metaAdded(field, add string) string {
	cur := "object.metadata.?" + field + ".orValue({})"
	return add + ".filter(e, !(e.k in " + cur + `) || e.r == "true" && ` + cur + "[e.k] != e.v)"
}

// metaRecorded are the entries of add the record names: metaAdded's and
// those in graft's domains the Pod holds with graft's value.
func metaRecorded(field, add string) string {
	cur := "object.metadata.?" + field + ".orValue({})"
	return add + ".filter(e, !(e.k in " + cur + `) || e.r == "true")`
}

// statusVars write graft.dev/status: the record's entries in order, each
// with what this call adds for its template, then an entry per template
// injected for the first time, and the flat "injected" list recomputed.
// They also decide the graft.dev/injected label, which is recorded with
// the first template this call injects (docs/reference/status-format.md,
// "The injected label").
func (p *profile) statusVars() []celVar {
	rev := celString(p.revision)
	label := celString(names.Injected)
	added := func(v, key, field string) string {
		return `e.` + field + ` + variables.` + v + `.filter(x, x.t == e.n && !(x.` + key + ` in e.` + field + `)).map(x, x.` + key + `)`
	}
	fresh := `{"n": dyn(t), "r": dyn(` + rev + `), "d": dyn(variables.digests[t])`
	for _, k := range recordKeys {
		fresh += `, "` + k.field + `": dyn([])`
	}
	fresh += `, "apps": dyn([])}`
	// appContainers: by container name, sorted, what the record holds,
	// then what this call adds that it lacks.
	apps := `(e.apps.map(a, a.c) + variables.appAdds.filter(a, a.t == e.n).map(a, a.c)).distinct().sort().map(cn, {` +
		`"c": dyn(cn), ` + appList("env") + `, ` + appList("mounts") + `}).filter(a, size(a.env) + size(a.mounts) > 0)`
	merged := `{"n": e.n, "r": e.r, "d": e.d, ` +
		`"i": dyn(` + added("addedInits", "n", "i") + `), ` +
		`"c": dyn(` + added("addedContainers", "n", "c") + `), ` +
		`"v": dyn(` + added("addedVolumes", "n", "v") + `), ` +
		`"s": dyn(` + added("addedSecrets", "n", "s") + `), ` +
		`"a": dyn(` + added("recordAnnotations", "k", "a") + `), ` +
		`"b": dyn(` + added("recordLabels", "k", "b") + ` + (variables.setLabel && e.n == variables.labelOwner && !(` +
		label + ` in e.b) ? [` + label + `] : [])), ` +
		`"apps": dyn(` + apps + `)}`
	quoted := func(l string) string { return l + `.map(n, '"' + n + '"').join(",")` }
	entry := `'{"name":"' + x.n + '","revision":"' + x.r + '","digest":"' + x.d + '"'`
	for _, k := range recordKeys {
		entry += ` + (size(x.` + k.field + `) > 0 ? ',"` + k.key + `":[' + ` + quoted("x."+k.field) + ` + ']' : '')`
	}
	entry += ` + (size(x.apps) > 0 ? ',"appContainers":{' + x.apps.map(a, '"' + a.c + '":{' + ` +
		`(size(a.env) > 0 ? '"env":[' + ` + quoted("a.env") + ` + ']' : '') + ` +
		`(size(a.env) > 0 && size(a.mounts) > 0 ? ',' : '') + ` +
		`(size(a.mounts) > 0 ? '"volumeMounts":[' + ` + quoted("a.mounts") + ` + ']' : '') + '}').join(",") + '}' : '') + '}'`
	status := `'{"version":2' + (size(variables.injected) > 0 ? ',"injected":[' + ` + quoted("variables.injected") + ` + ']' : '') + ` +
		`(size(variables.outEntries) > 0 ? ',"templates":[' + variables.outEntries.map(x, ` + entry + `).join(",") + ']' : '')`
	var keptOut []celVar
	if p.keep {
		kept := `'{"name":"' + x.n + '"'`
		for _, k := range []struct{ field, key string }{{"i", "initContainers"}, {"c", "containers"}, {"v", "volumes"}} {
			kept += ` + (size(x.` + k.field + `) > 0 ? ',"` + k.key + `":[' + ` + quoted("x."+k.field) + ` + ']' : '')`
		}
		status += ` + (size(variables.keptOut) > 0 ? ',"kept":[' + variables.keptOut.map(x, ` + kept + ` + '}').join(",") + ']' : '')`
		keptOut = []celVar{{"keptOut", keptOutExpr()}}
	}
	status += ` + '}'`
	return append(keptOut, []celVar{
		{"baseEntries", "variables.recEntries + variables.kept.filter(t, !variables.recEntries.exists(e, e.n == t)).map(t, " + fresh + ")"},
		{"setLabel", "size(variables.baseEntries) > 0 && object.metadata.?labels.orValue({})[?" + label + `].orValue("") != ` + rev},
		{"labelOwner", `size(variables.kept) > 0 ? variables.kept[0] : size(variables.baseEntries) > 0 ? variables.baseEntries[0].n : ""`},
		{"outEntries", "variables.baseEntries.map(e, " + merged + ")"},
		{"injected", "variables.outEntries.map(x, x.i + x.c).flatten()"},
		{"status", status},
		{"setLabels", "variables.addedLabels + (variables.setLabel ? [" + `{"k": ` + label + `, "pk": ` +
			celString(pointerToken(names.Injected)) + `, "t": "", "v": ` + rev + "}] : [])"},
	}...)
}

// keptOutExpr is the record's kept list under onConflict: keep, written
// afresh on every call as the engine writes it (inject/recordwrite.go,
// appendKept): per template left out, in the profile's order, the Pod's
// init containers, containers and volumes of its names that graft did
// not inject, each in the Pod's order; then per other template whose
// names the Pod's objects take (in the Pod's order), those objects.
func keptOutExpr() string {
	named := func(list, all, owned string) string {
		return "object.spec.?" + list + ".orValue([]).map(o, o.name).filter(n, !(n in variables." + owned + ") && " +
			"(" + all + ").exists(e, e.t == t && e.n == n))"
	}
	ctrs := "variables.all_inits + variables.all_containers"
	of := func(t, object string) string {
		return "variables.foreign.filter(f, f.t == " + t + ` && f.o == "` + object + `").map(f, f.n)`
	}
	return `variables.templates.filter(t, !(t in variables.kept)).map(t, {"n": dyn(t), ` +
		`"i": dyn(` + named("initContainers", ctrs, "ownedC") + `), ` +
		`"c": dyn(` + named("containers", ctrs, "ownedC") + `), ` +
		`"v": dyn(` + named("volumes", "variables.all_volumes", "ownedV") + `)}) + ` +
		`variables.foreign.map(f, f.t).distinct().filter(t, !(t in variables.templates)).map(t, {"n": dyn(t), ` +
		`"i": dyn(` + of("t", "init container") + `), "c": dyn(` + of("t", "container") + `), "v": dyn(` + of("t", "volume") + `)})`
}

// appList is the CEL of one app container's env or mounts list in
// statusVars' entry e, for container cn: the record's, then those this
// call adds that it lacks.
func appList(field string) string {
	had := `e.apps.filter(h, h.c == cn).map(h, h.` + field + `).flatten()`
	return `"` + field + `": dyn(` + had + ` + variables.appAdds.filter(a, a.t == e.n && a.c == cn).map(a, a.` + field +
		`).flatten().filter(n, !(n in ` + had + `)))`
}
