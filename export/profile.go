package export

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

// profile is everything a profile's policies are built from.
type profile struct {
	name string
	cfg  inject.Profile
	// isDefault: the profile the label value "enabled" selects.
	isDefault bool
	excluded  []string
	// order lists every template a Pod of the profile may get: the
	// profile's own, then the others graft.dev/templates may add.
	order   []string
	allowed []string
	tmpls   map[string]*template
	// defaults holds each template's parameter values without annotations:
	// the profile's, else the template's.
	defaults map[string]map[string]string
	lenient  bool
	// keep: onConflict: keep (else deny).
	keep bool
	// revision is what graft.dev/status and graft.dev/injected record:
	// the configuration's top-level revision.
	revision string
	// sidecars are the containers the profile may inject, as graft's
	// guarantee checks them.
	sidecars map[string]Sidecar
	// names are the sidecar names every template of the set renders: an
	// object of such a name the profile does not inject is a conflict.
	names inject.Sidecars
}

func newProfile(cfg inject.Config, set *templates.Set, name string) (*profile, error) {
	// The engine validates the configuration as graft serve would.
	if _, err := inject.New(cfg, set); err != nil {
		return nil, err
	}
	cfg, err := cfg.Defaulted()
	if err != nil {
		return nil, err
	}
	pc, ok := cfg.Profiles[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (configured: %s)", inject.ErrUnknownProfile, name, strings.Join(slices.Sorted(maps.Keys(cfg.Profiles)), ", "))
	}
	p := &profile{name: name, cfg: pc, isDefault: name == cfg.DefaultProfile, excluded: cfg.ExcludedNamespaces,
		tmpls: map[string]*template{}, defaults: map[string]map[string]string{},
		lenient: pc.OnInvalidParams == inject.InvalidUseDefault,
		keep:    pc.OnConflict == inject.ConflictKeep, revision: cfg.Revision}
	if p.sidecars, err = ProfileSidecars(cfg, set, name); err != nil {
		return nil, err
	}
	p.names = inject.TemplateSidecars(set)
	p.allowed = pc.AllowedTemplates
	if len(p.allowed) == 0 {
		p.allowed = pc.Templates
	}
	p.order = slices.Clone(pc.Templates)
	for _, t := range p.allowed {
		if !slices.Contains(p.order, t) {
			p.order = append(p.order, t)
		}
	}
	var refusals []error
	for _, tn := range p.order {
		tmpl, _ := set.Get(tn) // inject.New checked every name
		c, err := compileTemplate(tmpl)
		if err != nil {
			refusals = append(refusals, err)
			continue
		}
		p.tmpls[tn] = c
		p.defaults[tn] = map[string]string{}
		for _, prm := range tmpl.Params {
			v := prm.Default
			if pv, ok := pc.Params[tn][prm.Name]; ok {
				v = pv
			}
			p.defaults[tn][prm.Name] = v
		}
	}
	if len(refusals) > 0 {
		return nil, errors.Join(refusals...)
	}
	return p, p.checkClaims()
}

// claimKinds group lists whose names share one namespace, as the engine
// claims them.
var claimKinds = map[listKind]string{
	listContainers: "container", listInits: "container", listVolumes: "volume",
	listSecrets: "imagePullSecret", listEnv: "env", listMounts: "volumeMount",
}

// checkClaims refuses templates a Pod may get together that inject the
// same name: the engine fails such Pods, the policy could not.
func (p *profile) checkClaims() error {
	owner := map[string]string{}
	claim := func(kind, name, tmpl string) error {
		k := kind + "/" + name
		if prev, ok := owner[k]; ok && prev != tmpl {
			return fmt.Errorf("profile %s: templates %s and %s both inject %s %q", p.name, prev, tmpl, kind, name)
		}
		owner[k] = tmpl
		return nil
	}
	for _, tn := range p.order {
		for _, v := range p.tmpls[tn].variants {
			for kind := range numLists {
				for _, el := range v.frag.lists[kind] {
					if err := claim(claimKinds[kind], el.name, tn); err != nil {
						return err
					}
				}
			}
			for _, e := range v.frag.annotations {
				if err := claim("annotation", e.key, tn); err != nil {
					return err
				}
			}
			for _, e := range v.frag.labels {
				if err := claim("label", e.key, tn); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// alternative is one way an element looks, in the variants listed.
type alternative struct {
	variants []int
	val      node
	// mountPath is set for app volume mounts.
	mountPath node
}

// merged is one name a template's list holds in some variants.
type merged struct {
	name string
	alts []alternative
}

// mergeList merges a list across a template's variants: each name once,
// in an order every variant agrees with, with its alternatives.
func (c *template) mergeList(get func(fragment) []element) ([]merged, error) {
	var order []string
	byName := map[string]*merged{}
	for vi, v := range c.variants {
		prev := -1
		for _, el := range get(v.frag) {
			m := byName[el.name]
			if m == nil {
				m = &merged{name: el.name}
				byName[el.name] = m
				order = slices.Insert(order, prev+1, el.name)
			}
			prev = slices.Index(order, el.name)
			placed := false
			for i := range m.alts {
				if equalNodes(m.alts[i].val, el.val) && equalNodes(m.alts[i].mountPath, el.mountPath) {
					m.alts[i].variants = append(m.alts[i].variants, vi)
					placed = true
					break
				}
			}
			if !placed {
				m.alts = append(m.alts, alternative{variants: []int{vi}, val: el.val, mountPath: el.mountPath})
			}
		}
	}
	for _, v := range c.variants {
		last := -1
		for _, el := range get(v.frag) {
			i := slices.Index(order, el.name)
			if i < last {
				return nil, &Refusal{Template: c.tmpl.Name, File: c.tmpl.File,
					Reason: fmt.Sprintf("%s comes before other elements in some variants and after them in others", el.name)}
			}
			last = i
		}
	}
	out := make([]merged, len(order))
	for i, n := range order {
		out[i] = *byName[n]
	}
	return out, nil
}

// mergeEntries does for annotations or labels what mergeList does for lists.
func (c *template) mergeEntries(get func(fragment) []entry) []merged {
	var out []merged
	idx := map[string]int{}
	for vi, v := range c.variants {
		for _, e := range get(v.frag) {
			i, ok := idx[e.key]
			if !ok {
				i = len(out)
				idx[e.key] = i
				out = append(out, merged{name: e.key})
			}
			m := &out[i]
			placed := false
			for j := range m.alts {
				if equalNodes(m.alts[j].val, e.val) {
					m.alts[j].variants = append(m.alts[j].variants, vi)
					placed = true
					break
				}
			}
			if !placed {
				m.alts = append(m.alts, alternative{variants: []int{vi}, val: e.val})
			}
		}
	}
	slices.SortFunc(out, func(a, b merged) int { return strings.Compare(a.name, b.name) })
	return out
}

// equalNodes compares nodes by the CEL they print as, which spells out
// every literal and every parameter.
func equalNodes(a, b node) bool {
	names := paramVars{tmpl: "x"}
	return celNode(a, names) == celNode(b, names)
}
