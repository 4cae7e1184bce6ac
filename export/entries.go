package export

import (
	"slices"
	"strconv"
	"strings"

	graftnames "github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// A profile's additions as CEL: for each list (and the annotations and
// labels), a policy variable listing the entries of the templates the Pod
// gets, in template order, each a map: "n" the name, "v" the value, "p"
// the placement (init containers), "m" the mount path (app volume mounts);
// for metadata "k" the key, "pk" the key as a JSON Pointer token, "v",
// "r" "true" when the key is in graft's domains (names.Reserved: graft's
// value replaces the Pod's), else "false" (a map literal's values share a
// type); every entry "t", the template that adds it.

// celVar is a policy variable.
type celVar struct{ name, expr string }

// listVars names the profile-level variables of each list.
var listVars = [numLists]string{
	listContainers: "containers", listInits: "inits", listVolumes: "volumes",
	listSecrets: "pullSecrets", listEnv: "env", listMounts: "mounts",
}

var placementCode = map[templates.Placement]string{
	templates.PlaceFirst: "f", templates.PlaceBeforeInit: "b", templates.PlaceLast: "l",
}

// condition is a CEL boolean: the Pod's parameters pick one of variants.
func (c *template) condition(variants []int, names paramVars) string {
	if len(variants) == len(c.variants) {
		return "true"
	}
	// A box (every combination of some values per parameter) reads as a
	// conjunction; anything else as a disjunction of variants.
	var terms []string
	size := 1
	for _, b := range c.branch {
		var vals []any
		for _, vi := range variants {
			if v := c.variants[vi].fixed[b.Name]; !slices.Contains(vals, v) {
				vals = append(vals, v)
			}
		}
		size *= len(vals)
		if len(vals) < len(domain(b)) {
			terms = append(terms, valueIn(names, b, vals))
		}
	}
	if size == len(variants) {
		return strings.Join(terms, " && ")
	}
	var alts []string
	for _, vi := range variants {
		var conj []string
		for _, b := range c.branch {
			conj = append(conj, valueIn(names, b, []any{c.variants[vi].fixed[b.Name]}))
		}
		alts = append(alts, "("+strings.Join(conj, " && ")+")")
	}
	return "(" + strings.Join(alts, " || ") + ")"
}

func valueIn(names paramVars, p *templates.Param, vals []any) string {
	v := names.text(holeSrc{param: p, item: -1})
	var lits []string
	for _, x := range vals {
		s, _ := x.(string)
		if b, ok := x.(bool); ok {
			s = map[bool]string{true: "true", false: "false"}[b]
		}
		lits = append(lits, celString(s))
	}
	if len(lits) == 1 {
		return v + " == " + lits[0]
	}
	return v + " in [" + strings.Join(lits, ", ") + "]"
}

// entryList is a CEL list of one template's entries of a list or map;
// empty when the template has none. Consecutive entries present in the
// same variants share one condition.
func entryList(c *template, ms []merged, entry func(alternative, string) string) string {
	names := paramVars{tmpl: c.tmpl.Name}
	var terms []string
	var run []string // consecutive entries under one condition
	runCond := ""
	flush := func() {
		if len(run) == 0 {
			return
		}
		list := "[" + strings.Join(run, ", ") + "]"
		if runCond != "true" {
			list = "(" + runCond + " ? " + list + " : [])"
		}
		terms = append(terms, list)
		run = nil
	}
	for _, m := range ms {
		if len(m.alts) == 1 {
			cond := c.condition(m.alts[0].variants, names)
			if cond != runCond {
				flush()
				runCond = cond
			}
			run = append(run, entry(m.alts[0], m.name))
			continue
		}
		flush()
		expr := "[]"
		for i := len(m.alts) - 1; i >= 0; i-- {
			a := m.alts[i]
			expr = "(" + c.condition(a.variants, names) + " ? [" + entry(a, m.name) + "] : " + expr + ")"
		}
		terms = append(terms, expr)
	}
	flush()
	return strings.Join(terms, " + ")
}

// listEntries is the CEL list of tmpl's entries of list kind; namesOnly
// leaves out the values, for the policies that only compare names.
func (p *profile) listEntries(tn string, kind listKind, namesOnly bool) (string, error) {
	c := p.tmpls[tn]
	ms, err := c.mergeList(func(f fragment) []element { return f.lists[kind] })
	if err != nil {
		return "", err
	}
	names := paramVars{tmpl: tn}
	return entryList(c, ms, func(a alternative, name string) string {
		e := `{"n": dyn(` + celString(name) + `), "t": dyn(` + celString(tn) + ")"
		switch kind {
		case listEnv:
			// Whether an app container may set it itself (collisions).
			e += `, "o": dyn(` + strconv.FormatBool(c.tmpl.EnvOverridable(name)) + ")"
		case listMounts:
			if namesOnly { // the path is what collides
				e += `, "m": dyn(` + celNode(a.mountPath, names) + ")"
			}
		}
		if namesOnly {
			return e + "}"
		}
		e += `, "v": dyn(` + celNode(a.val, names) + ")"
		switch kind {
		case listInits:
			e += `, "p": dyn("` + placementCode[c.tmpl.Placement] + `")`
		case listMounts:
			e += `, "m": dyn(` + celNode(a.mountPath, names) + ")"
		}
		return e + "}"
	}), nil
}

// metaEntries is the CEL list of tmpl's annotations or labels.
func (p *profile) metaEntries(tn string, labels bool) string {
	c := p.tmpls[tn]
	get := func(f fragment) []entry { return f.annotations }
	if labels {
		get = func(f fragment) []entry { return f.labels }
	}
	names := paramVars{tmpl: tn}
	return entryList(c, c.mergeEntries(get), func(a alternative, key string) string {
		return `{"k": ` + celString(key) + `, "pk": ` + celString(pointerToken(key)) + `, "t": ` + celString(tn) + `, "v": ` + celNode(a.val, names) +
			`, "r": "` + strconv.FormatBool(graftnames.Reserved(key)) + `"}`
	})
}

// pointerToken escapes a map key for a JSON Pointer (RFC 6901).
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// byTemplate combines per-template CEL lists into one variable over the
// templates in the CEL list tmpls, in its order.
func byTemplate(perTemplate map[string]string, order []string, tmpls string) string {
	var arms []string
	for _, tn := range order {
		if l := perTemplate[tn]; l != "" {
			arms = append(arms, tn)
		}
	}
	switch len(arms) {
	case 0:
		return "[]"
	case 1:
		return "(" + celString(arms[0]) + " in " + tmpls + " ? " + perTemplate[arms[0]] + " : [])"
	}
	expr := "[]"
	for i := len(arms) - 1; i >= 0; i-- {
		expr = "t == " + celString(arms[i]) + " ? " + perTemplate[arms[i]] + " : " + expr
	}
	return tmpls + ".map(t, " + expr + ").flatten()"
}

// usedParams lists the parameters a profile's compiled templates read, by
// template, in declaration order.
func (p *profile) usedParams() map[string][]*templates.Param {
	out := map[string][]*templates.Param{}
	for _, tn := range p.order {
		c := p.tmpls[tn]
		used := map[*templates.Param]bool{}
		for _, b := range c.branch {
			used[b] = true
		}
		for _, v := range c.variants {
			var nodes []node
			for kind := range numLists {
				for _, el := range v.frag.lists[kind] {
					nodes = append(nodes, el.val, el.mountPath)
				}
			}
			for _, e := range append(slices.Clone(v.frag.annotations), v.frag.labels...) {
				nodes = append(nodes, e.val)
			}
			for _, n := range nodes {
				walkParams(n, func(p *templates.Param) { used[p] = true })
			}
		}
		for i := range c.tmpl.Params {
			if prm := &c.tmpl.Params[i]; used[prm] {
				out[tn] = append(out[tn], prm)
			}
		}
	}
	return out
}

func walkParams(n node, add func(*templates.Param)) {
	switch n := n.(type) {
	case object:
		for _, k := range n.keys {
			walkParams(n.vals[k], add)
		}
	case array:
		for _, e := range n {
			walkParams(e, add)
		}
	case typed:
		add(n.src.param)
	case str:
		for _, pc := range n {
			switch {
			case pc.param:
				add(pc.src.param)
			case pc.rng != nil:
				add(pc.rng.list)
				walkParams(pc.rng.first, add)
				walkParams(pc.rng.rest, add)
			}
		}
	}
}
