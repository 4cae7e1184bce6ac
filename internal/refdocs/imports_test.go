package refdocs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// layoutRows are the paths the first column of layout.md's path table
// names, each row's cell one or more `path`s.
func layoutRows(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, Layout))
	if err != nil {
		t.Fatal(err)
	}
	table, _, _ := strings.Cut(string(b), "\n## ")
	var rows []string
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.Contains(cells[1], "`") {
			continue
		}
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[1], -1) {
			rows = append(rows, m[1])
		}
	}
	if len(rows) < 20 {
		t.Fatalf("%d paths in %s's table: the test read too few", len(rows), Layout)
	}
	return rows
}

// TestLayoutNamesEveryPackage: the map has a row for every package of
// graft's module (bench/ and e2e/ as a whole, which have pages of their
// own), and none for a package that is gone.
func TestLayoutNamesEveryPackage(t *testing.T) {
	g, err := ListImports(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	rows := layoutRows(t)
	for pkg := range g {
		if pkg == E2E || strings.HasPrefix(pkg, "bench/") {
			continue
		}
		if !slices.Contains(rows, pkg) {
			t.Errorf("package %s has no row in %s", pkg, Layout)
		}
	}
	for _, row := range rows {
		if strings.HasSuffix(row, "/") {
			if _, err := os.Stat(filepath.Join(repoRoot, row)); err != nil {
				t.Errorf("%s's row %s: %v", Layout, row, err)
			}
			continue
		}
		if _, ok := g[row]; !ok {
			t.Errorf("%s has a row for %s, which is no package of graft's module", Layout, row)
		}
	}
}

// TestLayers: a package's layer is above every package it imports, and
// a package importing none of graft's is at 0.
func TestLayers(t *testing.T) {
	g := Imports{"a": {"b", "c"}, "b": {"c"}, "c": nil, "d": nil, E2E: {"a"}}
	want := map[string]int{"a": 2, "b": 1, "c": 0, "d": 0, E2E: 3}
	got := g.Layers()
	for p, l := range want {
		if got[p] != l {
			t.Errorf("layer of %s = %d, want %d", p, got[p], l)
		}
	}
}
