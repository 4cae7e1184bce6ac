package templates

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// MaxFileBytes bounds a template file; real ones are a few KiB.
const MaxFileBytes = 1 << 20

// Set is an immutable set of templates by name.
type Set struct {
	byName map[string]*Template
}

// Builtin returns the templates embedded in the binary. They are rendered
// with their defaults only: TestLintBuiltinPasses and `make lint-templates`
// render them at every bound when they change, and the binary cannot
// change them, so graft serve does not pay that (about 10 renders per
// parameter) on every start and reload.
func Builtin() (*Set, error) {
	sub, err := fs.Sub(builtinFS, "builtin")
	if err != nil {
		return nil, fmt.Errorf("builtin templates: %w", err)
	}
	return loadFS(sub, defaultsOnly)
}

// LoadDir loads the *.yaml files of dir as a template set (see LoadFS).
func LoadDir(dir string) (*Set, error) {
	s, err := LoadFS(os.DirFS(dir))
	if se, ok := errors.AsType[*SetError](err); ok {
		se.Dir = dir
	}
	if err != nil {
		return nil, fmt.Errorf("templates dir %s: %w", dir, err)
	}
	return s, nil
}

// LoadFS loads the *.yaml files at the root of fsys as a template set, each
// file one template whose name matches the file name. It runs the checks of
// `graft templates lint` on the set (every template rendered at its
// parameter bounds, the set's templates against each other) and refuses a
// set with any problem with a *SetError listing them all: a server never
// starts or reloads with a set lint refuses.
func LoadFS(fsys fs.FS) (*Set, error) { return loadFS(fsys, lintCases) }

func loadFS(fsys fs.FS, cases func(*Template) []lintCase) (*Set, error) {
	ts, problems, err := lintDir(fsys, ".", cases)
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 && len(problems) == 0 {
		problems = []Problem{noTemplates}
	}
	if len(problems) > 0 {
		return nil, &SetError{Problems: problems}
	}
	s := &Set{byName: make(map[string]*Template, len(ts))}
	for _, t := range ts {
		s.byName[t.Name] = t
	}
	return s, nil
}

// SetError is a template set refused because lint found problems in it.
type SetError struct {
	// Dir is the directory the set was loaded from; Problems' files are
	// relative to it.
	Dir      string
	Problems []Problem
}

func (e *SetError) Error() string {
	return fmt.Sprintf("%d template problem(s):\n%s", len(e.Problems), strings.Join(e.Lines(), "\n"))
}

// Lines are the problems as `graft templates lint` prints them.
func (e *SetError) Lines() []string {
	out := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p.In(e.Dir)
	}
	return out
}

// Parse parses one template file's contents and checks its declaration:
// name, description, placement, parameters and the fragment's template
// syntax. What the fragment renders to is checked by Render, and at every
// parameter bound by LoadFS and Lint.
func Parse(file string, data []byte) (*Template, error) {
	var t Template
	if err := yaml.UnmarshalStrict(data, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	t.File = file
	t.Source = append([]byte(nil), data...)
	if err := t.init(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &t, nil
}

// Get returns the template called name.
func (s *Set) Get(name string) (*Template, bool) {
	t, ok := s.byName[name]
	return t, ok
}

// Names returns the template names, sorted.
func (s *Set) Names() []string { return slices.Sorted(maps.Keys(s.byName)) }

// With returns a set holding s's templates overlaid by other's: a template
// of other replaces one of s with the same name.
func (s *Set) With(other *Set) *Set {
	out := &Set{byName: maps.Clone(s.byName)}
	maps.Copy(out.byName, other.byName)
	return out
}
