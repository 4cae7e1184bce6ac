package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// go test -json lines for three tests on one version: a pass, a skip with
// its reason, a failure with its message, and a subtest that counts only
// through its parent.
const run130 = `{"Action":"run","Test":"TestA"}
{"Action":"pass","Test":"TestA"}
{"Action":"run","Test":"TestExportX"}
{"Action":"output","Test":"TestExportX","Output":"    export_test.go:12: kube-apiserver v1.30.14: needs 1.36 or later for MutatingAdmissionPolicy v1\n"}
{"Action":"output","Test":"TestExportX","Output":"--- SKIP: TestExportX (0.00s)\n"}
{"Action":"skip","Test":"TestExportX"}
{"Action":"run","Test":"TestB/sub"}
{"Action":"fail","Test":"TestB/sub"}
{"Action":"output","Test":"TestB","Output":"    b_test.go:40: Pod refused: forbidden\n"}
{"Action":"fail","Test":"TestB"}
{"Action":"fail","Package":"github.com/graftdev/graft/e2e"}
`

const run137 = `{"Action":"pass","Test":"TestA"}
{"Action":"pass","Test":"TestExportX"}
{"Action":"pass","Test":"TestB"}
`

func TestRender(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	started := `{"Action":"output","Package":"p","Output":"e2e: start: kube-apiserver: exited: unknown flag --endpoint-reconciler-type\n"}
{"Action":"fail","Package":"p"}
`
	out := filepath.Join(dir, "page.md")
	err := run("make e2e-matrix", "A note.", out, []string{
		"v1.29.6=" + write("129.json", started),
		"v1.30.14=" + write("130.json", run130),
		"v1.31.14=" + filepath.Join(dir, "missing.json"),
		"v1.37.2=" + write("137.json", run137),
	}, time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		"`make e2e-matrix` on 2026-11-28",
		"\nA note.\n",
		"| test | 1.29.6 | 1.30.14 | 1.31.14 | 1.37.2 |",
		"| `TestA` | – | pass | – | pass |",
		"| `TestB` | – | **FAIL** | – | pass |",
		"| `TestExportX` | – | skip | – | pass |",
		"**v1.29.6**: the harness did not start: e2e: start: kube-apiserver: exited: unknown flag --endpoint-reconciler-type.",
		"`TestExportX` skipped: kube-apiserver v1.30.14: needs 1.36 or later for MutatingAdmissionPolicy v1",
		"**v1.30.14**: `TestB` **failed**",
		"`TestB` **failed**: Pod refused: forbidden",
		"**v1.31.14**: no results",
		"**v1.37.2**: nothing: every test passed.",
		"The oldest version from which every version run passed: v1.37.2 (not run: v1.31.14).",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
}

func TestReadRunRefusesAMalformedArgument(t *testing.T) {
	if _, err := readRun("v1.30.14"); err == nil {
		t.Fatal("an argument without =FILE accepted")
	}
}
