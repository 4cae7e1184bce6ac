package boundaries

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/graftdev/graft/internal/names"
)

const module = "github.com/graftdev/graft"

// repoRoot is the repository's root: tests run in internal/boundaries.
const repoRoot = "../.."

// importGraph is what `go list -deps` says of the main module's packages
// and everything they import (tests excluded): each package's direct
// imports.
type importGraph map[string][]string

// loadGraph lists every package of the main module and its dependencies.
func loadGraph(t *testing.T) importGraph {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}", "./...")
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./...: %v\n%s", err, stderr.Bytes())
	}
	g := importGraph{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		path, imports, _ := strings.Cut(sc.Text(), "\t")
		g[path] = strings.Fields(imports)
	}
	if len(g[module+"/inject"]) == 0 {
		t.Fatalf("go list -deps listed no imports of %s/inject:\n%s", module, out)
	}
	return g
}

// chain returns a shortest import chain from pkg to a package that
// matches, or nil if pkg depends on none.
func (g importGraph) chain(pkg string, matches func(string) bool) []string {
	prev := map[string]string{pkg: ""}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p != pkg && matches(p) {
			var c []string
			for ; p != ""; p = prev[p] {
				c = append(c, p)
			}
			slices.Reverse(c)
			return c
		}
		for _, next := range g[p] {
			if _, seen := prev[next]; !seen {
				prev[next] = p
				queue = append(queue, next)
			}
		}
	}
	return nil
}

// under reports whether path is one of prefixes or a package under one.
func under(prefixes ...string) func(string) bool {
	return func(path string) bool {
		for _, p := range prefixes {
			if path == p || strings.HasPrefix(path, p+"/") {
				return true
			}
		}
		return false
	}
}

// clientGo is the Kubernetes client library: only internal/live reads
// a cluster.
const clientGo = "k8s.io/client-go"

// The written boundaries: what a package must never depend on, directly
// or through anything it imports.
func TestPackagesStayInsideTheirBoundaries(t *testing.T) {
	g := loadGraph(t)
	server := []string{"github.com/valyala/fasthttp", module + "/webhook"}
	logging := []string{"go.uber.org/zap"}
	metrics := []string{"github.com/prometheus/client_golang"}
	rules := []struct {
		pkg, why  string
		forbidden []string
	}{
		{module + "/inject", "the engine reports what happened in a result; the server turns it into logs and metrics, and it reads no cluster",
			slices.Concat(server, logging, metrics, []string{clientGo})},
		{module + "/internal/offline", "the offline commands run the engine without the server", server},
		{module + "/internal/manifest", "the offline commands run the engine without the server", server},
		{module + "/audit", "audit is handed Pods and Namespaces; internal/live reads the cluster", slices.Concat(server, []string{clientGo})},
	}
	for _, r := range rules {
		if _, ok := g[r.pkg]; !ok {
			t.Errorf("%s: no such package in the module: a rule that checks nothing", r.pkg)
			continue
		}
		if c := g.chain(r.pkg, under(r.forbidden...)); c != nil {
			t.Errorf("%s depends on %s (%s), and must not: %s", r.pkg, c[len(c)-1], strings.Join(c, " -> "), r.why)
		}
	}
}

// client-go is reached only through internal/live: a package of the
// module that depends on it is internal/live or imports it, and no other
// package of the module imports client-go itself.
func TestClientGoOnlyThroughLive(t *testing.T) {
	g := loadGraph(t)
	live := module + "/internal/live"
	if c := g.chain(live, under(clientGo)); c == nil {
		t.Fatalf("%s does not depend on client-go: the rule checks nothing", live)
	}
	for _, pkg := range slices.Sorted(maps.Keys(g)) {
		if !under(module)(pkg) || pkg == live {
			continue
		}
		c := g.chain(pkg, under(clientGo))
		if c == nil {
			continue
		}
		if !slices.Contains(c, live) {
			t.Errorf("%s depends on client-go other than through %s: %s", pkg, live, strings.Join(c, " -> "))
		}
	}
}

// goFiles parses every Go file of both modules (testdata and hidden
// directories aside; tests only with tests) and hands each to visit with
// its path from the repository's root.
func goFiles(t *testing.T, tests bool, mode parser.Mode, visit func(rel string, f *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || (!tests && strings.HasSuffix(path, "_test.go")) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, mode)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		visit(filepath.ToSlash(rel), f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// unsafe code is fenced into files named unsafe*.go, in both modules and
// in tests too, so a reviewer knows where to look.
func TestUnsafeOnlyInUnsafeFiles(t *testing.T) {
	var fenced []string
	goFiles(t, true, parser.ImportsOnly, func(rel string, f *ast.File) {
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p != "unsafe" {
				continue
			}
			if strings.HasPrefix(path.Base(rel), "unsafe") {
				fenced = append(fenced, rel)
			} else {
				t.Errorf("%s imports unsafe: move that code into a file named unsafe*.go", rel)
			}
		}
	})
	if len(fenced) == 0 {
		t.Error("no unsafe*.go file imports unsafe: the walk found nothing, or the fence moved")
	}
	t.Logf("unsafe code is in %s", strings.Join(fenced, ", "))
}

// httpServers are the packages that serve HTTP, in both modules, and
// why. A fix to health, timeouts or limits is made in internal/admin
// once; a new server is a decision, made here.
var httpServers = map[string]string{
	"webhook":                       "the admission webhook's TLS port (fasthttp)",
	"internal/admin":                "the admin port of graft serve, graft audit --serve and graft watchdog",
	"bench/peers/conventional":      "the load tests' peer: a webhook as most are written",
	"bench/peers/floor":             "the load tests' peer: the least a webhook can do",
	"bench/peers/internal/peerkit":  "the peers' admin port",
	"e2e/cmd/podlatency":            "the Pod-latency measurement's minimal webhook",
	"e2e/internal/standin/app":      "the e2e suite's stand-in application",
	"e2e/internal/standin/firstlog": "the e2e suite's stand-in log receiver",
}

// serverAPI is what serving HTTP takes, by import path.
var serverAPI = map[string][]string{
	"net/http":                    {"Server", "Serve", "ServeTLS", "ListenAndServe", "ListenAndServeTLS"},
	"github.com/valyala/fasthttp": {"Server", "Serve", "ServeTLS", "ServeTLSEmbed", "ListenAndServe", "ListenAndServeTLS", "ListenAndServeTLSEmbed", "ListenAndServeUNIX"},
}

// Every package that serves HTTP (its non-test files use a server of
// net/http or fasthttp) is one of httpServers, and every one of those
// does.
func TestHTTPServersListed(t *testing.T) {
	serving := map[string]bool{}
	goFiles(t, false, 0, func(rel string, f *ast.File) {
		names := map[string][]string{} // local name of an import -> its server API
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			api, ok := serverAPI[p]
			if !ok {
				continue
			}
			name := path.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = api
		}
		if len(names) == 0 {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && slices.Contains(names[x.Name], sel.Sel.Name) {
				serving[path.Dir(rel)] = true
			}
			return true
		})
	})
	for _, pkg := range slices.Sorted(maps.Keys(serving)) {
		if _, ok := httpServers[pkg]; !ok {
			t.Errorf("%s serves HTTP and is not in httpServers: serve an admin port with internal/admin, or list it and say why", pkg)
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(httpServers)) {
		if !serving[pkg] {
			t.Errorf("%s is in httpServers and serves no HTTP: take it off the list", pkg)
		}
	}
}

// spelt are names that only internal/names spells, in code outside the
// commands' help, the tests, the e2e suite and the load tests.
var spelt = []string{names.SystemNamespace, names.AppNameLabel, names.ManagedByLabel}

// Every name users see is spelt in internal/names alone (its rule); and
// export's CEL names graft's prefix with names.Prefix.
func TestNamesSpeltInNames(t *testing.T) {
	literals := 0
	goFiles(t, false, 0, func(rel string, f *ast.File) {
		if strings.HasPrefix(rel, "internal/names/") || strings.HasPrefix(rel, "cmd/") ||
			strings.HasPrefix(rel, "e2e/") || strings.HasPrefix(rel, "bench/") {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			literals++
			s, _ := strconv.Unquote(lit.Value)
			for _, name := range spelt {
				if strings.Contains(s, name) {
					t.Errorf("%s: %.80q spells %s: use internal/names", rel, s, name)
				}
			}
			if strings.HasPrefix(rel, "export/") && strings.Contains(s, names.Prefix) {
				t.Errorf("%s: %.80q spells %s: build the CEL from names.Prefix and the names built on it", rel, s, names.Prefix)
			}
			return true
		})
	})
	if literals < 1000 {
		t.Fatalf("%d string literals read: the walk found too few", literals)
	}
}
