package refdocs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	refUse = regexp.MustCompile(`\[([a-z][0-9]+)\]`)
	refDef = regexp.MustCompile(`(?m)^\[([a-z][0-9]+)\]: (\S+)$`)
)

// TestComparisonCitesSources: every cell of docs/reference/comparison.md's feature
// table cites a source, every source cited is defined, each project's
// sources are its own (a documentation site, or its repository pinned to a
// commit), and graft's sources are files of this repository whose anchors
// exist.
func TestComparisonCitesSources(t *testing.T) {
	path := filepath.Join(repoRoot, "docs", "reference", "comparison.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	_, table, ok := strings.Cut(doc, "## Features, side by side")
	if !ok {
		t.Fatal("no section \"Features, side by side\"")
	}
	defs := map[string]string{}
	for _, m := range refDef.FindAllStringSubmatch(doc, -1) {
		defs[m[1]] = m[2]
	}
	var header []string
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		switch {
		case header == nil:
			header = cells
			continue
		case strings.HasPrefix(line, "|---"):
			continue
		}
		rows++
		if len(cells) != len(header) {
			t.Errorf("row %q has %d cells, the header %d", cells[0], len(cells), len(header))
			continue
		}
		for i, c := range cells[1:] {
			refs := refUse.FindAllStringSubmatch(c, -1)
			if len(refs) == 0 {
				t.Errorf("%s / %s: no source: %q", strings.TrimSpace(cells[0]), strings.TrimSpace(header[i+1]), c)
			}
			// The label's letter is the column's: g graft, i Istio, ...
			want := "gilovdks"[i]
			for _, r := range refs {
				if r[1][0] != want {
					t.Errorf("%s / %s cites %s, another column's source", strings.TrimSpace(cells[0]), strings.TrimSpace(header[i+1]), r[1])
				}
				if _, ok := defs[r[1]]; !ok {
					t.Errorf("source %s is cited but not defined", r[1])
				}
			}
		}
	}
	if rows < 15 || len(header) != 9 {
		t.Fatalf("read %d rows and %d columns, want at least 15 rows of graft and 7 others", rows, len(header)-1)
	}
	own := map[byte]string{
		'i': "(https://istio.io/|https://github.com/istio/istio/(blob|tree)/[0-9a-f]{40})",
		'l': "(https://linkerd.io/|https://github.com/linkerd/linkerd2/(blob|tree)/[0-9a-f]{40})",
		'o': "https://github.com/open-telemetry/opentelemetry-operator/(blob|tree)/[0-9a-f]{40}",
		'v': "(https://developer.hashicorp.com/vault/|https://github.com/hashicorp/vault-k8s/(blob|tree)/[0-9a-f]{40})",
		'd': "(https://docs.dapr.io/|https://github.com/dapr/dapr/(blob|tree)/[0-9a-f]{40})",
		'k': "(https://kyverno.io/|https://github.com/kyverno/kyverno/(blob|tree)/[0-9a-f]{40})",
		's': "(https://openkruise.io/|https://github.com/openkruise/kruise/(blob|tree)/[0-9a-f]{40})",
	}
	for label, target := range defs {
		if label[0] == 'g' {
			checkLocalLink(t, filepath.Dir(path), label, target)
			continue
		}
		if re, ok := own[label[0]]; !ok || !regexp.MustCompile("^"+re).MatchString(target) {
			t.Errorf("source %s is %s: not that project's documentation or its repository at a commit", label, target)
		}
	}
}

// checkLocalLink checks that a relative link names a file of the
// repository and, with #anchor, a heading of it.
func checkLocalLink(t *testing.T, dir, label, target string) {
	t.Helper()
	file, anchor, _ := strings.Cut(target, "#")
	path := filepath.Join(dir, file)
	if file == "" {
		path = filepath.Join(dir, "comparison.md")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("source %s: %v", label, err)
		return
	}
	if anchor == "" {
		return
	}
	for _, line := range strings.Split(string(data), "\n") {
		if h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") && Anchor(h) == anchor {
			return
		}
	}
	t.Errorf("source %s: %s has no heading #%s", label, file, anchor)
}
