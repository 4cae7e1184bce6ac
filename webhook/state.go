package webhook

import (
	"fmt"
	"time"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

// state is everything a request reads that a reload may change. It is
// immutable once built and swapped in whole through an atomic pointer, so
// a request sees one consistent engine, configuration and set of metric
// bindings from start to end.
type state struct {
	eng *inject.Engine
	// profiles maps each profile name to itself so a route's profile can be
	// turned into a string without allocating (map lookups with
	// string(bytes) keys do not copy).
	profiles map[string]string
	bind     *bindings
	settings config.Server
}

// loaded is what building a state reads from disk.
type loaded struct {
	file config.File
	set  *templates.Set
}

// load reads the config file and the templates. override (the flags) is
// applied to the file's settings before they are defaulted and validated.
// A templates directory lint refuses fails the load (a
// *templates.SetError listing the problems), at start as on a reload.
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
	set, err := config.Templates(f.Server.TemplatesDir)
	if err != nil {
		return nil, err
	}
	return &loaded{file: f, set: set}, nil
}

// build makes the engine and binds the metric labels for it.
func (l *loaded) build(m *metrics, now func() time.Time) (*state, error) {
	var opts []inject.EngineOption
	if now != nil {
		opts = append(opts, inject.WithClock(now))
	}
	eng, err := inject.New(l.file.Config, l.set, opts...)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	names := make([]string, 0, len(l.file.Profiles))
	for name := range l.file.Profiles {
		names = append(names, name)
	}
	st := &state{
		eng:      eng,
		profiles: make(map[string]string, len(names)),
		bind:     m.bind(names, l.set.Names()),
		settings: l.file.Server,
	}
	for _, n := range names {
		st.profiles[n] = n
	}
	return st, nil
}

// profile resolves a route's profile name (nil: the default profile).
func (st *state) profile(name []byte) (string, bool) {
	if name == nil {
		return st.eng.DefaultProfile(), true
	}
	p, ok := st.profiles[string(name)]
	return p, ok
}
