package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/graftdev/graft/internal/docblocks"
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
// any lines, a line ending in "..." for any line it starts. After a block
// another test checks, the output is that test's to check: the e2e
// module's TestDocsOnCluster runs the blocks that need a cluster.
// Package internal/docblocks is the parser both use.
// docs/reference/cli.md is the commands' help, generated (TestCLIReference);
// their examples are checked by TestExamplesParse and run by
// TestExamplesRun.

// docsCopied are the repository's directories the blocks may read.
var docsCopied = []string{"deploy", "docs", "templates"}

// docFiles are the Markdown files whose blocks are held.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := docblocks.Files(repoPath())
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
		// afterChecked: the block before was another test's, and so is
		// the output shown after it.
		afterChecked := false
		for i, b := range docblocks.Parse(string(data)) {
			where := b.Where(file)
			if b.Output() && afterChecked {
				afterChecked = false
				continue
			}
			afterChecked = false
			if test, ok := b.CheckedBy(); ok {
				if !funcs[test] {
					t.Errorf("%s: %q: no test %s in the repository", where, b.Marker, test)
				}
				afterChecked, last = true, ""
				continue
			}
			if reason, ok := b.NotRun(); ok {
				if len(reason) < 12 || !strings.Contains(reason, " ") {
					t.Errorf("%s: %q: say why the block is not run", where, b.Marker)
				}
				last = ""
				continue
			}
			switch {
			case b.Shell():
				if b.Marker != "" && b.Marker != "run" && b.Marker != "run: fails" {
					t.Errorf("%s: unknown marker %q", where, b.Marker)
					continue
				}
				if strings.HasPrefix(b.Text, "$ ") {
					t.Errorf("%s: a session with prompts: write the commands alone, and the output in an <!-- output --> block after it, or mark it not run", where)
					continue
				}
				last = fmt.Sprintf("block%d.sh", i)
				ar.Files = append(ar.Files, txtar.File{Name: last, Data: []byte(b.Text)})
				neg := ""
				if b.Marker == "run: fails" {
					neg = "! "
				}
				ar.Comment = fmt.Appendf(ar.Comment, "# %s\n%sexec bash -e -o pipefail -c 'exec 2>&1; . ./%s'\n", where, neg, last)
			case b.Output():
				if last == "" {
					t.Errorf("%s: an output block with no run block before it", where)
					continue
				}
				want := fmt.Sprintf("block%d.want", i)
				ar.Files = append(ar.Files, txtar.File{Name: want, Data: []byte(b.Text)})
				ar.Comment = fmt.Appendf(ar.Comment, "doc-output %s %s\n", want, where)
				last = ""
			case b.Marker != "" && !strings.HasPrefix(b.Marker, "demo output"):
				if strings.HasPrefix(b.Marker, "run") {
					t.Errorf("%s: %q on a block that is not shell (```sh)", where, b.Marker)
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
	if err := docblocks.MatchOutput(ts.ReadFile(args[0]), ts.ReadFile("stdout")); err != nil {
		ts.Fatalf("%s: the output the docs show is not what the block prints: %v", args[1], err)
	}
}
