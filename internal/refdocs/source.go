package refdocs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
)

// source is what the generator reads from graft's Go files: the types that
// parse its file formats, their fields and doc comments, typed constants,
// and the template functions. Types are keyed "<package>.<Type>"; the
// fields of an anonymous struct type are keyed "<package>.<Type>.<Field>".
type source struct {
	types  map[string]ast.Expr
	fields map[string][]goField
	// consts maps a named type to its constants, in source order.
	consts map[string][]constant
	// funcs are the entries of templates' funcs map, in source order.
	funcs []constant
}

// goField is one field of a struct type.
type goField struct {
	goName string
	// key is the field's YAML key ("" when it has none: unexported, or
	// json:"-"); inline is an embedded struct whose keys are its own.
	key    string
	inline bool
	typ    ast.Expr
	doc    string
}

// constant is a named value and its doc: a typed constant, or a template
// function (Value is then its name).
type constant struct {
	Name, Value, Doc string
}

// readSource parses the non-test Go files of each package directory under
// root.
func readSource(root string, pkgs ...string) (*source, error) {
	src := &source{
		types:  map[string]ast.Expr{},
		fields: map[string][]goField{},
		consts: map[string][]constant{},
	}
	fset := token.NewFileSet()
	for _, dir := range pkgs {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			return nil, fmt.Errorf("refdocs: %w", err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("refdocs: no Go files in %s", filepath.Join(root, dir))
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			data, err := os.ReadFile(name)
			if err != nil {
				return nil, fmt.Errorf("refdocs: %w", err)
			}
			f, err := parser.ParseFile(fset, name, data, parser.ParseComments)
			if err != nil {
				return nil, fmt.Errorf("refdocs: %w", err)
			}
			src.add(f, fset)
		}
	}
	return src, nil
}

func (s *source) add(f *ast.File, fset *token.FileSet) {
	pkg := f.Name.Name
	cmap := ast.NewCommentMap(fset, f, f.Comments)
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range gen.Specs {
			switch spec := spec.(type) {
			case *ast.TypeSpec:
				key := pkg + "." + spec.Name.Name
				s.types[key] = spec.Type
				if st, ok := spec.Type.(*ast.StructType); ok {
					s.addStruct(key, st)
				}
			case *ast.ValueSpec:
				s.addValues(pkg, gen, spec, cmap)
			}
		}
	}
}

// addStruct records a struct's fields, and those of the anonymous struct
// types of its fields.
func (s *source) addStruct(key string, st *ast.StructType) {
	var fields []goField
	prev := ""
	for _, f := range st.Fields.List {
		doc := strings.TrimSpace(f.Doc.Text())
		if doc == "" {
			doc = strings.TrimSpace(f.Comment.Text())
		}
		tag := ""
		if f.Tag != nil {
			if t, err := strconv.Unquote(f.Tag.Value); err == nil {
				tag, _, _ = strings.Cut(reflect.StructTag(t).Get("json"), ",")
			}
		}
		if len(f.Names) == 0 { // embedded
			fields = append(fields, goField{goName: typeName(f.Type), inline: tag == "", key: tag, typ: f.Type, doc: doc})
			prev = doc
			continue
		}
		for _, n := range f.Names {
			d := doc
			// "TLSCert and TLSKey are ...": a field without a comment of its
			// own shares the previous one's when that names it.
			if d == "" && prev != "" && containsWord(prev, n.Name) {
				d = prev
			}
			k := tag
			switch {
			case !ast.IsExported(n.Name) || tag == "-":
				k = ""
			case k == "":
				k = n.Name
			}
			fields = append(fields, goField{goName: n.Name, key: k, typ: f.Type, doc: d})
			if nested, ok := f.Type.(*ast.StructType); ok {
				s.addStruct(key+"."+n.Name, nested)
			}
		}
		prev = doc
	}
	s.fields[key] = fields
}

// addValues records typed constants (const X T = "v") and the entries of
// templates' funcs map literal.
func (s *source) addValues(pkg string, gen *ast.GenDecl, spec *ast.ValueSpec, cmap ast.CommentMap) {
	if gen.Tok == token.CONST && spec.Type != nil {
		typ := pkg + "." + typeName(spec.Type)
		for i, n := range spec.Names {
			if i >= len(spec.Values) {
				break
			}
			if v, ok := stringLit(spec.Values[i]); ok {
				s.consts[typ] = append(s.consts[typ], constant{Name: n.Name, Value: v, Doc: strings.TrimSpace(spec.Doc.Text())})
			}
		}
		return
	}
	if gen.Tok != token.VAR || pkg != "templates" || len(spec.Names) != 1 || spec.Names[0].Name != "funcs" || len(spec.Values) != 1 {
		return
	}
	lit, ok := spec.Values[0].(*ast.CompositeLit)
	if !ok {
		return
	}
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		name, ok := stringLit(kv.Key)
		if !ok {
			continue
		}
		var doc strings.Builder
		for _, g := range cmap[kv] {
			doc.WriteString(g.Text())
		}
		s.funcs = append(s.funcs, constant{Name: name, Value: name, Doc: strings.TrimSpace(doc.String())})
	}
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil
}

func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.StarExpr:
		return typeName(e.X)
	}
	return ""
}

// containsWord reports whether s holds w as a whole word.
func containsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(w)
		if (j == 0 || !isWordByte(s[j-1])) && (end == len(s) || !isWordByte(s[end])) {
			return true
		}
		i = j + 1
	}
}

func isWordByte(b byte) bool {
	return b == '_' || ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z') || ('0' <= b && b <= '9')
}
