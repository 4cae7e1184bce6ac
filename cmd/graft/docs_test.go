package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"
)

// The docs that execute: every shell block of README.md and docs/ is run
// here, in the order a reader meets them, from a copy of the repository's
// deploy/, docs/ and templates/ with graft on the PATH, or is marked with
// why it is not, in an HTML comment on the line before it:
//
//	<!-- not run: needs a cluster with cert-manager -->
//	<!-- run: fails -->              run, and expected to exit non-zero
//	<!-- checked by TestName -->     another test checks it; it must exist
//
// A block of output marked <!-- output --> right after a run block is
// what that block prints (stdout and stderr): a line "..." stands for
// any lines, a line ending in "..." for any line it starts.
// docs/reference/cli.md is the commands' help, generated (TestCLIReference);
// their examples are checked by TestExamplesParse and run by
// TestExamplesRun.

// docsCopied are the repository's directories the blocks may read.
var docsCopied = []string{"deploy", "docs", "templates"}

// block is a fenced block of a Markdown file.
type block struct {
	line   int    // of the opening fence, 1-based
	lang   string // the fence's info string
	marker string // the HTML comment on the line before, without <!-- -->
	text   string
}

var (
	fenceRE  = regexp.MustCompile("^( *)(```+)\\s*([A-Za-z]*)\\s*$")
	markerRE = regexp.MustCompile(`^\s*<!--\s*(.*?)\s*-->\s*$`)
)

// markdownBlocks are the fenced blocks of a Markdown text.
func markdownBlocks(text string) []block {
	var out []block
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		b := block{line: i + 1, lang: m[3]}
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if mm := markerRE.FindStringSubmatch(lines[j]); mm != nil {
				b.marker = mm[1]
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
		b.text = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out
}

// shell reports a block of commands: tagged as shell, or a session
// whose first line is a prompt.
func (b block) shell() bool {
	switch b.lang {
	case "sh", "bash", "shell", "console":
		return true
	case "", "text":
		return strings.HasPrefix(b.text, "$ ")
	}
	return false
}

// notRunReason is the reason a "not run:" marker gives, and whether the
// marker is one.
func (b block) notRunReason() (string, bool) {
	return strings.CutPrefix(b.marker, "not run:")
}

var checkedByRE = regexp.MustCompile(`checked by (Test[A-Za-z0-9_]+)`)

// docFiles are the Markdown files whose blocks are held: README.md and
// every page under docs/ but the generated CLI reference.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(repoPath("docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".md" {
			return err
		}
		rel, _ := filepath.Rel(repoPath(), path)
		if rel != filepath.Join("docs", "reference", "cli.md") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func repoPath(elem ...string) string { return filepath.Join(append([]string{"..", ".."}, elem...)...) }

// testFuncs are the names of the repository's test functions.
func testFuncs(t *testing.T) map[string]bool {
	t.Helper()
	funcs := map[string]bool{}
	re := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	err := filepath.WalkDir(repoPath(), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".cache" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllStringSubmatch(string(data), -1) {
				funcs[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return funcs
}

// TestDocs runs the docs' shell blocks and checks the outputs they show.
func TestDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every shell block of the docs")
	}
	funcs := testFuncs(t)
	dir := t.TempDir()
	scripts := 0
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(repoPath(file))
		if err != nil {
			t.Fatal(err)
		}
		ar := &txtar.Archive{Comment: []byte("# The shell blocks of " + file + ", in order.\n")}
		var last string // the file name of the last run block
		for i, b := range markdownBlocks(string(data)) {
			where := fmt.Sprintf("%s:%d", file, b.line)
			if m := checkedByRE.FindStringSubmatch(b.marker); m != nil {
				if !funcs[m[1]] {
					t.Errorf("%s: %q: no test %s in the repository", where, b.marker, m[1])
				}
				continue
			}
			if reason, ok := b.notRunReason(); ok {
				if reason = strings.TrimSpace(reason); len(reason) < 12 || !strings.Contains(reason, " ") {
					t.Errorf("%s: %q: say why the block is not run", where, b.marker)
				}
				continue
			}
			switch {
			case b.shell():
				if b.marker != "" && b.marker != "run" && b.marker != "run: fails" {
					t.Errorf("%s: unknown marker %q", where, b.marker)
					continue
				}
				if strings.HasPrefix(b.text, "$ ") {
					t.Errorf("%s: a session with prompts: write the commands alone, and the output in an <!-- output --> block after it, or mark it not run", where)
					continue
				}
				last = fmt.Sprintf("block%d.sh", i)
				ar.Files = append(ar.Files, txtar.File{Name: last, Data: []byte(b.text)})
				neg := ""
				if b.marker == "run: fails" {
					neg = "! "
				}
				ar.Comment = fmt.Appendf(ar.Comment, "# %s\n%sexec bash -e -o pipefail -c 'exec 2>&1; . ./%s'\n", where, neg, last)
			case b.marker == "output":
				if last == "" {
					t.Errorf("%s: an output block with no run block before it", where)
					continue
				}
				want := fmt.Sprintf("block%d.want", i)
				ar.Files = append(ar.Files, txtar.File{Name: want, Data: []byte(b.text)})
				ar.Comment = fmt.Appendf(ar.Comment, "doc-output %s %s\n", want, where)
				last = ""
			case b.marker != "" && !strings.HasPrefix(b.marker, "demo output"):
				if strings.HasPrefix(b.marker, "run") {
					t.Errorf("%s: %q on a block that is not shell (```sh)", where, b.marker)
				}
			}
		}
		if len(ar.Files) == 0 {
			continue
		}
		name := strings.NewReplacer("/", "__", ".md", ".txtar").Replace(file)
		if err := os.WriteFile(filepath.Join(dir, name), txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		scripts++
	}
	if scripts < 3 {
		t.Fatalf("%d docs with blocks to run: the walk missed some", scripts)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			for _, d := range docsCopied {
				if err := os.CopyFS(filepath.Join(env.WorkDir, d), os.DirFS(repoPath(d))); err != nil {
					return err
				}
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"doc-output": docOutput,
		},
	})
}

// docOutput checks the last block's output against a doc's output block.
func docOutput(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: doc-output WANT WHERE")
	}
	if err := matchOutput(ts.ReadFile(args[0]), ts.ReadFile("stdout")); err != nil {
		ts.Fatalf("%s: the output the docs show is not what the block prints: %v", args[1], err)
	}
}

// matchOutput matches got against want, a doc's output: "..." alone
// stands for any lines, a line ending in "..." for any line it starts;
// trailing spaces do not count.
func matchOutput(want, got string) error {
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

func TestMatchOutput(t *testing.T) {
	for _, tt := range []struct {
		want, got string
		ok        bool
	}{
		{"a\nb\n", "a\nb\n", true},
		{"a\nb\n", "a\nc\n", false},
		{"a\n...\nd\n", "a\nb\nc\nd\n", true},
		{"a\n...\nd\n", "a\nd\n", true},
		{"a\n...\n", "a\n", true},
		{"patch: ...\n", "patch: 9 operations\n", true},
		{"patch: 3 ...\n", "patch: 9 operations\n", false},
		{"a\n", "a\nb\n", false},
		{"a  \n", "a\n", true},
	} {
		if err := matchOutput(tt.want, tt.got); (err == nil) != tt.ok {
			t.Errorf("matchOutput(%q, %q) = %v, want ok %v", tt.want, tt.got, err, tt.ok)
		}
	}
}

func TestMarkdownBlocks(t *testing.T) {
	text := "# T\n\n<!-- not run: needs a cluster -->\n```sh\nkubectl get pods\n```\n\n1. A step:\n\n   ```\n   output\n   ```\n"
	bs := markdownBlocks(text)
	if len(bs) != 2 {
		t.Fatalf("%d blocks, want 2", len(bs))
	}
	if bs[0].lang != "sh" || bs[0].marker != "not run: needs a cluster" || bs[0].text != "kubectl get pods\n" || bs[0].line != 4 {
		t.Errorf("first block %+v", bs[0])
	}
	if bs[1].lang != "" || bs[1].marker != "" || bs[1].text != "output\n" {
		t.Errorf("second block %+v", bs[1])
	}
	if !slices.ContainsFunc(bs, block.shell) {
		t.Error("no shell block found")
	}
}
