package refdocs

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"strings"
)

// node is the shape of one value of a YAML file format, read from the Go
// type that parses it.
type node struct {
	kind kind
	// enum lists the accepted values of a string type that has typed
	// constants.
	enum []constant
	// elem is the element of a list or map.
	elem *node
	// fields, name and path describe a struct: its keys, what it is called
	// in prose (profile, server) and where it sits (profiles.<name>).
	fields []*field
	name   string
	path   string
}

type kind int

const (
	kindString kind = iota
	kindBool
	kindInt
	kindNumber
	kindDuration
	kindObject // any JSON object (a Kubernetes type held as raw JSON)
	kindList
	kindMap
	kindStruct
)

// field is one key of a struct.
type field struct {
	name string // as written in YAML
	doc  string // with Go field names rewritten to YAML keys
	node *node
	// def is the key's default, decoded from JSON; nil when it has none.
	def any
}

// builder turns the source's types into nodes.
type builder struct {
	src *source
	// defaults holds, by section path, the defaults of the struct there,
	// decoded from JSON; "" is the root.
	defaults map[string]map[string]any
	// skip lists keys of the root left out (the chart writes apiVersion and
	// kind itself).
	skip map[string]bool
}

// build returns the node of the struct type key ("<package>.<Type>"),
// called name in prose, at path at ("" for a file's top level).
func (b *builder) build(key, name, at string) (*node, error) {
	return b.named(key, name, at)
}

func (b *builder) expr(e ast.Expr, pkg, name, at string) (*node, error) {
	switch e := e.(type) {
	case *ast.StarExpr:
		return b.expr(e.X, pkg, name, at)
	case *ast.Ident:
		switch e.Name {
		case "string":
			return &node{kind: kindString}, nil
		case "bool":
			return &node{kind: kindBool}, nil
		case "int", "int32", "int64", "uint", "uint32", "uint64":
			return &node{kind: kindInt}, nil
		case "float32", "float64":
			return &node{kind: kindNumber}, nil
		}
		return b.named(pkg+"."+e.Name, name, at)
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		if !ok {
			break
		}
		return b.named(x.Name+"."+e.Sel.Name, name, at)
	case *ast.ArrayType:
		if e.Len != nil {
			break
		}
		elem, err := b.expr(e.Elt, pkg, singular(name), at+"[]")
		return &node{kind: kindList, elem: elem}, err
	case *ast.MapType:
		if k, ok := e.Key.(*ast.Ident); !ok || k.Name != "string" {
			return nil, fmt.Errorf("refdocs: %s: map keys must be strings", at)
		}
		elem, err := b.expr(e.Value, pkg, singular(name), at+".<name>")
		return &node{kind: kindMap, elem: elem}, err
	}
	return nil, fmt.Errorf("refdocs: %s: no YAML form for the Go type %T", at, e)
}

// named resolves a named type.
func (b *builder) named(key, name, at string) (*node, error) {
	switch key {
	case "config.Duration", "time.Duration":
		return &node{kind: kindDuration}, nil
	case "json.RawMessage":
		return &node{kind: kindObject}, nil
	}
	t, ok := b.src.types[key]
	if !ok {
		return nil, fmt.Errorf("refdocs: %s: type %s is not in the source read", at, key)
	}
	if _, ok := t.(*ast.StructType); ok {
		return b.structNode(key, name, at)
	}
	n, err := b.expr(t, pkgOf(key), name, at)
	if err == nil && n.kind == kindString {
		n.enum = b.src.consts[key]
	}
	return n, err
}

func (b *builder) structNode(key, name, at string) (*node, error) {
	n := &node{kind: kindStruct, name: name, path: at}
	return n, b.addFields(n, key)
}

// addFields adds the keys of struct type key to n, those of embedded
// structs included.
func (b *builder) addFields(n *node, key string) error {
	fields, ok := b.src.fields[key]
	if !ok {
		return fmt.Errorf("refdocs: no struct %s in the source read", key)
	}
	goNames := map[string]string{}
	for _, f := range fields {
		if f.key != "" && !f.inline {
			goNames[f.goName] = f.key
		}
	}
	pkg := pkgOf(key)
	for _, f := range fields {
		if f.inline {
			embedded := pkg + "." + typeName(f.typ)
			if sel, ok := f.typ.(*ast.SelectorExpr); ok {
				embedded = sel.X.(*ast.Ident).Name + "." + sel.Sel.Name
			}
			if err := b.addFields(n, embedded); err != nil {
				return err
			}
			continue
		}
		if f.key == "" || (n.path == "" && b.skip[f.key]) {
			continue
		}
		if f.doc == "" {
			return fmt.Errorf("refdocs: %s.%s has no doc comment; document it, it is a key users set", key, f.goName)
		}
		at := join(n.path, f.key)
		// A struct's defaults are those of its parent at its key.
		if m, ok := b.defaults[n.path][f.key].(map[string]any); ok && b.defaults[at] == nil {
			b.defaults[at] = m
		}
		var child *node
		var err error
		if _, ok := f.typ.(*ast.StructType); ok {
			child, err = b.structNode(key+"."+f.goName, f.key, at)
		} else {
			child, err = b.expr(f.typ, pkg, f.key, at)
		}
		if err != nil {
			return err
		}
		n.fields = append(n.fields, &field{
			name: f.key,
			doc:  rewriteDoc(f.doc, goNames),
			node: child,
			def:  b.defaults[n.path][f.key],
		})
	}
	return nil
}

func pkgOf(key string) string {
	pkg, _, _ := strings.Cut(key, ".")
	return pkg
}

func join(at, name string) string {
	if at == "" {
		return name
	}
	return at + "." + name
}

// singular names an element after its container: profiles -> profile.
func singular(name string) string {
	if s, ok := strings.CutSuffix(name, "ies"); ok {
		return s + "y"
	}
	if s, ok := strings.CutSuffix(name, "s"); ok {
		return s
	}
	return name
}

// rewriteDoc joins a doc comment's lines and writes Go field names as the
// YAML keys users see: "DefaultProfile is served on /inject" becomes
// "`defaultProfile` is served on /inject".
func rewriteDoc(doc string, goNames map[string]string) string {
	words := strings.Fields(doc)
	for i, w := range words {
		core := strings.TrimRight(w, ".,:;)")
		lead := strings.TrimLeft(core, "(")
		if name, ok := goNames[lead]; ok {
			words[i] = strings.Replace(w, lead, "`"+name+"`", 1)
		}
	}
	return strings.Join(words, " ")
}

// constDoc is a constant's doc without its leading Go name.
func constDoc(c constant) string {
	d := strings.Join(strings.Fields(c.Doc), " ")
	d, _ = strings.CutPrefix(d, c.Name+" ")
	d = strings.TrimPrefix(d, "is ")
	if d == "" {
		return ""
	}
	return strings.ToUpper(d[:1]) + d[1:]
}

// toJSONMap is v as the JSON object it marshals to.
func toJSONMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("refdocs: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("refdocs: %w", err)
	}
	return m, nil
}

// structs lists n and every struct below it, depth first.
func (n *node) structs() []*node {
	var out []*node
	var walk func(*node)
	walk = func(n *node) {
		if n == nil {
			return
		}
		if n.kind == kindStruct {
			out = append(out, n)
			for _, f := range n.fields {
				walk(f.node)
			}
			return
		}
		walk(n.elem)
	}
	walk(n)
	return out
}
