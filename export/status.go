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
		{"addedAnnotations", "variables.addAnnotations.filter(e, !(e.k in object.metadata.?annotations.orValue({})))"},
		{"addedLabels", "variables.addLabels.filter(e, !(e.k in object.metadata.?labels.orValue({})))"},
		{"appAdds", `object.spec.?containers.orValue([]).filter(c, !(c.name in variables.own)).map(c, variables.kept.map(t, {` +
			`"c": dyn(c.name), "t": dyn(t), ` +
			`"env": dyn(variables.env.filter(e, e.t == t && !c.?env.orValue([]).exists(x, x.name == e.n)).map(e, e.n)), ` +
			`"mounts": dyn(variables.mounts.filter(e, e.t == t && !c.?volumeMounts.orValue([]).exists(x, x.name == e.n || x.mountPath == e.m)).map(e, e.n))` +
			`})).flatten().filter(a, size(a.env) + size(a.mounts) > 0)`},
	}
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
		`"a": dyn(` + added("addedAnnotations", "k", "a") + `), ` +
		`"b": dyn(` + added("addedLabels", "k", "b") + ` + (variables.setLabel && e.n == variables.labelOwner && !(` +
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
	return []celVar{
		{"baseEntries", "variables.recEntries + variables.kept.filter(t, !variables.recEntries.exists(e, e.n == t)).map(t, " + fresh + ")"},
		{"setLabel", "size(variables.baseEntries) > 0 && object.metadata.?labels.orValue({})[?" + label + `].orValue("") != ` + rev},
		{"labelOwner", `size(variables.kept) > 0 ? variables.kept[0] : size(variables.baseEntries) > 0 ? variables.baseEntries[0].n : ""`},
		{"outEntries", "variables.baseEntries.map(e, " + merged + ")"},
		{"injected", "variables.outEntries.map(x, x.i + x.c).flatten()"},
		{"status", `'{"version":2' + (size(variables.injected) > 0 ? ',"injected":[' + ` + quoted("variables.injected") + ` + ']' : '') + ` +
			`(size(variables.outEntries) > 0 ? ',"templates":[' + variables.outEntries.map(x, ` + entry + `).join(",") + ']' : '') + '}'`},
		{"setLabels", "variables.addedLabels + (variables.setLabel ? [" + `{"k": ` + label + `, "pk": ` +
			celString(pointerToken(names.Injected)) + `, "t": "", "v": ` + rev + "}] : [])"},
	}
}

// appList is the CEL of one app container's env or mounts list in
// statusVars' entry e, for container cn: the record's, then those this
// call adds that it lacks.
func appList(field string) string {
	had := `e.apps.filter(h, h.c == cn).map(h, h.` + field + `).flatten()`
	return `"` + field + `": dyn(` + had + ` + variables.appAdds.filter(a, a.t == e.n && a.c == cn).map(a, a.` + field +
		`).flatten().filter(n, !(n in ` + had + `)))`
}
