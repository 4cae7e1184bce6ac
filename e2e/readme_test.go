package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryScenarioIsInTheReadme: a table of scenarios, the README's or
// that of the docs page on what the test proves, names every test of
// this suite, so a new test cannot go undocumented.
func TestEveryScenarioIsInTheReadme(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir("../docs", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		page, err := os.ReadFile(path)
		readme = append(append(readme, '\n'), page...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(t \*testing\.T\)`)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllSubmatch(src, -1) {
			name := string(m[1])
			if name == "TestEveryScenarioIsInTheReadme" {
				continue
			}
			if !strings.Contains(string(readme), "| `"+name+"` |") {
				t.Errorf("%s (%s) has no row in a table of scenarios (README.md or docs/)", name, f)
			}
		}
	}
}
