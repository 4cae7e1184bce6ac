package templates

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/internal/bounded"
)

// Problem is one thing wrong with a template, found by Lint.
type Problem struct {
	// File is the template's file name within the linted directory.
	File string
	// Template is the template's name, or the file name without .yaml when
	// the file could not be parsed.
	Template string
	Message  string
}

// String is the `file: template: problem` line `graft templates lint` prints.
func (p Problem) String() string { return p.File + ": " + p.Template + ": " + p.Message }

// In is the line for a tree linted at dir: p.File joined to dir.
func (p Problem) In(dir string) string {
	p.File = filepath.Join(dir, p.File)
	return p.String()
}

// noTemplates is the problem of a set or tree without a template.
var noTemplates = Problem{File: ".", Template: "-", Message: "no templates (*.yaml) found"}

// Lint lints every directory of fsys that holds *.yaml templates (fsys's
// root included; hidden and testdata directories skipped), each as one
// template set. For each template it parses it, renders it with its
// defaults and with every parameter at its bounds, and checks what it
// renders against the Kubernetes rules a Pod must meet. Within a set it
// checks that no two templates inject the same container, volume, port, app
// env var, app mount path or metadata key, so that any of them combine.
// Problem.File is relative to fsys. The error is for a tree that cannot be
// walked; everything else is a Problem.
func Lint(fsys fs.FS) ([]Problem, error) {
	var dirs []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return fs.SkipDir
		}
		if !d.IsDir() && path.Ext(p) == ".yaml" && !slices.Contains(dirs, path.Dir(p)) {
			dirs = append(dirs, path.Dir(p))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	if len(dirs) == 0 {
		return []Problem{noTemplates}, nil
	}
	var problems []Problem
	for _, dir := range dirs {
		_, ps, err := lintDir(fsys, dir, lintCases)
		if err != nil {
			return nil, err
		}
		problems = append(problems, ps...)
	}
	return problems, nil
}

// lintDir parses and lints the templates directly in dir as one set,
// rendering each in the cases cases gives. It returns every template that
// parsed, problems or not.
func lintDir(fsys fs.FS, dir string, cases func(*Template) []lintCase) ([]*Template, []Problem, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, nil, fmt.Errorf("list templates: %w", err)
	}
	var problems []Problem
	var linted []*Template
	var defaults []rendered // for lintAcross
	for _, ent := range entries {
		if ent.IsDir() || path.Ext(ent.Name()) != ".yaml" {
			continue
		}
		file := path.Join(dir, ent.Name())
		base := strings.TrimSuffix(ent.Name(), ".yaml")
		data, err := bounded.ReadFS(fsys, file, MaxFileBytes)
		if err != nil {
			problems = append(problems, Problem{file, base, fmt.Sprintf("read: %v", err)})
			continue
		}
		t, err := Parse(file, data)
		if err != nil {
			// Parse prefixes its errors with the file name; say it once.
			msg := strings.TrimPrefix(err.Error(), file+": ")
			problems = append(problems, Problem{file, base, msg})
			continue
		}
		if t.Name != base {
			problems = append(problems, Problem{file, t.Name, fmt.Sprintf("template name %q does not match the file name", t.Name)})
		}
		for _, msg := range append(lintBooleans(data), t.lintInterpolation()...) {
			problems = append(problems, Problem{file, t.Name, msg})
		}
		msgs, f := lintTemplate(t, cases(t))
		for _, msg := range msgs {
			problems = append(problems, Problem{file, t.Name, msg})
		}
		linted = append(linted, t)
		if f != nil {
			defaults = append(defaults, rendered{t, f})
		}
	}
	return linted, append(problems, lintAcross(defaults)...), nil
}

// lintBooleans finds template fields meant as strings that YAML 1.1, which
// the loader follows, reads as booleans: an unquoted on, off, yes, no, y or
// n. Parsing turns them into "true" or "false" without a word, so an enum
// value off silently becomes false.
func lintBooleans(data []byte) []string {
	var doc struct {
		Name       any `json:"name"`
		Parameters []struct {
			Name    any   `json:"name"`
			Type    any   `json:"type"`
			Default any   `json:"default"`
			Values  []any `json:"values"`
		} `json:"parameters"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil // Parse reports it
	}
	var out []string
	flag := func(where string, v any) {
		if b, ok := v.(bool); ok {
			out = append(out, fmt.Sprintf("%s reads as the boolean %t (YAML 1.1 takes unquoted on, off, yes, no, y and n as booleans): quote it", where, b))
		}
	}
	flag("name", doc.Name)
	for i, p := range doc.Parameters {
		where := fmt.Sprintf("parameters[%d]", i)
		if name, ok := p.Name.(string); ok {
			where = fmt.Sprintf("parameter %s", name)
		}
		flag(where+": name", p.Name)
		if p.Type != string(TypeBool) {
			flag(where+": default", p.Default)
		}
		for j, v := range p.Values {
			flag(fmt.Sprintf("%s: values[%d]", where, j), v)
		}
	}
	return out
}

// lintCase is one set of overrides Lint renders a template with.
type lintCase struct {
	label     string
	overrides map[string]string
}

// lintTemplate renders t in every case and returns each distinct problem
// once, labelled with the first case that showed it, and the fragment of
// the first case (the defaults) if it rendered.
func lintTemplate(t *Template, cases []lintCase) (out []string, defaults *Fragment) {
	seen := map[string]bool{}
	for i, c := range cases {
		f, err := t.Render(c.overrides)
		if i == 0 {
			defaults = f
		}
		var found []string
		rerr, isRender := errors.AsType[*RenderError](err)
		switch {
		case isRender:
			found = rerr.Problems
		case err != nil:
			found = []string{err.Error()}
		default:
			if msg := t.lintLevel(f, c.overrides); msg != "" {
				found = []string{msg}
			}
			found = append(found, t.lintOS(f)...)
			if i == 0 {
				found = append(found, t.lintReserved(f)...)
			}
		}
		for _, msg := range found {
			if !seen[msg] {
				seen[msg] = true
				out = append(out, c.label+": "+msg)
			}
		}
	}
	return out, defaults
}

// defaultsOnly is the one case of a template known to pass lintCases.
func defaultsOnly(*Template) []lintCase { return []lintCase{{label: "with defaults"}} }

// lintCases are the defaults, each parameter alone at each of its bounds
// (min, max, every enum value, both bools, the shortest and longest list),
// then every bounded parameter at its min together, and at its max.
func lintCases(t *Template) []lintCase {
	cases := defaultsOnly(t)
	allMin, allMax := map[string]string{}, map[string]string{}
	for i := range t.Params {
		p := &t.Params[i]
		var values []string
		switch p.Type {
		case TypeInt, TypeQuantity, TypeDuration:
			if p.Min != "" {
				values = append(values, p.Min)
				allMin[p.Name] = p.Min
			}
			if p.Max != "" {
				values = append(values, p.Max)
				allMax[p.Name] = p.Max
			}
		case TypeEnum:
			values = p.Values
		case TypeBool:
			values = []string{"false", "true"}
		case TypeList:
			lo, hi, ok := listBounds(p)
			if ok {
				values = append(values, lo, hi)
				allMin[p.Name], allMax[p.Name] = lo, hi
			}
		}
		for _, v := range values {
			if v == p.Default {
				continue
			}
			label := fmt.Sprintf("with %s=%q", p.Name, v)
			if p.Type == TypeList {
				label = fmt.Sprintf("with %d items in %s", listLen(v), p.Name)
			}
			cases = append(cases, lintCase{label: label, overrides: map[string]string{p.Name: v}})
		}
	}
	if len(allMin) > 1 {
		cases = append(cases, lintCase{label: "with every parameter at its min", overrides: allMin})
	}
	if len(allMax) > 1 {
		cases = append(cases, lintCase{label: "with every parameter at its max", overrides: allMax})
	}
	return cases
}

// listBounds builds the shortest and longest lists p accepts by repeating
// the items of its default. A list whose default is empty can only be
// tried empty.
func listBounds(p *Param) (lo, hi string, ok bool) {
	v, err := p.Parse(p.Default)
	if err != nil {
		return "", "", false
	}
	items := v.([]string)
	n := func(bound string, fallback int) int {
		var k int
		if _, err := fmt.Sscan(bound, &k); err != nil {
			return fallback
		}
		return k
	}
	minN, maxN := n(p.Min, 0), n(p.Max, len(items))
	if len(items) == 0 {
		return "", "", minN == 0
	}
	repeat := func(k int) string {
		out := make([]string, k)
		for i := range out {
			out[i] = items[i%len(items)]
		}
		return strings.Join(out, ",")
	}
	return repeat(minN), repeat(maxN), true
}

func listLen(v string) int {
	if v == "" {
		return 0
	}
	return strings.Count(v, ",") + 1
}

// owner is where a name shared across templates was first seen.
type owner struct{ template, file string }

// rendered is a template and its fragment with defaults.
type rendered struct {
	t *Template
	f *Fragment
}

// lintAcross reports names two templates, rendered with their defaults,
// would both inject into one Pod.
func lintAcross(rs []rendered) []Problem {
	slices.SortFunc(rs, func(a, b rendered) int { return strings.Compare(a.t.Name, b.t.Name) })
	seen := map[string]owner{}
	var problems []Problem
	for _, r := range rs {
		t := r.t
		for _, key := range injectedNames(r.f) {
			if o, dup := seen[key]; dup && o.template != t.Name {
				problems = append(problems, Problem{t.File, t.Name,
					fmt.Sprintf("%s is also injected by template %s (%s)", key, o.template, o.file)})
				continue
			}
			seen[key] = owner{t.Name, t.File}
		}
	}
	return problems
}
