package boundaries

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/refdocs"
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
		{module + "/export", "a profile compiles to admission policies without a cluster", []string{module + "/internal/live", clientGo}},
		{module + "/internal/names", "the names sit under everything: names.go imports none of graft's packages", []string{module}},
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

// imported is an import's path and the name the file knows it by (the
// path's last element, as graft's packages are named, unless renamed).
func imported(imp *ast.ImportSpec) (importPath, name string) {
	importPath, _ = strconv.Unquote(imp.Path.Value)
	name = path.Base(importPath)
	if imp.Name != nil {
		name = imp.Name.Name
	}
	return importPath, name
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
			p, name := imported(imp)
			if api, ok := serverAPI[p]; ok {
				names[name] = api
			}
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

// ownImports are the packages of graft's module pkg imports itself.
func (g importGraph) ownImports(pkg string) []string {
	var own []string
	for _, p := range g[pkg] {
		if under(module)(p) {
			own = append(own, p)
		}
	}
	return own
}

// closure is pkg and every package of graft's module it depends on.
func (g importGraph) closure(pkg string) []string {
	seen := map[string]bool{pkg: true}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, q := range g.ownImports(p) {
			if !seen[q] {
				seen[q] = true
				queue = append(queue, q)
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// templates stays a leaf: what it imports of graft's imports nothing of
// graft's (the names, bounded reading, image references), so the template
// format never depends on the engine, the configuration or a command.
func TestTemplatesIsALeaf(t *testing.T) {
	g := loadGraph(t)
	tmpl := module + "/templates"
	if len(g.ownImports(tmpl)) == 0 {
		t.Fatalf("%s imports none of graft's packages: the rule checks nothing", tmpl)
	}
	for _, p := range g.ownImports(tmpl) {
		if own := g.ownImports(p); len(own) > 0 {
			t.Errorf("%s imports %s, which imports %s: templates may import only packages that import none of graft's",
				tmpl, p, strings.Join(own, ", "))
		}
	}
}

// domain are the packages of what graft decides, not how it is reached:
// the engine, the template format, the configuration, the audit, the
// export and the registration, the rollout's plans, the names.
var domain = []string{"inject", "templates", "config", "audit", "export", "rollout", "internal/registration", "internal/names"}

// The domain packages, and graft's packages they depend on, import
// neither net/http nor a command-line library: serving and flags belong
// to the servers (webhook, internal/admin) and the commands (cmd/graft).
// (net/http is reached through Kubernetes' libraries; no graft package
// among them imports it.)
func TestDomainPackagesNeitherServeNorParseFlags(t *testing.T) {
	g := loadGraph(t)
	cli := []string{"github.com/spf13/cobra", "github.com/spf13/pflag"}
	for _, d := range domain {
		pkg := module + "/" + d
		if _, ok := g[pkg]; !ok {
			t.Errorf("%s: no such package", pkg)
			continue
		}
		for _, p := range g.closure(pkg) {
			if slices.Contains(g[p], "net/http") {
				t.Errorf("%s imports net/http (%s depends on it)", p, d)
			}
		}
		if c := g.chain(pkg, under(cli...)); c != nil {
			t.Errorf("%s depends on %s: %s", d, c[len(c)-1], strings.Join(c, " -> "))
		}
	}
}

// webhook knows nothing about Pods: it imports no Kubernetes API types
// itself (the engine reads the reviews it carries).
func TestWebhookKnowsNoPods(t *testing.T) {
	g := loadGraph(t)
	for _, p := range g[module+"/webhook"] {
		if under("k8s.io/api")(p) {
			t.Errorf("webhook imports %s: the engine reads Pods, the server moves bytes", p)
		}
	}
}

// e2eMay are the packages of the main module the e2e module may import,
// and why. It runs graft's binary as a cluster does, so never the server
// (webhook, internal/admin), the cluster client (internal/live), the
// offline commands or cmd/graft: what it imports builds inputs and
// expectations.
var e2eMay = map[string]string{
	"inject":                         "the engine's answers, to compare a cluster's with",
	"templates":                      "the built-in templates, to render what a Pod must carry",
	"config":                         "graft's configuration file, to write the suite's",
	"export":                         "the exported policies, applied to the cluster",
	"internal/registration":          "the webhook registration deploy/ ships, applied to the cluster",
	"internal/vapeval":               "the admission policies evaluated as the API server does, to compare",
	"internal/names":                 "the labels and annotations it sets and reads",
	"internal/proc":                  "the child processes of the control plane",
	"internal/ociimage":              "the images of the real-node tests",
	"internal/redirect/redirecttest": "the traffic redirection's checks on a real node",
	"webhook/certgen":                "the serving certificates of the suite's graft",
	"bench/corpus":                   "the request corpus's Pods",
	"internal/docblocks":             "the docs' blocks and markers, to run the cluster ones as TestDocs runs the others",
}

// The e2e module imports from the main module only what e2eMay lists.
func TestE2EImportsOnlyWhatItMay(t *testing.T) {
	g, err := refdocs.ListImports(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range g[refdocs.E2E] {
		if _, ok := e2eMay[p]; !ok {
			t.Errorf("the e2e module imports %s: it runs graft as a cluster does; list it in e2eMay with why, or use the binary", p)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(e2eMay)) {
		if !slices.Contains(g[refdocs.E2E], p) {
			t.Errorf("e2eMay lists %s, which the e2e module does not import: take it off", p)
		}
	}
}

// api are the packages meant to be imported from outside graft's module
// (docs/development/layout.md): the engine, and the template sets its New
// takes.
var api = map[string]string{
	"inject":    "the engine: AdmissionReview bytes in, response bytes out",
	"templates": "the template sets inject.New takes",
}

// notAPI are the other packages a Go import can reach (outside
// internal/ and not commands): graft's own parts, with no promise to
// anyone importing them. A new package goes under internal/ unless it is
// meant to be imported.
var notAPI = map[string]string{
	"audit":              "graft audit's classification",
	"config":             "graft's configuration file",
	"export":             "graft export's compiler",
	"rollout":            "graft rollout's and graft watchdog's decisions",
	"webhook":            "graft serve's server",
	"webhook/certgen":    "graft certs' certificates",
	"templates/linttest": "the lint cases of templates' tests and webhook's",
	"deploy":             "the tests of deploy/",
	"bench/corpus":       "the load tests' requests",
	"bench/harness":      "the load tests' runner",
	"bench/hostile":      "the hostile-client bench",
	"bench/load":         "the load generator",
	"bench/report":       "the load tests' reports",
}

// Which packages may be imported from outside the module is decided, not
// drifted into: every package a Go import can reach is in api or notAPI,
// and what api's packages export names only api's packages of graft's,
// so that using one never takes importing a part with no promise.
func TestImportablePackages(t *testing.T) {
	g := loadGraph(t)
	importable := map[string]bool{}
	for pkg := range g {
		rel, ok := strings.CutPrefix(pkg, module+"/")
		if !ok || strings.HasPrefix(rel, "internal/") || strings.Contains(rel, "/internal/") || strings.HasPrefix(rel, "cmd/") ||
			strings.Contains(rel, "/cmd/") || slices.Contains([]string{"bench/peers/conventional", "bench/peers/floor"}, rel) {
			continue
		}
		importable[rel] = true
	}
	for _, p := range slices.Sorted(maps.Keys(importable)) {
		_, a := api[p]
		_, n := notAPI[p]
		if !a && !n {
			t.Errorf("%s can be imported from outside the module and is in neither api nor notAPI: move it under internal/, or list it", p)
		}
	}
	for _, list := range []map[string]string{api, notAPI} {
		for p := range list {
			if !importable[p] {
				t.Errorf("%s is listed, and is no importable package of the module", p)
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(api)) {
		for _, used := range exportedImports(t, p) {
			if _, ok := api[used]; !ok {
				t.Errorf("%s exports a name of %s, which is not API: a user of %s would have to import it", p, used, p)
			}
		}
	}
}

// exportedImports are the packages of graft's that the exported
// declarations of pkg (its path in the repository) name: types of
// exported functions, methods of exported types, exported fields,
// variables and constants.
func exportedImports(t *testing.T, pkg string) []string {
	t.Helper()
	dir := filepath.Join(repoRoot, filepath.FromSlash(pkg))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		imports := map[string]string{} // local name -> path in the repository
		for _, imp := range f.Imports {
			p, name := imported(imp)
			if rel, ok := strings.CutPrefix(p, module+"/"); ok {
				imports[name] = rel
			}
		}
		names := func(n ast.Node) {
			if n == nil {
				return
			}
			ast.Inspect(n, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && imports[x.Name] != "" {
						used[imports[x.Name]] = true
					}
				}
				return true
			})
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && (d.Recv == nil || exportedRecv(d.Recv)) {
					names(d.Type)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							exportedParts(s.Type, names)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names(s.Type)
								break
							}
						}
					}
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(used))
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(recv *ast.FieldList) bool {
	t := recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}

// exportedParts hands names the parts of a type a user sees: a struct's
// exported fields, an interface's methods, anything else whole.
func exportedParts(typ ast.Expr, names func(ast.Node)) {
	st, ok := typ.(*ast.StructType)
	if !ok {
		names(typ)
		return
	}
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 { // embedded: its exported names are promoted
			names(f.Type)
			continue
		}
		for _, n := range f.Names {
			if n.IsExported() {
				names(f.Type)
				break
			}
		}
	}
}
