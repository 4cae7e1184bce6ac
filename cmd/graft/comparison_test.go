package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// comparison is docs/reference/comparison.yaml: the rows of the feature
// table of comparison.md.
type comparison struct {
	Peers    []string `json:"peers"`
	Features []struct {
		Name  string `json:"name"`
		Graft string `json:"graft"`
		// Holds is what makes graft's cell true, checked here.
		Holds []struct {
			CLI      string `json:"cli"`      // a command path and flags graft has
			File     string `json:"file"`     // a repository file ...
			Contains string `json:"contains"` // ... holding this text
		} `json:"holds"`
		Peers []string `json:"peers"`
	} `json:"features"`
}

// The generated table sits between these lines of comparison.md.
const (
	tableBegin = "<!-- the feature table: generated from comparison.yaml by TestComparison (make docs) -->"
	tableEnd   = "<!-- end of the feature table -->"
)

var (
	sourceLabelRE = regexp.MustCompile(`\[([a-z]+[0-9]+)\]`)
	sourceDefRE   = regexp.MustCompile(`(?m)^\[([a-z]+[0-9]+)\]: \S+`)
)

// table is the Markdown of the feature table.
func (c comparison) table() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "| | graft | %s |\n|%s\n", strings.Join(c.Peers, " | "), strings.Repeat("---|", len(c.Peers)+2))
	for _, f := range c.Features {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", f.Name, f.Graft, strings.Join(f.Peers, " | "))
	}
	return b.Bytes()
}

// TestComparison: the feature table of comparison.md is comparison.yaml's;
// what it says graft has, graft has (the commands and flags are in the
// CLI, the texts in the repository's files); and every cell, graft's and
// each peer's, names a source defined on the page.
func TestComparison(t *testing.T) {
	data, err := os.ReadFile(repoPath("docs", "reference", "comparison.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c comparison
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Features) < 10 || len(c.Peers) < 5 {
		t.Fatalf("%d features of %d peers: the file is cut short", len(c.Features), len(c.Peers))
	}
	mdPath := repoPath("docs", "reference", "comparison.md")
	md, err := os.ReadFile(mdPath)
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, m := range sourceDefRE.FindAllSubmatch(md, -1) {
		defined[string(m[1])] = true
	}
	cellSources := func(where, cell string) {
		labels := sourceLabelRE.FindAllStringSubmatch(cell, -1)
		if len(labels) == 0 {
			t.Errorf("%s: no source: %q", where, cell)
		}
		for _, l := range labels {
			if !defined[l[1]] {
				t.Errorf("%s: source [%s] is not defined in comparison.md", where, l[1])
			}
		}
	}
	for _, f := range c.Features {
		if len(f.Peers) != len(c.Peers) {
			t.Errorf("%s: %d peer cells for %d peers", f.Name, len(f.Peers), len(c.Peers))
		}
		cellSources(f.Name+", graft", f.Graft)
		for i, cell := range f.Peers {
			if i < len(c.Peers) {
				cellSources(f.Name+", "+c.Peers[i], cell)
			}
		}
		if len(f.Holds) == 0 {
			t.Errorf("%s: graft's cell says what graft does, and nothing checks it", f.Name)
		}
		for _, h := range f.Holds {
			switch {
			case h.CLI != "":
				if err := hasCommand(h.CLI); err != nil {
					t.Errorf("%s: %v", f.Name, err)
				}
			case h.File != "" && h.Contains != "":
				got, err := os.ReadFile(repoPath(h.File))
				if err != nil || !bytes.Contains(got, []byte(h.Contains)) {
					t.Errorf("%s: %s does not hold %q (%v)", f.Name, h.File, h.Contains, err)
				}
			default:
				t.Errorf("%s: a check with neither cli nor file and contains", f.Name)
			}
		}
	}
	begin, end := bytes.Index(md, []byte(tableBegin)), bytes.Index(md, []byte(tableEnd))
	if begin < 0 || end < begin {
		t.Fatalf("comparison.md has no %q ... %q", tableBegin, tableEnd)
	}
	want := slicesConcat(md[:begin+len(tableBegin)], []byte("\n"), c.table(), md[end:])
	if *updateDocs {
		if err := os.WriteFile(mdPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
		md = want
	}
	if !bytes.Equal(md, want) {
		t.Error("docs/reference/comparison.md's feature table is not comparison.yaml's: regenerate it with make docs")
	}
}

// hasCommand checks graft has the command path and flags of line, as
// "rollout --in-place".
func hasCommand(line string) error {
	words := strings.Fields(line)
	c, rest, err := newRootCmd().Find(words)
	if err != nil {
		return fmt.Errorf("graft %s: %w", line, err)
	}
	for _, w := range rest {
		name, ok := strings.CutPrefix(w, "--")
		if !ok || c.Flags().Lookup(name) == nil {
			return fmt.Errorf("graft %s: %s has no flag %s", line, c.CommandPath(), w)
		}
	}
	return nil
}

func slicesConcat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// The check of graft's claims can fail: a command or flag graft lacks.
func TestHasCommand(t *testing.T) {
	if err := hasCommand("rollout --in-place"); err != nil {
		t.Error(err)
	}
	for _, line := range []string{"rollout --hot-upgrade", "upgrade", "rollout in-place"} {
		if hasCommand(line) == nil {
			t.Errorf("%q passed", line)
		}
	}
}
