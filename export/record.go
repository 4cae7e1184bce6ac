package export

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
)

// graft.dev/status version 2 in CEL (docs/reference/status-format.md).
// CEL has no JSON parser, so the policies read a record with regular
// expressions, and only in the one form graft writes (canonical: keys in
// order, names without escapes, appContainers sorted). A Pod carrying a
// record in any other form, or one graft would upgrade (another revision or
// digest), is refused by the validating policy: the engine rewrites such
// records, and a policy that cannot must not write a different one.

// Regular expressions of the canonical record.
const (
	reName    = `"[^"\\]+"`
	reList    = `\[` + reName + `(,` + reName + `)*\]`
	reApp     = reName + `:\{("env":` + reList + `(,"volumeMounts":` + reList + `)?|"volumeMounts":` + reList + `)\}`
	reEntry   = `\{"name":` + reName + `,"revision":` + reName + `,"digest":` + reName + `(,"initContainers":` + reList + `)?(,"containers":` + reList + `)?(,"volumes":` + reList + `)?(,"imagePullSecrets":` + reList + `)?(,"annotations":` + reList + `)?(,"labels":` + reList + `)?(,"appContainers":\{` + reApp + `(,` + reApp + `)*\})?` + rePodRes + `?\}`
	reKept    = `\{"name":` + reName + `(,"initContainers":` + reList + `)?(,"containers":` + reList + `)?(,"volumes":` + reList + `)?\}`
	reRecord  = `^\{"version":2(,"injected":` + reList + `)?(,"templates":\[` + reEntry + `(,` + reEntry + `)*\])?(,"kept":\[` + reKept + `(,` + reKept + `)*\])?\}$`
	reAppText = `"[^"]+":\{"(env|volumeMounts)":[^{}]*\}`
	// rePodRes is what the webhook recorded it added to pod-level
	// resources; the exported policies add nothing there, and keep it.
	rePodRes = `(,"podResources":\{("requests":\{[^{}]*\})?,?("limits":\{[^{}]*\})?\})`
)

// recordKeys are an entry's lists as the CEL maps below name them, with
// their keys in the record, in the record's order.
var recordKeys = []struct{ field, key string }{
	{"i", "initContainers"}, {"c", "containers"}, {"v", "volumes"},
	{"s", "imagePullSecrets"}, {"a", "annotations"}, {"b", "labels"},
}

// namesIn is a CEL list of the names of text's list under key (text an
// entry or an app container's object).
func namesIn(text, key string) string {
	head := `"` + key + `":`
	return text + ".findAll(" + celString(head+`\[[^\]]*\]`) + ").map(x, x.substring(" + strconv.Itoa(len(head)) +
		`).findAll("\"[^\"]+\"")).flatten().map(n, n.substring(1, size(n) - 1))`
}

// recordVars read the Pod's graft.dev/status: recEntries holds its entries
// as maps ("n" name, "r" revision, "d" digest, a list per recordKeys field,
// "apps": [{"c", "env", "mounts"}]) when recOK, the record being one the
// policies can merge; ownedC and ownedV are the container and volume names
// it says graft injected.
func (p *profile) recordVars() []celVar {
	entry := `{"n": dyn(e.split("\"")[3]), "r": dyn(e.split("\"")[7]), "d": dyn(e.split("\"")[11])`
	for _, k := range recordKeys {
		entry += `, "` + k.field + `": dyn(` + namesIn("e", k.key) + ")"
	}
	entry += `, "apps": dyn(e.findAll(` + celString(reAppText) + `).map(x, {"c": dyn(x.split("\"")[1]), "env": dyn(` +
		namesIn("x", "env") + `), "mounts": dyn(` + namesIn("x", "volumeMounts") + ")}))}"
	return []celVar{
		{"recHas", celString(names.Status) + " in variables.annotations"},
		{"rec", "variables.annotations[?" + celString(names.Status) + `].orValue("")`},
		{"recForm", "variables.rec.matches(" + celString(reRecord) + ")"},
		{"recEntries", "variables.recForm ? variables.rec.findAll(" + celString(reEntry) + ").map(e, " + entry + ") : []"},
		// The engine reads a value that is not a JSON object as no record,
		// and so does an empty object.
		{"recNone", "!variables.recHas || !variables.rec.matches(\"^\\\\s*\\\\{\") || variables.rec.matches(\"^\\\\s*\\\\{\\\\s*\\\\}\\\\s*$\")"},
		{"recOK", "variables.recForm && variables.recEntries.all(e, e.apps.map(a, a.c).isSorted())"},
		{"ownedC", "variables.recEntries.map(e, e.i + e.c).flatten()"},
		{"ownedV", "variables.recEntries.map(e, e.v).flatten()"},
	}
}

// digestVars compute "digests", the digest graft.dev/status records per
// template (inject.TemplateDigest): a constant per combination of the
// enum and bool parameters, looked up in CEL. Other parameters must hold
// the profile's value: CEL cannot hash another. "" marks a template the
// Pod sets such a parameter of; "unhashable" lists their annotation keys.
func (p *profile) digestVars() []celVar {
	var digests, unhashable []string
	for _, tn := range p.order {
		tmpl := p.tmpls[tn].tmpl
		base := p.defaults[tn]
		table, finite := p.digestTable(tn)
		for i, prm := range tmpl.Params {
			if slices.Contains(finite, i) {
				continue
			}
			key := annotationKey(tn, prm.Name)
			raw := p.rawValue(tn, &tmpl.Params[i])
			unhashable = append(unhashable, "("+celString(tn)+" in variables.templates && "+raw+" != "+celString(base[prm.Name])+
				" ? ["+celString(key)+"] : [])")
		}
		var keyParts []string
		for _, i := range finite {
			prm := &tmpl.Params[i]
			keyParts = append(keyParts, "string("+p.rawValue(tn, prm)+")")
		}
		var expr string
		if len(finite) == 0 {
			expr = celString(table[""])
		} else {
			var pairs []string
			for _, k := range slices.Sorted(maps.Keys(table)) {
				pairs = append(pairs, celString(k)+": "+celString(table[k]))
			}
			expr = "{" + strings.Join(pairs, ", ") + "}[" + strings.Join(keyParts, ` + "\x00" + `) + "]"
		}
		digests = append(digests, celString(tn)+": "+expr)
	}
	un := "[]"
	if len(unhashable) > 0 {
		un = strings.Join(unhashable, " + ")
	}
	return []celVar{
		{"unhashable", un},
		{"digests", "{" + strings.Join(digests, ", ") + "}"},
	}
}

// digestTable is template tn's digest for every combination of its
// finite parameters' values (the indexes in finite, up to
// maxDigestCombos combinations), keyed by the values joined with NUL, the
// other parameters at the profile's values.
func (p *profile) digestTable(tn string) (table map[string]string, finite []int) {
	tmpl := p.tmpls[tn].tmpl
	base := p.defaults[tn]
	combos := 1
	for i := range tmpl.Params {
		if d := domain(&tmpl.Params[i]); len(d) > 0 && combos*len(d) <= maxDigestCombos {
			finite = append(finite, i)
			combos *= len(d)
		}
	}
	table = map[string]string{}
	var walk func(k int, vals map[string]string, key []string)
	walk = func(k int, vals map[string]string, key []string) {
		if k == len(finite) {
			table[strings.Join(key, "\x00")] = inject.TemplateDigest(tmpl, vals)
			return
		}
		prm := &tmpl.Params[finite[k]]
		for _, v := range domain(prm) {
			s := fmt.Sprint(v)
			next := maps.Clone(vals)
			next[prm.Name] = s
			walk(k+1, next, append(key[:len(key):len(key)], s))
		}
	}
	walk(0, base, nil)
	return table, finite
}

// defaultDigest is the digest digestVars picks for a Pod that sets none
// of tn's parameters.
func (p *profile) defaultDigest(tn string) string {
	table, finite := p.digestTable(tn)
	var key []string
	for _, i := range finite {
		key = append(key, p.defaults[tn][p.tmpls[tn].tmpl.Params[i].Name])
	}
	return table[strings.Join(key, "\x00")]
}

// maxDigestCombos bounds a template's digest table; parameters past it
// must hold the profile's value.
const maxDigestCombos = 64

// stalenessVars: recStale lists the record's entries graft would upgrade
// (another revision or digest than the Pod's templates have now).
func (p *profile) stalenessVars() []celVar {
	return []celVar{
		{"recStale", "variables.recEntries.filter(e, e.n in variables.templates && (e.r != " + celString(p.revision) +
			" || e.d != variables.digests[e.n]))"},
	}
}

// conflictVars find, per template the Pod gets, the containers, init
// containers and volumes of its names that the Pod holds and the record
// does not say graft injected (in the Pod's order), then the env vars
// (but those the record says graft set there) and mount paths of app
// containers that collide with the template's, in the engine's order
// (inject/own.go, judge; inject/collide.go, findCollision: ports and
// reserved uids aside, which the exported policies do not check); then
// the objects of names only templates the Pod does not get render. kept
// are the templates without a conflict of their own.
func conflictVars(inits, containers, volumes, env, mounts string, names inject.Sidecars) []celVar {
	apps := "object.spec.?containers.orValue([]).filter(c, !(c.name in variables.ownedC))"
	// An env var the record says graft set in that container is graft's;
	// any other of a template's names collides, record or not (a mount
	// of graft's own volume at its path is no collision either way).
	recordedEnv := "variables.recEntries.exists(r, r.n == t && r.apps.exists(a, a.c == c.name && e.n in a.env))"
	collisions := "(" + apps + ".map(c, " +
		env + `.filter(e, e.t == t && !e.o && c.?env.orValue([]).exists(x, x.name == e.n) && !` + recordedEnv + `).map(e, {"t": dyn(t), "k": dyn("env"), "c": dyn(c.name), "n": dyn(e.n)}) + ` +
		`c.?volumeMounts.orValue([]).map(m, ` + mounts + `.filter(e, e.t == t && e.m == m.mountPath && e.n != m.name)` +
		`.map(e, {"t": dyn(t), "k": dyn("mount"), "c": dyn(c.name), "n": dyn(m.name), "m": dyn(m.mountPath), "g": dyn(e.n)})).flatten()).flatten())`
	// Objects of a name another template of the set renders, which the
	// Pod's templates do not (inject/own.go, notPlanned), each under the
	// first template rendering it; the webhook judges nothing for a Pod
	// that gets no template, upgrades a stale record before judging, and
	// the policies refuse such records anyway.
	ctrOf, volOf := "variables.sidecarTemplate", "variables.volumeTemplate"
	foreign := func(list, object, of, ours string) string {
		return "object.spec.?" + list + ".orValue([]).filter(o, o.name in " + of + " && !(" + ours + ").exists(e, e.n == o.name))" +
			`.map(o, {"t": dyn(` + of + `[o.name]), "k": dyn("name"), "o": dyn("` + object + `"), "n": dyn(o.name)})`
	}
	ours := inits + " + " + containers
	return []celVar{
		{"sidecarTemplate", templateOf(names.Containers)},
		{"volumeTemplate", templateOf(names.Volumes)},
		// In the Pod's order, as the engine judges (inject/own.go).
		{"named", "variables.templates.map(t, " + ofTemplate("initContainers", "init container", ours, "ownedC") + " + " +
			ofTemplate("containers", "container", ours, "ownedC") + " + " + ofTemplate("volumes", "volume", volumes, "ownedV") + " + " +
			collisions + ").flatten()"},
		{"foreign", "size(variables.templates) == 0 || size(variables.recStale) > 0 ? [] : " + foreign("initContainers", "init container", ctrOf, ours) + " + " +
			foreign("containers", "container", ctrOf, ours) + " + " + foreign("volumes", "volume", volOf, volumes)},
		{"conflicts", "variables.named + variables.foreign"},
		{"kept", "variables.templates.filter(t, !variables.named.exists(c, c.t == t))"},
	}
}

// ofTemplate lists the Pod's objects of list named like one of template
// t's (among names) that the record does not say graft injected.
func ofTemplate(list, object, names, owned string) string {
	return "object.spec.?" + list + ".orValue([]).filter(o, !(o.name in variables." + owned + ") && (" + names + ").exists(e, e.t == t && e.n == o.name))" +
		`.map(o, {"t": dyn(t), "k": dyn("name"), "o": dyn("` + object + `"), "n": dyn(o.name)})`
}

// templateOf is a CEL map from each sidecar name to the first template
// rendering it, as the webhook names it in its messages.
func templateOf(m map[string][]string) string {
	if len(m) == 0 {
		return "{}"
	}
	var pairs []string
	for _, n := range slices.Sorted(maps.Keys(m)) {
		pairs = append(pairs, celString(n)+": "+celString(m[n][0]))
	}
	return "{" + strings.Join(pairs, ", ") + "}"
}

// conflictMessage is the engine's denial of conflicts[0] (inject/notice.go
// and inject/collide.go).
func (p *profile) conflictMessage() string {
	c := "variables.conflicts[0]"
	// keep ends each message inside its CEL string literal.
	keep := `; change it, or set onConflict: keep in profile \"` + p.name + `\" to admit such Pods without " + ` + c + ".t"
	return c + `.k == "env" ? "container \"" + ` + c + `.c + "\" already sets env var \"" + ` + c + `.n + "\", which template " + ` + c + `.t + ` +
		`" sets in every app container` + keep + " :\n" +
		c + `.k == "mount" ? "container \"" + ` + c + `.c + "\" already mounts volume \"" + ` + c + `.n + "\" at " + ` + c + `.m + ", where template " + ` + c + `.t + ` +
		`" mounts volume \"" + ` + c + `.g + "\"` + keep + " :\n" +
		`"Pod already has " + ` + c + `.o + " \"" + ` + c + `.n + "\", which graft did not inject; rename it, or set onConflict: keep in profile \"` +
		p.name + `\" to admit such Pods without " + ` + c + ".t"
}
