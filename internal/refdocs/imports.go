package refdocs

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Layout is the map of the repository, hand-written but for its import
// table, which layoutImports writes between its markers.
const Layout = "docs/development/layout.md"

// Module is graft's module path; E2EModule the e2e suite's, in e2e/.
const (
	Module    = "github.com/graftdev/graft"
	E2EModule = Module + "/e2e"
)

const (
	importsBegin = "<!-- imports: written by `make docs` (internal/refdocs) from `go list`; edit the code, not this table -->\n"
	importsEnd   = "<!-- end of imports -->\n"
)

// Imports is which of graft's packages each package imports, by path in
// the repository ("webhook", "internal/names"): each package of the main
// module, and the e2e module as the one node "e2e/...".
type Imports map[string][]string

// E2E is the node of the e2e module in Imports.
const E2E = "e2e/..."

// ListImports asks `go list` (run in root, the repository) for every
// package of both modules and the imports of graft's they make: a main
// module package's, not its tests'; the e2e module's, tests included,
// only of the main module.
func ListImports(root string) (Imports, error) {
	main, err := goList(root, "{{.ImportPath}}\t{{join .Imports \" \"}}")
	if err != nil {
		return nil, err
	}
	g := Imports{}
	for pkg, imports := range main {
		g[strings.TrimPrefix(pkg, Module+"/")] = own(imports, Module)
	}
	e2e, err := goList(filepath.Join(root, "e2e"), "{{.ImportPath}}\t{{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, imports := range e2e {
		for _, p := range own(imports, Module) {
			if !strings.HasPrefix(p, "e2e/") && p != "e2e" {
				seen[p] = true
			}
		}
	}
	g[E2E] = slices.Sorted(maps.Keys(seen))
	return g, nil
}

// goList runs `go list ./...` in dir with format (a package's path, a
// tab, its imports) and returns the imports by package.
func goList(dir, format string) (map[string][]string, error) {
	cmd := exec.Command("go", "list", "-e", "-f", format, "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list ./... in %s: %w\n%s", dir, err, stderr.Bytes())
	}
	pkgs := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		pkg, imports, _ := strings.Cut(sc.Text(), "\t")
		pkgs[pkg] = strings.Fields(imports)
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("go list ./... in %s listed no package", dir)
	}
	return pkgs, nil
}

// own is the imports of graft's module among imports, by path in the
// repository, sorted and once each.
func own(imports []string, module string) []string {
	var out []string
	for _, p := range imports {
		if rest, ok := strings.CutPrefix(p, module+"/"); ok && !slices.Contains(out, rest) {
			out = append(out, rest)
		}
	}
	slices.Sort(out)
	return out
}

// Layers gives each package its layer: 0 for one that imports none of
// graft's packages, else one more than the highest of those it imports.
// (Imports have no cycles: Go refuses them.)
func (g Imports) Layers() map[string]int {
	layer := map[string]int{}
	var of func(string) int
	of = func(p string) int {
		if l, ok := layer[p]; ok {
			return l
		}
		l := 0
		for _, q := range g[p] {
			l = max(l, of(q)+1)
		}
		layer[p] = l
		return l
	}
	for p := range g {
		of(p)
	}
	return layer
}

// importsTable is the import map: a row per package, top layer first.
func importsTable(g Imports) []byte {
	layers := g.Layers()
	pkgs := slices.SortedFunc(maps.Keys(g), func(a, b string) int {
		return cmp.Or(cmp.Compare(layers[b], layers[a]), cmp.Compare(a, b))
	})
	var b bytes.Buffer
	b.WriteString("| layer | package | imports of graft's (directly) |\n|--:|---|---|\n")
	for _, p := range pkgs {
		imports := "—"
		if len(g[p]) > 0 {
			imports = "`" + strings.Join(g[p], "`, `") + "`"
		}
		name := "`" + p + "`"
		if p == E2E {
			name += " (the e2e module, tests included)"
		}
		fmt.Fprintf(&b, "| %d | %s | %s |\n", layers[p], name, imports)
	}
	return b.Bytes()
}

// layoutImports is Layout with its import table written from `go list`.
func layoutImports(root string) ([]byte, error) {
	have, err := os.ReadFile(filepath.Join(root, Layout))
	if err != nil {
		return nil, err
	}
	before, rest, ok := bytes.Cut(have, []byte(importsBegin))
	_, after, ok2 := bytes.Cut(rest, []byte(importsEnd))
	if !ok || !ok2 {
		return nil, fmt.Errorf("no %q ... %q in it", strings.TrimSpace(importsBegin), strings.TrimSpace(importsEnd))
	}
	g, err := ListImports(root)
	if err != nil {
		return nil, err
	}
	return slices.Concat(before, []byte(importsBegin), importsTable(g), []byte(importsEnd), after), nil
}
