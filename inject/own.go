package inject

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/templates"
)

// What of a Pod is graft's: decided by content, never by a name, a label
// or graft.dev/status, which a Pod's author can all write
// (docs/concepts/guarantee.md). A container or init container whose name
// a template graft serves renders, or a volume likewise, is graft's if
// and only if it is what the plan renders for this Pod, where the plan
// renders it (compare.go says what "is" allows). Anything else of such a
// name is a conflict, answered per the profile's onConflict, whichever
// template the name belongs to.

// Sidecars are the names the templates graft serves render: every
// container and init container name, and every volume name, each with
// the templates that render it, sorted. A Pod object of such a name is
// graft's only if it is graft's render.
type Sidecars struct {
	Containers map[string][]string
	Volumes    map[string][]string
}

// maxNameRenders bounds the renders TemplateSidecars makes of one
// template to find its names: every combination of its enum and bool
// parameters' values while there are at most this many, else each
// value in turn with the others at their defaults.
const maxNameRenders = 256

// TemplateSidecars returns what the templates of sets render under
// names, with every value of every enum and bool parameter (a name that
// only a string, number or list parameter's value can change is found at
// that parameter's default). A value that does not render is skipped.
// The guarantee policy (graft export, internal/registration) and the
// webhook share it.
func TemplateSidecars(sets ...*templates.Set) Sidecars {
	out := Sidecars{Containers: map[string][]string{}, Volumes: map[string][]string{}}
	for _, set := range sets {
		for _, name := range set.Names() {
			t, _ := set.Get(name)
			for _, over := range nameRenders(t) {
				text, err := t.RenderYAML(over)
				if err != nil {
					continue
				}
				var f struct {
					Containers     []struct{ Name string } `json:"containers"`
					InitContainers []struct{ Name string } `json:"initContainers"`
					Volumes        []struct{ Name string } `json:"volumes"`
				}
				if yaml.Unmarshal(text, &f) != nil {
					continue
				}
				for _, c := range append(f.Containers, f.InitContainers...) {
					addName(out.Containers, c.Name, t.Name)
				}
				for _, v := range f.Volumes {
					addName(out.Volumes, v.Name, t.Name)
				}
			}
		}
	}
	return out
}

func addName(m map[string][]string, name, tmpl string) {
	if name == "" || slices.Contains(m[name], tmpl) {
		return
	}
	m[name] = append(m[name], tmpl)
	slices.Sort(m[name])
}

// nameRenders lists the parameter overrides to render t with.
func nameRenders(t *templates.Template) []map[string]string {
	type choice struct {
		param  string
		values []string
	}
	var choices []choice
	combos := 1
	for _, p := range t.Params {
		var vals []string
		switch p.Type {
		case templates.TypeEnum:
			vals = p.Values
		case templates.TypeBool:
			vals = []string{"true", "false"}
		default:
			continue
		}
		choices = append(choices, choice{p.Name, vals})
		combos *= len(vals)
		if combos > maxNameRenders {
			combos = maxNameRenders + 1
		}
	}
	out := []map[string]string{nil}
	if combos <= maxNameRenders {
		for _, c := range choices {
			var next []map[string]string
			for _, o := range out {
				for _, v := range c.values {
					m := map[string]string{c.param: v}
					for k, x := range o {
						m[k] = x
					}
					next = append(next, m)
				}
			}
			out = next
		}
		return out
	}
	for _, c := range choices {
		for _, v := range c.values {
			out = append(out, map[string]string{c.param: v})
		}
	}
	return out
}

// sidecarIndex is Sidecars as the request path looks names up: the
// first template rendering each name (for messages).
type sidecarIndex struct {
	containers, volumes map[string]string
}

func newSidecarIndex(sc Sidecars) sidecarIndex {
	ix := sidecarIndex{containers: map[string]string{}, volumes: map[string]string{}}
	for n, ts := range sc.Containers {
		ix.containers[n] = ts[0]
	}
	for n, ts := range sc.Volumes {
		ix.volumes[n] = ts[0]
	}
	return ix
}

// whyNot says why an object named like graft's is not graft's.
type whyNot uint8

const (
	// notPlanned: no template the Pod's plan injects renders the name.
	notPlanned whyNot = iota + 1
	// misplaced: the plan renders it in the other list, or as a native
	// sidecar where the Pod has a plain init container.
	misplaced
	// differs: a compared field differs (conflict.field says which).
	differs
)

// keptObject is an object of the Pod named like graft's that is not
// graft's, which a profile with onConflict: keep keeps: the record lists
// it under kept (recordwrite.go).
type keptObject struct {
	template string
	kind     listKind // kInits, kContainers or kVolumes
	name     string
}

// judge decides which of p's objects named like graft's (ix) are
// graft's under pl: own[ref] for the plan's elements the Pod holds as
// rendered, and per Pod object in s.initOwn, s.ctrOwn and s.volOwn the
// element's ref, or -1. It notes, per plan template, the first of its
// names the Pod holds that is not graft's (s.named), the objects of
// other templates' names (s.foreign), and every such object (s.keptObjs).
// It checks budget b per object and compared value.
func (s *scratch) judge(pl *plan, ix *sidecarIndex, p *pod, b *budget) {
	s.initOwn = resetRefs(s.initOwn, len(p.initContainers))
	s.ctrOwn = resetRefs(s.ctrOwn, len(p.containers))
	s.volOwn = resetRefs(s.volOwn, len(p.volumes))
	s.owned, s.ownedAny = resetBools(s.owned, len(pl.byRef)), false
	s.named = s.named[:0]
	for range pl.tmpls {
		s.named = append(s.named, conflict{})
	}
	s.foreign, s.keptObjs, s.fields = s.foreign[:0], s.keptObjs[:0], s.fields[:0]
	if ix == nil {
		return
	}
	for i := range p.initContainers {
		c := &p.initContainers[i]
		if tmpl, ok := ix.containers[c.name]; ok {
			s.initOwn[i] = s.judgeContainer(pl, p, b, c.name, c.raw, true, tmpl)
		}
	}
	for i := range p.containers {
		c := &p.containers[i]
		if tmpl, ok := ix.containers[c.name]; ok {
			s.ctrOwn[i] = s.judgeContainer(pl, p, b, c.name, c.raw, false, tmpl)
		}
	}
	for i, name := range p.volumes {
		tmpl, ok := ix.volumes[name]
		if !ok || i >= len(p.volumeRaw) {
			continue
		}
		el := pl.volumeNamed(name)
		if el == nil {
			s.notGraft(pl, conflict{object: "volume", name: name, tmpl: -1, template: tmpl, why: notPlanned}, kVolumes)
			continue
		}
		d := differ{p: p, b: b}
		sc := scanner{s: p.volumeRaw[i]}
		if !d.same(&sc, el.render, shVolume) {
			s.notGraft(pl, conflict{object: "volume", name: name, tmpl: el.tmpl, template: pl.tmpls[el.tmpl].name,
				why: differs, field: s.where(&d)}, kVolumes)
			continue
		}
		s.volOwn[i] = int32(el.ref)
		s.own(pl, el)
	}
}

// judgeContainer judges one container (init: an init container) named
// like one of tmpl's, and returns the ref of the plan's element it is,
// or -1.
func (s *scratch) judgeContainer(pl *plan, p *pod, b *budget, name, raw string, init bool, tmpl string) int32 {
	object, kind := "container", kContainers
	if init {
		object, kind = "init container", kInits
	}
	el, elInit := pl.containerNamed(name)
	if el == nil {
		s.notGraft(pl, conflict{object: object, name: name, tmpl: -1, template: tmpl, why: notPlanned}, kind)
		return -1
	}
	c := conflict{object: object, name: name, tmpl: el.tmpl, template: pl.tmpls[el.tmpl].name}
	if init != elInit {
		c.why, c.field = misplaced, placementText(el, elInit)
		s.notGraft(pl, c, kind)
		return -1
	}
	// A native sidecar's lost restartPolicy is repaired, not a conflict
	// (repair.go): everything else of it must be graft's.
	d := differ{p: p, b: b, tokenOK: el.token.ok, skipRestart: el.sidecar}
	sc := scanner{s: raw}
	if !d.same(&sc, el.render, shContainer) {
		c.why, c.field = differs, s.where(&d)
		s.notGraft(pl, c, kind)
		return -1
	}
	s.own(pl, el)
	return int32(el.ref)
}

// placementText says where the plan renders el, for a misplaced one,
// after "as an init container" (conflictMessage): "" for a container.
func placementText(el *element, init bool) string {
	switch {
	case !init:
		return ""
	case el.sidecar:
		return " with restartPolicy: Always (a native sidecar)"
	}
	return " without restartPolicy"
}

// own marks el graft's in the Pod.
func (s *scratch) own(pl *plan, el *element) {
	s.owned[el.ref] = true
	if !s.cur.credits(pl.tmpls[el.tmpl].name, el.kind, el.name) {
		s.ownedAny = true // the record must name it
	}
}

// notGraft notes an object named like graft's that is not graft's: the
// first per plan template, and every one of another template's name.
func (s *scratch) notGraft(pl *plan, c conflict, kind listKind) {
	s.keptObjs = append(s.keptObjs, keptObject{template: c.template, kind: kind, name: c.name})
	if c.tmpl < 0 {
		s.foreign = append(s.foreign, c)
		return
	}
	if s.named[c.tmpl].object == "" {
		s.named[c.tmpl] = c
	}
}

// where copies the location of d's difference into the scratch and
// returns it (it lives as long as the request's scratch).
func (s *scratch) where(d *differ) string {
	from := len(s.fields)
	s.fields = d.appendWhere(s.fields)
	return b2s(s.fields[from:])
}

func resetRefs(r []int32, n int) []int32 {
	r = r[:0]
	for range n {
		r = append(r, -1)
	}
	return r
}

// containerNamed returns the plan's container or init container called
// name, and whether it is an init container; nil when there is none.
func (pl *plan) containerNamed(name string) (*element, bool) {
	if el := pl.initNamed(name); el != nil {
		return el, true
	}
	for i := range pl.sidecars {
		if pl.sidecars[i].name == name {
			return &pl.sidecars[i], false
		}
	}
	return nil, false
}

// volumeNamed returns the plan's volume called name, or nil.
func (pl *plan) volumeNamed(name string) *element {
	for i := range pl.volumes {
		if pl.volumes[i].name == name {
			return &pl.volumes[i]
		}
	}
	return nil
}

// renderOf parses a container's, volume's or env var's render as the API
// server stores it (compare.go).
func renderOf(kind string, raw []byte) (*rnode, error) {
	var typ any
	switch kind {
	case "container":
		typ = &corev1.Container{}
	case "volume":
		typ = &corev1.Volume{}
	case "env":
		typ = &corev1.EnvVar{}
	default:
		return nil, nil
	}
	return newRender(raw, typ)
}

// appEnvIsGraft reports whether an app container's env var (its JSON)
// is what template's element el renders: then graft set it, and it is
// no collision.
func appEnvIsGraft(el *element, raw string, p *pod, b *budget) bool {
	if el.render == nil {
		return false
	}
	d := differ{p: p, b: b}
	sc := scanner{s: raw}
	return d.same(&sc, el.render, shEnv)
}
