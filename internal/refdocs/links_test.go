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

var (
	// inlineLink is [text](target) or ![alt](target), the target without
	// spaces (an optional "title" after a space is not captured).
	inlineLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// refLinkDef is a reference definition: [label]: target.
	refLinkDef = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+(\S+)`)
	// linkCodeSpan is inline code, whose brackets are not links.
	linkCodeSpan = regexp.MustCompile("`+[^`]*`+")
	// external is a link with a scheme: not ours to resolve.
	external = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// userDocs are README.md and every Markdown page under docs/, from the
// repository's root.
func userDocs(t *testing.T) []string {
	t.Helper()
	docs := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && filepath.Ext(path) == ".md" {
			rel, err := filepath.Rel(repoRoot, path)
			if err != nil {
				return err
			}
			docs = append(docs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// docLink is one relative link of a document, where it was written.
type docLink struct {
	line   int
	target string
}

// relativeLinks are a document's links that point into the repository:
// inline links, images and reference definitions outside code blocks and
// code spans, without a scheme.
func relativeLinks(doc []byte) []docLink {
	var out []docLink
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		line = linkCodeSpan.ReplaceAllString(line, "")
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		if m := refLinkDef.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if !external.MatchString(target) {
				out = append(out, docLink{line: n, target: target})
			}
		}
	}
	return out
}

// TestDocLinksResolve: every relative link and #anchor in README.md and
// docs/ leads somewhere: the file or directory exists, and an anchor is
// a heading of the Markdown document it points into, as GitHub names it.
// A page moved or a heading reworded without its links fails here.
func TestDocLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if anchors[path] == nil {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			anchors[path] = headingAnchors(data)
		}
		return anchors[path]
	}
	checked := 0
	for _, doc := range userDocs(t) {
		path := filepath.Join(repoRoot, filepath.FromSlash(doc))
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range relativeLinks(data) {
			checked++
			where := doc + ":" + strconv.Itoa(l.line) + ": " + l.target
			file, anchor, _ := strings.Cut(l.target, "#")
			target := path
			if file != "" {
				target = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
			}
			st, err := os.Stat(target)
			if err != nil {
				t.Errorf("%s: no such file", where)
				continue
			}
			if anchor == "" {
				continue
			}
			if st.IsDir() || filepath.Ext(target) != ".md" {
				t.Errorf("%s: an anchor into something that is not a Markdown document", where)
				continue
			}
			if !anchorsOf(target)[anchor] {
				t.Errorf("%s: %s has no heading with that anchor", where, filepath.Base(target))
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked %d links, want at least 100: the patterns match nothing", checked)
	}
}

// TestDocsIndexLinksEveryPage: docs/index.md links every page under
// docs/, so a page nobody can find cannot be added.
func TestDocsIndexLinksEveryPage(t *testing.T) {
	index, err := os.ReadFile(filepath.Join(repoRoot, "docs", "index.md"))
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, l := range relativeLinks(index) {
		file, _, _ := strings.Cut(l.target, "#")
		linked[filepath.ToSlash(filepath.Clean(filepath.Join("docs", file)))] = true
	}
	for _, doc := range userDocs(t) {
		if doc == "README.md" || doc == "docs/index.md" {
			continue
		}
		if !linked[doc] {
			t.Errorf("%s is not linked from docs/index.md", doc)
		}
	}
}

func TestRelativeLinks(t *testing.T) {
	doc := "a [x](one.md#h) and ![img](p.png) and [web](https://example.com/a)\n" +
		"`[not](code.md)` [y](#local \"title\")\n" +
		"```\n[in](fence.md)\n```\n" +
		"[ref]: ../two.md#b\n[web]: mailto:someone\n"
	var got []string
	for _, l := range relativeLinks([]byte(doc)) {
		got = append(got, strconv.Itoa(l.line)+":"+l.target)
	}
	want := []string{"1:one.md#h", "1:p.png", "2:#local", "6:../two.md#b"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("relativeLinks = %q, want %q", got, want)
	}
}
