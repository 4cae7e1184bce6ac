package inject

import (
	"go/ast"
	"go/build/constraint"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	sonicast "github.com/bytedance/sonic/ast"
)

// TestSonicNodeMirror holds the mirror to sonic's real ast.Node: field
// names, offsets, sizes and kinds, then what a raw node reads as.
func TestSonicNodeMirror(t *testing.T) {
	if err := sameLayout(reflect.TypeFor[sonicast.Node](), reflect.TypeFor[sonicNode]()); err != nil {
		t.Fatal(err)
	}
	if err := checkSonicNode(); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{`{"a":[1,2,{"b":"c"}]} ,x`, `[1, "two", null]]`, `{}`, `[]`, `{"k":"v\"}"}`} {
		sr := sonicast.NewSearcher(in)
		sr.ValidateJSON = false
		n, err := sr.GetByPath()
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		got, ok := rawSpan(&n)
		want, err := n.Raw()
		if !ok || err != nil || got != want {
			t.Errorf("%q: mirror %q (ok %v), Raw %q (%v)", in, got, ok, want, err)
		}
	}
}

// TestSameLayoutCatches shows the layout check failing, at the field it
// should name, for each way a mirror can go wrong. (The mirrors end in
// uintptr fields where the first difference comes earlier.)
func TestSameLayoutCatches(t *testing.T) {
	//lint:ignore U1000 the mirrors are read only through reflect
	type renamed struct {
		typ  int64
		l    uint
		p, m uintptr
	}
	//lint:ignore U1000 the mirrors are read only through reflect
	type reordered struct {
		l    uint
		t    int64
		p, m uintptr
	}
	//lint:ignore U1000 the mirrors are read only through reflect
	type otherKind struct {
		t    uint64
		l    uint
		p, m uintptr
	}
	//lint:ignore U1000 the mirrors are read only through reflect
	type integerPointers struct {
		t    int64
		l    uint
		p, m uintptr
	}
	//lint:ignore U1000 the mirrors are read only through reflect
	type smaller struct {
		t    int32
		l    uint32
		p, m uintptr
	}
	//lint:ignore U1000 the mirrors are read only through reflect
	type fewer struct {
		t int64
		l uint
		p uintptr
	}
	node := reflect.TypeFor[sonicast.Node]()
	for _, tt := range []struct {
		mirror reflect.Type
		want   string
	}{
		{reflect.TypeFor[renamed](), "field 0"},
		{reflect.TypeFor[reordered](), "field 0"},
		{reflect.TypeFor[otherKind](), "field 0"},
		{reflect.TypeFor[integerPointers](), "field 2"},
		{reflect.TypeFor[smaller](), "bytes"},
		{reflect.TypeFor[fewer](), "fields"},
		{reflect.TypeFor[int](), "structs"},
	} {
		err := sameLayout(node, tt.mirror)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error about %s", tt.mirror, err, tt.want)
		}
	}
}

// TestSonicVersion fails when the module moves sonic away from the
// release the mirror was verified against: re-read sonic's ast/node.go,
// then update sonicVerified. A test binary carries no dependency versions
// in its build info (debug.ReadBuildInfo lists none), so it asks the go
// command which sonic the module builds with, replacements included.
func TestSonicVersion(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f",
		"{{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}", "github.com/bytedance/sonic").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/bytedance/sonic: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != sonicVerified {
		t.Fatalf("sonic is %s, the ast.Node mirror in unsafe.go was verified against %s", got, sonicVerified)
	}
}

// TestGo128GuardStopsTheBuild checks that unsafe_go128.go is built from
// Go 1.28 on, and only then, and that it does not compile, naming the
// file to re-check.
func TestGo128GuardStopsTheBuild(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "unsafe_go128.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	expr := buildConstraint(t, f)
	for release, want := range map[string]bool{"go1.26": false, "go1.27": false, "go1.28": true, "go1.29": true} {
		if got := expr.Eval(func(tag string) bool { return releaseAtLeast(release, tag) }); got != want {
			t.Errorf("built with %s: %v, want %v", release, got, want)
		}
	}
	// The checker also objects that this Go is older than the file asks;
	// look for the guard's own error among all of them.
	var errs []string
	conf := types.Config{Importer: importer.Default(), Error: func(err error) { errs = append(errs, err.Error()) }}
	conf.Check("inject", fset, []*ast.File{f}, nil)
	if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "re-check the ast.Node mirror in inject/unsafe.go") }) {
		t.Errorf("unsafe_go128.go compiles or does not name the file to re-check: %q", errs)
	}
}

func buildConstraint(t *testing.T, f *ast.File) constraint.Expr {
	t.Helper()
	for _, g := range f.Comments {
		for _, c := range g.List {
			if constraint.IsGoBuild(c.Text) {
				expr, err := constraint.Parse(c.Text)
				if err != nil {
					t.Fatal(err)
				}
				return expr
			}
		}
	}
	t.Fatal("unsafe_go128.go has no //go:build line")
	return nil
}

// releaseAtLeast says whether a toolchain of release satisfies the
// release tag tag (go1.N tags hold for every later release too).
func releaseAtLeast(release, tag string) bool {
	minor := func(v string) int {
		n := 0
		for _, c := range strings.TrimPrefix(v, "go1.") {
			n = n*10 + int(c-'0')
		}
		return n
	}
	return strings.HasPrefix(tag, "go1.") && minor(tag) <= minor(release)
}

func TestOffsetIn(t *testing.T) {
	text := `{"a":[1,2],"b":3} and more`
	outer := text[:17]
	other := strings.Clone(outer)
	for _, tt := range []struct {
		name  string
		inner string
		want  int
		ok    bool
	}{
		{"whole", outer, 0, true},
		{"middle", outer[5:10], 5, true},
		{"last byte", outer[len(outer)-1:], len(outer) - 1, true},
		{"another string", other[5:10], 0, false},
		{"runs past the end", text[10:20], 0, false},
	} {
		got, ok := offsetIn(outer, tt.inner)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("%s: %d %v, want %d %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}
