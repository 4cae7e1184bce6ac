package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// The common Pod, cheaply. Most Pods set no graft.dev/ annotation and hold
// nothing the profile's templates add: no container, volume or pull
// secret of their names, none of their annotations or labels, no app
// env var or mount of theirs. For such a pristine Pod the general merge
// (mutation.go, status.go) comes down to constants: the profile's
// templates rendered at the profile's values, added whole, and the record
// of all of it. Yet the API server evaluates every variable the general
// merge reads, building each list and string on the way, and that was
// most of what the exported policy cost per create. So the mutation takes
// the fast path below for a pristine Pod, and the general merge for any
// other; the two agree op for op on the Pods the fast path takes.
//
// The same constants say when a Pod is already what the policy makes of
// a pristine one (doneCondition), which spares the API server a second
// evaluation of the policy on the Pod it has just changed.
//
// The fast path declares no variables: each would cost every evaluation
// of the policy, match conditions included, its entry in the lazy map
// the API server builds per set of expressions it evaluates.

// rendered is one of the profile's templates at the profile's values.
type rendered struct {
	name      string
	placement templates.Placement
	digest    string
	frag      *templates.Fragment
}

// fastPath is the profile's templates for a Pod that sets no
// graft.dev/templates, in order, rendered by the template engine itself.
type fastPath struct {
	revision string
	tmpl     []rendered
	// sidecars and volumes are the names every template of the set
	// renders: a Pod holding one is for the general path, which judges it.
	sidecars, volumes []string
}

// fastPath returns nil for a profile without templates.
func (p *profile) fastPath() (*fastPath, error) {
	f := &fastPath{revision: p.revision,
		sidecars: slices.Sorted(maps.Keys(p.names.Containers)), volumes: slices.Sorted(maps.Keys(p.names.Volumes))}
	for _, tn := range p.cfg.Templates {
		if slices.ContainsFunc(f.tmpl, func(r rendered) bool { return r.name == tn }) {
			continue // the selection is distinct
		}
		t := p.tmpls[tn].tmpl
		frag, err := t.Render(p.defaults[tn])
		if err != nil {
			return nil, fmt.Errorf("export: template %s at the profile's values: %w", tn, err)
		}
		f.tmpl = append(f.tmpl, rendered{name: tn, placement: t.Placement, digest: p.defaultDigest(tn), frag: frag})
	}
	if len(f.tmpl) == 0 {
		return nil, nil
	}
	return f, nil
}

// collect lists what get returns over every template, in order.
func collect[T any](f *fastPath, get func(*templates.Fragment) []T) []T {
	var out []T
	for _, r := range f.tmpl {
		out = append(out, get(r.frag)...)
	}
	return out
}

func elementNames(els []templates.Element) []string {
	out := make([]string, len(els))
	for i, el := range els {
		out[i] = el.Name
	}
	return out
}

func kvKeys(kvs []templates.KV) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		out[i] = kv.Key
	}
	return out
}

func (f *fastPath) names(get func(*templates.Fragment) []templates.Element) []string {
	return elementNames(collect(f, get))
}

// owned are the names of the containers and init containers graft
// injects, in the order its record lists them.
func (f *fastPath) owned() []string {
	return f.names(func(fr *templates.Fragment) []templates.Element {
		return slices.Concat(fr.InitContainers, fr.Containers)
	})
}

// CEL for the parts of the Pod the fast path reads.
const (
	podAnnotations = "object.metadata.?annotations.orValue({})"
	podLabels      = "object.metadata.?labels.orValue({})"
	podInits       = "object.spec.?initContainers.orValue([])"
	podContainers  = "object.spec.?containers.orValue([])"
	podVolumes     = "object.spec.?volumes.orValue([])"
	podSecrets     = "object.spec.?imagePullSecrets.orValue([])"
)

// guard is a CEL boolean: the Pod is pristine (see above).
func (f *fastPath) guard() string {
	annotation := "k.startsWith(" + celString(names.Prefix) + ")"
	if keys := kvKeys(collect(f, func(fr *templates.Fragment) []templates.KV { return fr.Annotations })); len(keys) > 0 {
		annotation += " || k in " + celList(keys)
	}
	terms := []string{"!" + podAnnotations + ".exists(k, " + annotation + ")"}
	labels := append(kvKeys(collect(f, func(fr *templates.Fragment) []templates.KV { return fr.Labels })), names.Injected)
	terms = append(terms, "!"+podLabels+".exists(k, k in "+celList(labels)+")")
	if owned := union(f.owned(), f.sidecars); len(owned) > 0 {
		terms = append(terms,
			"!"+podInits+".exists(c, c.name in "+celList(owned)+")",
			"!"+podContainers+".exists(c, c.name in "+celList(owned)+")")
	}
	if v := union(f.names(volumesOf), f.volumes); len(v) > 0 {
		terms = append(terms, "!"+podVolumes+".exists(v, v.name in "+celList(v)+")")
	}
	if s := f.names(secretsOf); len(s) > 0 {
		terms = append(terms, "!"+podSecrets+".exists(s, s.name in "+celList(s)+")")
	}
	var app []string
	if env := f.names(envOf); len(env) > 0 {
		app = append(app, "c.?env.orValue([]).exists(x, x.name in "+celList(env)+")")
	}
	if mounts := collect(f, mountsOf); len(mounts) > 0 {
		var paths []string
		for _, m := range mounts {
			paths = append(paths, m.MountPath)
		}
		app = append(app, "c.?volumeMounts.orValue([]).exists(x, x.name in "+celList(elementNames(mounts))+" || x.mountPath in "+celList(paths)+")")
	}
	if len(app) > 0 {
		terms = append(terms, "!"+podContainers+".exists(c, "+strings.Join(app, " || ")+")",
			// The record lists app containers by name, once each.
			"size("+podContainers+".map(c, c.name).distinct()) == size("+podContainers+")")
	}
	return strings.Join(terms, "\n  && ")
}

func containersOf(fr *templates.Fragment) []templates.Element { return fr.Containers }
func volumesOf(fr *templates.Fragment) []templates.Element    { return fr.Volumes }
func secretsOf(fr *templates.Fragment) []templates.Element    { return fr.ImagePullSecrets }
func envOf(fr *templates.Fragment) []templates.Element        { return fr.AppEnv }
func mountsOf(fr *templates.Fragment) []templates.Element     { return fr.AppVolumeMounts }

// patchExpr is the fast path's JSON Patch: what the general merge writes
// for a pristine Pod.
func (f *fastPath) patchExpr() (string, error) {
	var ops []string
	add := func(op string, err error) error {
		if op != "" {
			ops = append(ops, op)
		}
		return err
	}
	if err := add(f.initOps()); err != nil {
		return "", err
	}
	for _, l := range []struct {
		path, cur string
		get       func(*templates.Fragment) []templates.Element
	}{
		{"/spec/containers", podContainers, containersOf},
		{"/spec/volumes", podVolumes, volumesOf},
		{"/spec/imagePullSecrets", podSecrets, secretsOf},
	} {
		if err := add(fastAppendOps(l.path, l.cur, collect(f, l.get))); err != nil {
			return "", err
		}
	}
	if err := add(fastAppOps("env", collect(f, envOf))); err != nil {
		return "", err
	}
	if err := add(fastAppOps("volumeMounts", collect(f, mountsOf))); err != nil {
		return "", err
	}
	status := metaOp("annotations", names.Status, f.status())
	injected := metaOp("labels", names.Injected, celString(f.revision))
	ops = append(ops,
		fastMetaOps("annotations", podAnnotations, collect(f, func(fr *templates.Fragment) []templates.KV { return fr.Annotations }), status),
		fastMetaOps("labels", podLabels, collect(f, func(fr *templates.Fragment) []templates.KV { return fr.Labels }), injected))
	return strings.Join(ops, "\n+ "), nil
}

// initOps places the init containers as initOps (mutation.go) does:
// "first" ones at the front, "before-init" ones after the Pod's native
// sidecars, "last" ones at the end.
func (f *fastPath) initOps() (string, error) {
	var first, before, last []string
	for _, r := range f.tmpl {
		for _, el := range r.frag.InitContainers {
			v, err := celJSON(el.Raw)
			if err != nil {
				return "", err
			}
			switch r.placement {
			case templates.PlaceBeforeInit:
				before = append(before, v)
			case templates.PlaceLast:
				last = append(last, v)
			default:
				first = append(first, v)
			}
		}
	}
	all := slices.Concat(first, before, last)
	if len(all) == 0 {
		return "", nil
	}
	var each []string
	for i, v := range first {
		each = append(each, fmt.Sprintf(`JSONPatch{op: "add", path: "/spec/initContainers/%d", value: %s}`, i, v))
	}
	// The index of the Pod's first ordinary init container, or its length.
	boundary := "(lists.range(size(" + podInits + ")).filter(i, " + podInits + `[i].?restartPolicy.orValue("") != "Always") + [size(` + podInits + ")])[0]"
	for i, v := range before {
		each = append(each, fmt.Sprintf(`JSONPatch{op: "add", path: "/spec/initContainers/" + string(%d + %s), value: %s}`, len(first)+i, boundary, v))
	}
	for _, v := range last {
		each = append(each, `JSONPatch{op: "add", path: "/spec/initContainers/-", value: `+v+`}`)
	}
	return "(size(" + podInits + ") == 0 ?\n" +
		`  [JSONPatch{op: "add", path: "/spec/initContainers", value: [` + strings.Join(all, ", ") + `]}] :` + "\n" +
		"  [" + strings.Join(each, ",\n  ") + "])", nil
}

// fastAppendOps appends els to the Pod's list at path, or adds the list.
func fastAppendOps(path, cur string, els []templates.Element) (string, error) {
	vals, err := celValues(els)
	if err != nil || len(vals) == 0 {
		return "", err
	}
	var each []string
	for _, v := range vals {
		each = append(each, `JSONPatch{op: "add", path: "`+path+`/-", value: `+v+`}`)
	}
	return "(size(" + cur + ") == 0 ?\n" +
		`  [JSONPatch{op: "add", path: "` + path + `", value: [` + strings.Join(vals, ", ") + `]}] :` + "\n" +
		"  [" + strings.Join(each, ",\n  ") + "])", nil
}

// fastAppOps adds els to field (env or volumeMounts) of every container of
// the Pod: on the fast path none is graft's, and none holds any of them.
func fastAppOps(field string, els []templates.Element) (string, error) {
	vals, err := celValues(els)
	if err != nil || len(vals) == 0 {
		return "", err
	}
	var each []string
	for _, v := range vals {
		each = append(each, `JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/`+field+`/-", value: `+v+`}`)
	}
	return podContainers + ".transformList(i, c, !has(c." + field + ") || size(c." + field + ") == 0 ?\n" +
		`  [JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/` + field + `", value: [` + strings.Join(vals, ", ") + `]}] :` + "\n" +
		"  [" + strings.Join(each, ",\n  ") + "]).flatten()", nil
}

// fastMetaOps adds every entry, then the op last, to the Pod's annotations
// or labels (cur), creating the map first when there is none.
func fastMetaOps(field, cur string, kvs []templates.KV, last string) string {
	var each []string
	for _, kv := range kvs {
		each = append(each, metaOp(field, kv.Key, celString(kv.Value)))
	}
	return "(size(" + cur + `) == 0 ? [JSONPatch{op: "add", path: "/metadata/` + field + `", value: {}}] : [])` +
		"\n+ [" + strings.Join(append(each, last), ",\n  ") + "]"
}

// metaOp sets key of the Pod's annotations or labels to the CEL value v.
func metaOp(field, key, v string) string {
	return `JSONPatch{op: "add", path: "/metadata/` + field + `/` + pointerToken(key) + `", value: ` + v + `}`
}

func celValues(els []templates.Element) ([]string, error) {
	var out []string
	for _, el := range els {
		v, err := celJSON(el.Raw)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// status is graft.dev/status as the general merge writes it for a
// pristine Pod: constants, but for the names of its app containers when
// a template edits them. Every template, container, volume, pull secret,
// annotation and label is recorded, graft.dev/injected with the first
// template, and every app env var and mount with each app container (the
// Pod's containers but graft's, by name, sorted).
func (f *fastPath) status() string {
	var b exprBuilder
	b.lit(`{"version":2`)
	if inj := f.owned(); len(inj) > 0 {
		b.lit(`,"injected":[` + quotedNames(inj) + `]`)
	}
	b.lit(`,"templates":[`)
	for i, r := range f.tmpl {
		if i > 0 {
			b.lit(",")
		}
		b.lit(`{"name":"` + r.name + `","revision":"` + f.revision + `","digest":"` + r.digest + `"`)
		labels := kvKeys(r.frag.Labels)
		if i == 0 {
			labels = append(labels, names.Injected)
		}
		for _, l := range []struct {
			key   string
			names []string
		}{{"initContainers", elementNames(r.frag.InitContainers)}, {"containers", elementNames(r.frag.Containers)},
			{"volumes", elementNames(r.frag.Volumes)}, {"imagePullSecrets", elementNames(r.frag.ImagePullSecrets)},
			{"annotations", kvKeys(r.frag.Annotations)}, {"labels", labels}} {
			if len(l.names) > 0 {
				b.lit(`,"` + l.key + `":[` + quotedNames(l.names) + `]`)
			}
		}
		var parts []string
		if env := elementNames(r.frag.AppEnv); len(env) > 0 {
			parts = append(parts, `"env":[`+quotedNames(env)+`]`)
		}
		if mounts := elementNames(r.frag.AppVolumeMounts); len(mounts) > 0 {
			parts = append(parts, `"volumeMounts":[`+quotedNames(mounts)+`]`)
		}
		if len(parts) > 0 {
			app := podContainers + ".map(c, c.name).filter(n, !(n in " + celList(f.owned()) + "))"
			b.expr("(size(" + app + `) > 0 ? ',"appContainers":{' + ` + app + `.distinct().sort().map(n, '"' + n + ` +
				celString(`":{`+strings.Join(parts, ",")+`}`) + `).join(",") + '}' : '')`)
		}
		b.lit("}")
	}
	b.lit("]}")
	return b.String()
}

// doneCondition is a CEL boolean, true when the Pod is what the policy
// makes of a pristine Pod and the general merge would leave it as it is:
// graft.dev/status is the record the fast path writes, graft.dev/injected
// holds this revision, no other graft.dev/ annotation is set, and every
// object the record names is there, app env vars and mounts included. It
// reads the object only: match conditions see no variables.
func (f *fastPath) doneCondition() string {
	status := celString(names.Status)
	terms := []string{
		status + " in " + podAnnotations,
		podLabels + "[?" + celString(names.Injected) + `].orValue("") == ` + celString(f.revision),
		"object.metadata.annotations[" + status + "] == " + f.status(),
		"!object.metadata.annotations.exists(k, k.startsWith(" + celString(names.Prefix) + ") && k != " + status + ")",
	}
	if owned := f.owned(); len(owned) > 0 {
		terms = append(terms, celList(owned)+".all(n, "+podInits+".exists(c, c.name == n) || "+podContainers+".exists(c, c.name == n))")
	}
	if v := f.names(volumesOf); len(v) > 0 {
		terms = append(terms, celList(v)+".all(n, "+podVolumes+".exists(v, v.name == n))")
	}
	if s := f.names(secretsOf); len(s) > 0 {
		terms = append(terms, celList(s)+".all(n, "+podSecrets+".exists(s, s.name == n))")
	}
	if a := kvKeys(collect(f, func(fr *templates.Fragment) []templates.KV { return fr.Annotations })); len(a) > 0 {
		terms = append(terms, celList(a)+".all(k, k in object.metadata.annotations)")
	}
	if l := kvKeys(collect(f, func(fr *templates.Fragment) []templates.KV { return fr.Labels })); len(l) > 0 {
		terms = append(terms, celList(l)+".all(k, k in "+podLabels+")")
	}
	var has []string
	if env := f.names(envOf); len(env) > 0 {
		has = append(has, celList(env)+".all(n, c.?env.orValue([]).exists(x, x.name == n))")
	}
	if mounts := collect(f, mountsOf); len(mounts) > 0 {
		var pairs []string
		for _, m := range mounts {
			pairs = append(pairs, "["+celString(m.Name)+", "+celString(m.MountPath)+"]")
		}
		has = append(has, "["+strings.Join(pairs, ", ")+"].all(m, c.?volumeMounts.orValue([]).exists(x, x.name == m[0] || x.mountPath == m[1]))")
	}
	if len(has) > 0 {
		terms = append(terms, podContainers+".all(c, c.name in "+celList(f.owned())+" || "+strings.Join(has, " && ")+")")
	}
	return strings.Join(terms, "\n&& ")
}

// exprBuilder joins CEL string terms with +, merging adjacent literals.
type exprBuilder struct {
	terms   []string
	pending strings.Builder // literal text not yet a term
}

func (b *exprBuilder) lit(s string) { b.pending.WriteString(s) }

func (b *exprBuilder) flush() {
	if b.pending.Len() > 0 {
		b.terms = append(b.terms, celString(b.pending.String()))
		b.pending.Reset()
	}
}

func (b *exprBuilder) expr(e string) {
	b.flush()
	b.terms = append(b.terms, e)
}

func (b *exprBuilder) String() string {
	b.flush()
	return strings.Join(b.terms, " + ")
}

// quotedNames is names as a record lists them: quoted, comma-joined.
func quotedNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = `"` + n + `"`
	}
	return strings.Join(q, ",")
}

// celJSON writes a rendered element's JSON as a CEL value.
func celJSON(raw []byte) (string, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", fmt.Errorf("export: rendered element: %w", err)
	}
	return celNode(jsonNode(v), paramVars{}), nil
}

// jsonNode turns decoded JSON into a node of literals.
func jsonNode(v any) node {
	switch v := v.(type) {
	case map[string]any:
		o := object{keys: slices.Sorted(maps.Keys(v)), vals: map[string]node{}}
		for k, x := range v {
			o.vals[k] = jsonNode(x)
		}
		return o
	case []any:
		a := make(array, len(v))
		for i, x := range v {
			a[i] = jsonNode(x)
		}
		return a
	}
	return v
}
