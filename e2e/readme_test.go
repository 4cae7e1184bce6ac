package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryScenarioIsInTheReadme: the README's table of scenarios names
// every test of this suite, so a new test cannot go undocumented.
func TestEveryScenarioIsInTheReadme(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
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
				t.Errorf("%s (%s) has no row in the README's table of scenarios", name, f)
			}
		}
	}
}
