package inject

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/graftdev/graft/templates"
)

// engineState is the Engine's derived, immutable-after-New state plus its
// caches and pools.
type engineState struct {
	profileNames []string
	profiles     map[string]*profileState
	excluded     []string
	shapes       shapeCache[*patchRecipe]
	podShapes    shapeCache[[]*patchRecipe]
	plans        planCache
	records      recordCache
	nextPlanID   atomic.Uint32
	scratch      scratchPool
	// maxAnnotations is maxAnnotationBytes (tests lift it to measure the
	// injection of Pods past it).
	maxAnnotations int
	// sidecars are the names every template graft serves renders: the
	// engine's set's, or with Revisions every revision's (own.go).
	sidecars sidecarIndex
}

type profileState struct {
	name string
	cfg  Profile
	// templates are cfg.Templates and allowed the templates a Pod may
	// choose with graft.dev/templates (cfg.AllowedTemplates, or the
	// profile's own when that is empty), resolved from the set once, in New.
	templates, allowed []*templates.Template
	// def is the plan for Pods without graft annotations.
	def *planEntry
}

// New builds an Engine from cfg and the template set. It renders every
// profile's templates with their defaults, so a bad template or parameter
// in the configuration fails here, not on the first Pod.
func New(cfg Config, set *templates.Set, opts ...EngineOption) (*Engine, error) {
	if set == nil {
		return nil, fmt.Errorf("%w: no template set", ErrConfig)
	}
	if err := checkSonicNode(); err != nil {
		return nil, err
	}
	cfg = cfg.clone()
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, now: time.Now, impl: &engineState{
		profiles:       make(map[string]*profileState, len(cfg.Profiles)),
		excluded:       cfg.ExcludedNamespaces,
		maxAnnotations: maxAnnotationBytes,
	}}
	for _, o := range opts {
		o(e)
	}
	st := e.impl
	st.shapes.m = make(map[string]*patchRecipe)
	st.podShapes.m = make(map[string][]*patchRecipe)
	st.plans.m = make(map[string]*planEntry)
	st.records.m = make(map[string]*readStatus)
	st.sidecars = newSidecarIndex(TemplateSidecars(set))
	for name, p := range cfg.Profiles {
		ps := &profileState{name: name, cfg: p}
		var err error
		if ps.templates, err = resolveTemplates(set, p.Templates); err != nil {
			return nil, fmt.Errorf("%w: profile %q: %w", ErrConfig, name, err)
		}
		ps.allowed = ps.templates
		if len(p.AllowedTemplates) > 0 {
			if ps.allowed, err = resolveTemplates(set, p.AllowedTemplates); err != nil {
				return nil, fmt.Errorf("%w: profile %q: %w", ErrConfig, name, err)
			}
		}
		if err := p.checkLocks(ps.allowed); err != nil {
			return nil, fmt.Errorf("%w: profile %q: %w", ErrConfig, name, err)
		}
		if err := p.checkLocks(ps.templates); err != nil {
			return nil, fmt.Errorf("%w: profile %q: %w", ErrConfig, name, err)
		}
		def, err := e.buildEntry(ps, ps.templates, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: profile %q: %w", ErrConfig, name, err)
		}
		if def.denyMsg != "" {
			return nil, fmt.Errorf("%w: profile %q: %s", ErrConfig, name, def.denyMsg)
		}
		ps.def = def
		// A template a Pod may add must render within the profile's
		// guards with the profile's own values, or no Pod could add it.
		for _, t := range ps.allowed {
			if slices.Contains(ps.templates, t) {
				continue
			}
			if _, err := e.buildEntry(ps, []*templates.Template{t}, nil); err != nil {
				return nil, fmt.Errorf("%w: profile %q: allowed template %s: %w", ErrConfig, name, t.Name, err)
			}
		}
		st.profiles[name] = ps
		st.profileNames = append(st.profileNames, name)
	}
	slices.Sort(st.profileNames)
	return e, nil
}

// resolveTemplates looks names up in set, in order.
func resolveTemplates(set *templates.Set, names []string) ([]*templates.Template, error) {
	out := make([]*templates.Template, 0, len(names))
	for _, n := range names {
		t, ok := set.Get(n)
		if !ok {
			return nil, fmt.Errorf("unknown template %q", n)
		}
		out = append(out, t)
	}
	return out, nil
}

func (e *Engine) profile(name string) (*profileState, error) {
	if name == "" {
		name = e.cfg.DefaultProfile
	}
	ps, ok := e.impl.profiles[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownProfile, name)
	}
	return ps, nil
}

// Admit answers the AdmissionReview in body: it appends the response
// AdmissionReview to dst and returns it with a Result. body is only read,
// and only during the call; Result's byte fields alias it. An error means
// no response was written: the body is not a review (ErrMalformed) or the
// profile is unknown (ErrUnknownProfile).
func (e *Engine) Admit(dst, body []byte, o Options) ([]byte, Result, error) {
	return e.admit(dst, body, o, nil)
}

// Fail answers the review in body as the profile's failure mode says for
// reason (ReasonOverload, ReasonBudgetExceeded or ReasonInternal), without
// injecting: allowed with a warning, or denied with a message.
func (e *Engine) Fail(dst, body []byte, o Options, reason Reason) ([]byte, Result, error) {
	ps, err := e.profile(o.Profile)
	if err != nil {
		return dst, Result{}, err
	}
	s := e.getScratch()
	defer e.putScratch(s)
	if err := parseReview(b2s(body), &s.rv, nil); err != nil {
		return dst, Result{}, err
	}
	res := Result{Operation: s.rv.operation, Profile: ps.name, DryRun: s.rv.dryRun,
		UID: s2b(s.rv.uid), Namespace: s2b(s.rv.namespace), Name: s2b(s.rv.name)}
	return e.fail(dst, &s.rv, ps, reason, &res), res, nil
}

func (e *Engine) getScratch() *scratch { return e.impl.scratch.get() }

func (e *Engine) putScratch(s *scratch) { e.impl.scratch.put(s) }

func (c Config) clone() Config {
	out := c
	out.Profiles = make(map[string]Profile, len(c.Profiles))
	for k, v := range c.Profiles {
		out.Profiles[k] = v
	}
	out.ExcludedNamespaces = slices.Clone(c.ExcludedNamespaces)
	return out
}
