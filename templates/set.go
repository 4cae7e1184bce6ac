package templates

import (
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/internal/bounded"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// MaxFileBytes bounds a template file; real ones are a few KiB.
const MaxFileBytes = 1 << 20

// Set is an immutable set of templates by name.
type Set struct {
	byName map[string]*Template
}

// Builtin returns the templates embedded in the binary.
func Builtin() (*Set, error) {
	sub, err := fs.Sub(builtinFS, "builtin")
	if err != nil {
		return nil, fmt.Errorf("builtin templates: %w", err)
	}
	return LoadFS(sub)
}

// LoadDir loads every *.yaml file of dir as a template.
func LoadDir(dir string) (*Set, error) {
	s, err := LoadFS(os.DirFS(dir))
	if err != nil {
		return nil, fmt.Errorf("templates dir %s: %w", dir, err)
	}
	return s, nil
}

// LoadFS loads every *.yaml file at the root of fsys as a template. Each
// file holds one template whose name must match the file name.
func LoadFS(fsys fs.FS) (*Set, error) {
	files, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	s := &Set{byName: make(map[string]*Template, len(files))}
	for _, file := range files {
		data, err := bounded.ReadFS(fsys, file, MaxFileBytes)
		if err != nil {
			return nil, err
		}
		t, err := Parse(file, data)
		if err != nil {
			return nil, err
		}
		if want := strings.TrimSuffix(path.Base(file), ".yaml"); t.Name != want {
			return nil, fmt.Errorf("%s: template name %q does not match the file name", file, t.Name)
		}
		s.byName[t.Name] = t
	}
	if len(s.byName) == 0 {
		return nil, fmt.Errorf("no templates (*.yaml) found")
	}
	return s, nil
}

// Parse parses and validates one template file's contents.
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
	if _, err := t.Render(nil); err != nil {
		return nil, fmt.Errorf("%s: with defaults: %w", file, err)
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
