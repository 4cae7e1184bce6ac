package templates

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// A parameter value is text: whatever it holds, it must not change the
// structure of the YAML the fragment renders (a newline and a key in an
// unquoted image: would add a command and an env var to the sidecar). So
// every render whose string or list values hold a character outside
// [A-Za-z0-9._/-] is compared with a render of the same values defanged
// (each other character replaced by x): the two must parse to documents
// of the same shape (the same keys, list lengths and kinds of scalar).
// Defanged values follow the same branches of the template as the real
// ones but cannot carry YAML syntax, so a difference is the value's
// syntax at work. Lint also refuses templates that write such a parameter
// unquoted (lintInterpolation); this check holds for any template.

// safeRune reports whether r can carry no YAML syntax in any context.
func safeRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '/' || r == '-'
}

// defang replaces each unsafe character of s by x; changed reports
// whether any was.
func defang(s string) (string, bool) {
	if !strings.ContainsFunc(s, func(r rune) bool { return !safeRune(r) }) {
		return s, false
	}
	return strings.Map(func(r rune) rune {
		if safeRune(r) {
			return r
		}
		return 'x'
	}, s), true
}

// defangParam returns vals with the value of p defanged, and whether that
// changed it; only string and list values can hold YAML syntax.
func defangParam(vals map[string]any, p *Param) (map[string]any, bool) {
	out := maps.Clone(vals)
	switch v := vals[p.Name].(type) {
	case string:
		if p.Type != TypeString {
			return vals, false
		}
		d, changed := defang(v)
		out[p.Name] = d
		return out, changed
	case []string:
		items := slices.Clone(v)
		changed := false
		for i, it := range items {
			var c bool
			items[i], c = defang(it)
			changed = changed || c
		}
		out[p.Name] = items
		return out, changed
	}
	return vals, false
}

// checkStructure compares text, the render of vals, with the render of
// vals defanged, and names each parameter whose value changes the
// document's structure (or breaks its syntax): one whose real value,
// with every other defanged, renders another shape than all defanged.
func (t *Template) checkStructure(vals map[string]any, text []byte) []string {
	all := vals
	var changed []*Param
	for i := range t.Params {
		p := &t.Params[i]
		d, c := defangParam(all, p)
		if c {
			all = d
			changed = append(changed, p)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	want, err := t.shape(all)
	if err != nil {
		return nil // the template's own problem, reported with the real render
	}
	if got, err := shapeOf(text); err == nil && shapesEqual(want, got) {
		return nil
	}
	var out []string
	for _, p := range changed {
		one := maps.Clone(all)
		one[p.Name] = vals[p.Name]
		if got, err := t.shape(one); err != nil || !shapesEqual(want, got) {
			out = append(out, fmt.Sprintf("parameter %s: the value changes the structure of the rendered fragment "+
				"(it holds YAML syntax where the template writes it as is)", p.Name))
		}
	}
	if len(out) == 0 {
		out = append(out, "the parameter values change the structure of the rendered fragment (they hold YAML syntax where the template writes them as is)")
	}
	return out
}

// shape renders vals and parses the result.
func (t *Template) shape(vals map[string]any) (any, error) {
	text, err := t.execute(vals)
	if err != nil {
		return nil, err
	}
	return shapeOf(text)
}

// shapeOf parses rendered YAML into generic JSON values.
func shapeOf(text []byte) (any, error) {
	js, err := yaml.YAMLToJSON(text)
	if err != nil {
		return nil, err
	}
	var v any
	err = json.Unmarshal(js, &v)
	return v, err
}

// shapesEqual compares documents by shape: the same number of keys
// holding the same shapes, the same list lengths, the same kinds of
// scalar, whatever the scalars' values and the keys' names (a value may
// name a key).
func shapesEqual(a, b any) bool { return signature(a) == signature(b) }

// signature writes a document's shape: a map as its members' shapes
// sorted, a list as its elements' in order, a scalar as its kind.
func signature(v any) string {
	switch x := v.(type) {
	case map[string]any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			parts = append(parts, signature(e))
		}
		slices.Sort(parts)
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = signature(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case string:
		return "s"
	case float64:
		return "n"
	case bool:
		return "b"
	case nil:
		return "0"
	}
	return "?"
}
