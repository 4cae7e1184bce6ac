package refdocs

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Citations of documents in Go files and Markdown: a path under docs/
// (from the repository's root, as code comments write them), a bare
// upper-case root document (README.md, CHANGELOG.md), each with an
// optional #anchor.
var (
	docsCitation = regexp.MustCompile(`(?:^|[^\w./-])(docs/[\w./-]*[\w/])(#[\w-]+)?`)
	rootCitation = regexp.MustCompile(`(?:^|[^\w./-])([A-Z][A-Z0-9_-]*\.md)(#[\w-]+)?`)
)

// TestCitedDocumentsExist: every document the code and the docs cite
// exists, and every cited anchor is a heading of it. A moved or renamed
// page, or a citation of one never written, fails here.
func TestCitedDocumentsExist(t *testing.T) {
	anchors := map[string]map[string]bool{} // by document, from the root
	checked := 0
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(name); ext != ".go" && ext != ".md" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		for i, line := range strings.Split(string(data), "\n") {
			at := func(cited string) string { return rel + ":" + strconv.Itoa(i+1) + ": " + cited }
			for _, m := range docsCitation.FindAllStringSubmatch(line, -1) {
				checked++
				checkCitation(t, at(m[1]+m[2]), filepath.Join(repoRoot, m[1]), m[2], anchors)
			}
			for _, m := range rootCitation.FindAllStringSubmatch(line, -1) {
				checked++
				// A bare name is the root's document, or one beside the file.
				target := filepath.Join(repoRoot, m[1])
				if _, err := os.Stat(target); err != nil {
					target = filepath.Join(filepath.Dir(path), m[1])
				}
				checkCitation(t, at(m[1]+m[2]), target, m[2], anchors)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Errorf("found %d citations, want at least 20: the patterns match nothing", checked)
	}
}

// checkCitation reports a cited document (file or directory) that does
// not exist, or an anchor that is none of its headings.
func checkCitation(t *testing.T, where, target, anchor string, anchors map[string]map[string]bool) {
	t.Helper()
	st, err := os.Stat(target)
	if err != nil {
		t.Errorf("%s: no such document", where)
		return
	}
	if anchor == "" {
		return
	}
	if st.IsDir() || filepath.Ext(target) != ".md" {
		t.Errorf("%s: an anchor into something that is not a Markdown document", where)
		return
	}
	if anchors[target] == nil {
		data, err := os.ReadFile(target)
		if err != nil {
			t.Fatal(err)
		}
		anchors[target] = headingAnchors(data)
	}
	if !anchors[target][strings.TrimPrefix(anchor, "#")] {
		t.Errorf("%s: no heading with that anchor", where)
	}
}

// headingAnchors are the anchors GitHub gives a document's headings
// (outside code blocks); a repeated heading's get -1, -2, ...
func headingAnchors(doc []byte) map[string]bool {
	out := map[string]bool{}
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		text, ok := strings.CutPrefix(line, "#")
		if fenced || !ok {
			continue
		}
		a := Anchor(strings.TrimLeft(text, "#"))
		for n, base := 1, a; out[a]; n++ {
			a = base + "-" + strconv.Itoa(n)
		}
		out[a] = true
	}
	return out
}
