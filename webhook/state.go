package webhook

import (
	"fmt"
	"slices"
	"time"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

// state is everything a request reads that a reload may change. It is
// immutable once built and swapped in whole through an atomic pointer, so
// a request sees one consistent set of engines, configuration and metric
// bindings from start to end; moving a tag is a reload like any other.
type state struct {
	revs *inject.Revisions
	// eng is the top level's revision, which warms the server up.
	eng *inject.Engine
	// profiles and revisions map each profile name, and each revision and
	// tag name, to itself so a route's names can be turned into strings
	// without allocating (map lookups with string(bytes) keys do not copy).
	profiles  map[string]string
	revisions map[string]string
	bind      *bindings
	settings  config.Server
}

// loaded is what building a state reads from disk.
type loaded struct {
	file config.File
	// set is the top level's template set; revs every revision's.
	set  *templates.Set
	revs inject.RevisionsConfig
}

// load reads the config file and the templates of every revision.
// override (the flags) is applied to the file's settings before they are
// defaulted and validated. A templates directory lint refuses fails the
// load (a *templates.SetError listing the problems), at start as on a
// reload.
func load(configPath string, override func(*config.Server)) (*loaded, error) {
	f, err := config.Load(configPath)
	if err != nil {
		return nil, err
	}
	if override != nil {
		override(&f.Server)
	}
	if err := f.Server.Default(); err != nil {
		return nil, err
	}
	rc, err := f.RevisionsConfig(f.Server.TemplatesDir)
	if err != nil {
		return nil, err
	}
	return &loaded{file: f, set: rc.Revisions[0].Templates, revs: rc}, nil
}

// build makes the engines and binds the metric labels for them.
func (l *loaded) build(m *metrics, now func() time.Time) (*state, error) {
	var opts []inject.EngineOption
	if now != nil {
		opts = append(opts, inject.WithClock(now))
	}
	revs, err := inject.NewRevisions(l.revs, opts...)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	revisions := revs.Revisions()
	var templateNames []string
	for _, rc := range l.revs.Revisions {
		templateNames = append(templateNames, rc.Templates.Names()...)
	}
	slices.Sort(templateNames)
	templateNames = slices.Compact(templateNames)
	st := &state{
		revs:      revs,
		eng:       revs.Engine(revisions[0]),
		profiles:  interned(revs.Profiles()),
		revisions: interned(revs.Names()),
		bind:      m.bind(revisions, revs.Profiles(), templateNames),
		settings:  l.file.Server,
	}
	return st, nil
}

func interned(names []string) map[string]string {
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = n
	}
	return m
}

// profile resolves a route's profile name (nil: the default profile).
func (st *state) profile(name []byte) (string, bool) {
	if name == nil {
		return st.eng.DefaultProfile(), true
	}
	p, ok := st.profiles[string(name)]
	return p, ok
}

// revision resolves a route's revision or tag name (nil: the default).
func (st *state) revision(name []byte) (string, bool) {
	if name == nil {
		return "", true
	}
	r, ok := st.revisions[string(name)]
	return r, ok
}
