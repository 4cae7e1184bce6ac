package config

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/suggest"
	"github.com/graftdev/graft/internal/yamlerr"
)

// decodeStrict decodes one YAML document into v (a pointer to a struct with
// json tags). It first walks the document against v's type, so that every
// problem a user can make (an unknown or misspelt key, a key given twice, a
// list where a string belongs) is reported with its line; then it decodes
// with sigs.k8s.io/yaml, the reader Kubernetes tools use, so values mean
// what they mean in a manifest (YAML 1.1: an unquoted yes is true). It
// returns the document's root node, nil for an empty file.
func decodeStrict(file string, data []byte, v any) (*yamlv3.Node, error) {
	dec := yamlv3.NewDecoder(strings.NewReader(string(data)))
	var doc yamlv3.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return nil, nil
	case err != nil:
		return nil, syntaxError(file, data, err)
	}
	var extra yamlv3.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line
		if err != nil {
			return nil, syntaxError(file, data, err)
		}
		return nil, &Error{File: file, Line: line, Msg: "a second YAML document; the configuration is one document"}
	}
	root := &doc
	if root.Kind == yamlv3.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	w := walker{file: file}
	if err := w.walk(root, reflect.TypeOf(v).Elem(), ""); err != nil {
		return nil, err
	}
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		// The walk accepts what this decoder accepts; reaching here is a
		// gap in the walk, still reported rather than hidden.
		return nil, &Error{File: file, Msg: err.Error()}
	}
	return root, nil
}

// isEmptyDocument reports a document that holds nothing: no node at all
// (an empty file, or only comments) or a null.
func isEmptyDocument(root *yamlv3.Node) bool {
	if root == nil {
		return true
	}
	if root.Kind == yamlv3.DocumentNode && len(root.Content) == 0 {
		return true
	}
	return root.Kind == yamlv3.ScalarNode && root.ShortTag() == "!!null"
}

// syntaxError turns a YAML syntax error into an *Error on the line the
// problem is on (the library names the line its enclosing block began).
func syntaxError(file string, data []byte, err error) error {
	line, problem := yamlerr.Locate(data, err)
	return &Error{File: file, Line: line, Msg: "invalid YAML: " + problem}
}

// keyLine is the line of key in the mapping root, or 1.
func keyLine(root *yamlv3.Node, key string) int {
	if root != nil && root.Kind == yamlv3.MappingNode {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == key {
				return root.Content[i].Line
			}
		}
	}
	return 1
}

// walker checks a YAML node tree against a Go type's json-tagged shape.
type walker struct{ file string }

func (w *walker) errorf(n *yamlv3.Node, path, format string, args ...any) error {
	return &Error{File: w.file, Line: n.Line, Path: path, Msg: fmt.Sprintf(format, args...)}
}

func (w *walker) walk(n *yamlv3.Node, t reflect.Type, path string) error {
	n = resolve(n)
	if isNull(n) {
		return nil // a null leaves the field at its zero value
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[Duration]() {
		return w.duration(n, path)
	}
	if values := enumValues(t); values != nil {
		if n.Kind != yamlv3.ScalarNode || !slices.Contains(values, n.Value) {
			return w.errorf(n, path, "%s: want %s", describe(n), strings.Join(values, " or "))
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		fields := jsonFields(t)
		return w.mapping(n, path, func(k, v *yamlv3.Node) error {
			ft, ok := fields[k.Value]
			if !ok {
				return w.errorf(k, path, "unknown field %q%s", k.Value, suggest.Hint(k.Value, slices.Collect(maps.Keys(fields)), "valid fields"))
			}
			return w.walk(v, ft, join(path, k.Value))
		})
	case reflect.Map:
		return w.mapping(n, path, func(k, v *yamlv3.Node) error {
			return w.walk(v, t.Elem(), join(path, k.Value))
		})
	case reflect.Slice:
		if n.Kind != yamlv3.SequenceNode {
			return w.errorf(n, path, "%s: want a list", describe(n))
		}
		for i, el := range n.Content {
			if err := w.walk(el, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.String:
		if n.Kind != yamlv3.ScalarNode || (n.Tag != "!!str" && n.Tag != "!!timestamp") || isYAML11Bool(n) {
			return w.errorf(n, path, "%s: want a string%s", describe(n), quoteHint(n))
		}
	case reflect.Bool:
		if n.Kind != yamlv3.ScalarNode || (n.Tag != "!!bool" && !isYAML11Bool(n)) {
			return w.errorf(n, path, "%s: want true or false", describe(n))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Kind != yamlv3.ScalarNode || n.Tag != "!!int" {
			return w.errorf(n, path, "%s: want a whole number", describe(n))
		}
	}
	return nil
}

// mapping calls visit for each key and value of the mapping n, refusing a
// key given twice. Merge keys (<<) visit the merged mappings' entries.
func (w *walker) mapping(n *yamlv3.Node, path string, visit func(k, v *yamlv3.Node) error) error {
	if n.Kind != yamlv3.MappingNode {
		return w.errorf(n, path, "%s: want a mapping", describe(n))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Tag == "!!merge" {
			for _, m := range mergedMappings(v) {
				if err := w.mapping(m, path, visit); err != nil {
					return err
				}
			}
			continue
		}
		if k.Kind != yamlv3.ScalarNode {
			return w.errorf(k, path, "a key must be a string")
		}
		if first, dup := seen[k.Value]; dup {
			return w.errorf(k, join(path, k.Value), "given twice (first on line %d)", first)
		}
		seen[k.Value] = k.Line
		if err := visit(k, v); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) duration(n *yamlv3.Node, path string) error {
	if n.Kind != yamlv3.ScalarNode || n.Tag != "!!str" {
		return w.errorf(n, path, "%s: want a duration such as \"200ms\" or \"1m\"", describe(n))
	}
	if _, err := time.ParseDuration(n.Value); err != nil {
		return w.errorf(n, path, "%q: want a duration such as \"200ms\" or \"1m\"", n.Value)
	}
	return nil
}

// enumValues lists the values of the engine's enumerated settings, so a
// wrong one is reported with its line here rather than without one when
// the engine is built.
func enumValues(t reflect.Type) []string {
	switch t {
	case reflect.TypeFor[inject.FailureMode]():
		return []string{string(inject.FailAllow), string(inject.FailDeny)}
	case reflect.TypeFor[inject.InvalidParamsMode]():
		return []string{string(inject.InvalidDeny), string(inject.InvalidUseDefault)}
	case reflect.TypeFor[inject.ConflictMode]():
		return []string{string(inject.ConflictDeny), string(inject.ConflictKeep)}
	}
	return nil
}

// jsonFields maps each json key of struct type t to its field's type,
// embedded structs' fields included, as encoding/json promotes them.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
		case name == "":
			out[f.Name] = f.Type
		default:
			out[name] = f.Type
		}
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func resolve(n *yamlv3.Node) *yamlv3.Node {
	for n.Kind == yamlv3.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yamlv3.Node) bool { return n.Kind == yamlv3.ScalarNode && n.Tag == "!!null" }

func mergedMappings(v *yamlv3.Node) []*yamlv3.Node {
	v = resolve(v)
	if v.Kind == yamlv3.SequenceNode {
		var out []*yamlv3.Node
		for _, el := range v.Content {
			out = append(out, resolve(el))
		}
		return out
	}
	return []*yamlv3.Node{v}
}

// isYAML11Bool reports a plain scalar that YAML 1.1, which Kubernetes
// tools and this package's decoder follow, reads as a boolean.
func isYAML11Bool(n *yamlv3.Node) bool {
	if n.Kind != yamlv3.ScalarNode || n.Style != 0 {
		return false
	}
	switch n.Value {
	case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
		"true", "True", "TRUE", "false", "False", "FALSE",
		"on", "On", "ON", "off", "Off", "OFF":
		return true
	}
	return false
}

// describe names what a node holds, for messages.
func describe(n *yamlv3.Node) string {
	switch n.Kind {
	case yamlv3.MappingNode:
		return "a mapping"
	case yamlv3.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

func quoteHint(n *yamlv3.Node) string {
	if n.Kind == yamlv3.ScalarNode {
		return fmt.Sprintf(" (YAML reads %s unquoted as another type: write %q)", n.Value, n.Value)
	}
	return ""
}
