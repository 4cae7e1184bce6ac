// Package docblocks reads the fenced blocks of the docs and the markers
// that say how each is held: the one parser of the tests that run the
// docs, offline (cmd/graft's TestDocs) and on a cluster (the e2e
// module's TestDocsOnCluster).
//
// A block's marker is an HTML comment on the line before it:
//
//	<!-- not run: needs cert-manager -->   not run, and why
//	<!-- run: fails -->                    run, and expected to exit non-zero
//	<!-- checked by TestName -->           another test runs or checks it
//	<!-- output -->                        what the run block before it prints
//
// A block of commands without a marker (or marked "run") is run.
package docblocks

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
)

// Block is a fenced block of a Markdown file.
type Block struct {
	Line    int    // of the opening fence, 1-based
	Lang    string // the fence's info string
	Marker  string // the HTML comment on the line before, without <!-- -->
	Section string // the text of the last heading before the block, "" if none
	Text    string
}

var (
	fenceRE   = regexp.MustCompile("^( *)(```+)\\s*([A-Za-z]*)\\s*$")
	markerRE  = regexp.MustCompile(`^\s*<!--\s*(.*?)\s*-->\s*$`)
	headingRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// Parse returns the fenced blocks of a Markdown text, in order.
func Parse(text string) []Block {
	var (
		out     []Block
		section string
	)
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			if h := headingRE.FindStringSubmatch(lines[i]); h != nil {
				section = h[1]
			}
			continue
		}
		b := Block{Line: i + 1, Lang: m[3], Section: section}
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if mm := markerRE.FindStringSubmatch(lines[j]); mm != nil {
				b.Marker = mm[1]
			}
			break
		}
		indent := m[1]
		var body []string
		for i++; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == m[2] {
				break
			}
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		b.Text = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out
}

// Shell reports a block of commands: tagged as shell, or a session
// whose first line is a prompt.
func (b Block) Shell() bool {
	switch b.Lang {
	case "sh", "bash", "shell", "console":
		return true
	case "", "text":
		return strings.HasPrefix(b.Text, "$ ")
	}
	return false
}

// NotRun is the reason a "not run:" marker gives, trimmed, and whether
// the marker is one.
func (b Block) NotRun() (string, bool) {
	reason, ok := strings.CutPrefix(b.Marker, "not run:")
	return strings.TrimSpace(reason), ok
}

var checkedByRE = regexp.MustCompile(`checked by (Test[A-Za-z0-9_]+)`)

// CheckedBy is the test a marker saying "checked by TestName" names
// ("demo output: checked by TestName" too), and whether the marker says
// so.
func (b Block) CheckedBy() (string, bool) {
	m := checkedByRE.FindStringSubmatch(b.Marker)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// Output reports a block marked as the output of the run block before
// it.
func (b Block) Output() bool { return b.Marker == "output" }

// Where is file:line of a block of file, for messages.
func (b Block) Where(file string) string { return fmt.Sprintf("%s:%d", file, b.Line) }

// Files are the Markdown files whose blocks the tests hold, relative to
// the repository at root: README.md and every page under docs/ but the
// generated CLI reference (whose examples TestExamplesRun runs).
func Files(root string) ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".md" {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if rel != filepath.Join("docs", "reference", "cli.md") {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}

// MatchOutput matches got against want, a doc's output: "..." alone
// stands for any lines, a line ending in "..." for any line it starts;
// trailing spaces do not count.
func MatchOutput(want, got string) error {
	wl := strings.Split(strings.TrimRight(want, "\n"), "\n")
	gl := strings.Split(strings.TrimRight(got, "\n"), "\n")
	var match func(i, j int) bool
	match = func(i, j int) bool {
		if i == len(wl) {
			return j == len(gl)
		}
		w := strings.TrimRight(wl[i], " ")
		if strings.TrimSpace(w) == "..." {
			for k := j; k <= len(gl); k++ {
				if match(i+1, k) {
					return true
				}
			}
			return false
		}
		if j == len(gl) {
			return false
		}
		g := strings.TrimRight(gl[j], " ")
		if p, ok := strings.CutSuffix(w, "..."); ok && strings.HasPrefix(g, p) || g == w {
			return match(i+1, j+1)
		}
		return false
	}
	if match(0, 0) {
		return nil
	}
	// The first line that differs, for the message.
	for i := range min(len(wl), len(gl)) {
		w, g := strings.TrimRight(wl[i], " "), strings.TrimRight(gl[i], " ")
		if w == "..." || strings.HasSuffix(w, "...") && strings.HasPrefix(g, strings.TrimSuffix(w, "...")) {
			continue
		}
		if w != g {
			return fmt.Errorf("line %d:\n docs: %s\n got:  %s\n(all it printed:\n%s)", i+1, w, g, got)
		}
	}
	return fmt.Errorf("%d lines shown, %d printed:\n%s", len(wl), len(gl), got)
}
