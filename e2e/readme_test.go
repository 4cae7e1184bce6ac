package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/e2e/internal/demo"
)

// e2eDoc is the page whose table of scenarios names every test.
const e2eDoc = "docs/development/e2e.md"

// TestEveryScenarioIsInTheE2EDoc: the table of scenarios in
// docs/development/e2e.md names every test of this suite, of the real
// nodes' (realnode/) and of the docs' (docscluster/), so a new test
// cannot go undocumented.
func TestEveryScenarioIsInTheE2EDoc(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot, e2eDoc))
	if err != nil {
		t.Fatal(err)
	}
	// This suite's, the real nodes' (realnode/) and the docs' (docscluster/).
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"realnode", "docscluster"} {
		more, err := filepath.Glob(dir + "/*_test.go")
		if err != nil || len(more) == 0 {
			t.Fatalf("no tests in %s/: %v", dir, err)
		}
		files = append(files, more...)
	}
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(t \*testing\.T\)`)
	found := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllSubmatch(src, -1) {
			name := string(m[1])
			if name == "TestEveryScenarioIsInTheE2EDoc" {
				continue
			}
			found++
			if !strings.Contains(string(doc), "| `"+name+"` |") {
				t.Errorf("%s (%s) has no row in the table of scenarios of %s", name, f, e2eDoc)
			}
		}
	}
	if found < 20 {
		t.Errorf("found %d tests in this package, want at least 20: the pattern matches nothing", found)
	}
}

// tourMarker precedes the README's sample of the demo's output.
const tourMarker = "<!-- demo output: checked by TestReadmeTourIsTheDemo -->"

// TestReadmeTourIsTheDemo runs the demo as `make demo` does (its own
// cluster, three nodes, graft's default configuration) and requires the
// README's sample of its output to be that output, up to what varies run
// to run: times, ports, generated names, which node a Pod landed on.
func TestReadmeTourIsTheDemo(t *testing.T) {
	needsWorkloads(t)
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	sample, err := tourSample(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	opts, err := cluster.OptionsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	opts.Nodes = cluster.DefaultNodes // what make demo runs, and the README shows
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := demo.Run(ctx, &out, opts, repoRoot); err != nil {
		t.Fatalf("the demo failed: %v\nits output:\n%s", err, out.String())
	}
	got, want := normaliseDemo(out.String()), normaliseDemo(sample)
	if got != want {
		t.Errorf("the README's tour no longer shows what make demo prints; replace the block after %q with this run's output:\n%s\n(normalised, the run:\n%s\nthe README:\n%s)",
			tourMarker, out.String(), got, want)
	}
}

// tourSample is the fenced block that follows the marker, without the
// indentation its fence has (it sits in a list item).
func tourSample(readme string) (string, error) {
	_, after, ok := strings.Cut(readme, tourMarker)
	if !ok {
		return "", fmt.Errorf("README.md has no %q", tourMarker)
	}
	lines := strings.Split(strings.TrimLeft(after, "\n"), "\n")
	indent, ok := strings.CutSuffix(lines[0], "```")
	if !ok || strings.TrimSpace(indent) != "" {
		return "", fmt.Errorf("README.md: no fenced block right after %q", tourMarker)
	}
	var block strings.Builder
	for _, line := range lines[1:] {
		if strings.TrimSpace(line) == "```" {
			return block.String(), nil
		}
		block.WriteString(strings.TrimPrefix(line, indent))
		block.WriteByte('\n')
	}
	return "", fmt.Errorf("README.md: the block after %q does not end", tourMarker)
}

func TestTourSample(t *testing.T) {
	readme := "intro\n" + tourMarker + "\n   ```\n   line one\n     indented\n\n   ```\nafter\n"
	got, err := tourSample(readme)
	if want := "line one\n  indented\n\n"; err != nil || got != want {
		t.Errorf("tourSample = %q, %v; want %q", got, err, want)
	}
	if _, err := tourSample("no marker"); err == nil {
		t.Error("tourSample found a block in a README without the marker")
	}
}

// What varies between runs of the demo, and what stands in for it, in
// order.
var demoVarying = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:<port>"},
	{regexp.MustCompile(`kube-api-access-[a-z0-9]{5}\b`), "kube-api-access-<id>"},
	{regexp.MustCompile(`\bweb-[a-z0-9]{6,10}-([a-z0-9]{5}\b)?`), "web-<hash>-<id>"},
	{regexp.MustCompile(`kwok-node-\d+`), "kwok-node-<n>"},
	// Last: a generated name may hold what reads as a duration (-47h2s).
	{regexp.MustCompile(`\b(\d+(\.\d+)?(ns|µs|us|ms|s|m|h))+\b`), "<duration>"},
	{regexp.MustCompile(`[ \t]+\n`), "\n"},
}

func normaliseDemo(s string) string {
	for _, v := range demoVarying {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return strings.TrimSpace(s)
}

func TestNormaliseDemo(t *testing.T) {
	a := "ready in 10.1s: kube-apiserver https://127.0.0.1:33613, graft 127.0.0.1:43195\n" +
		"  web-5d5474d869-mltnh   kwok-node-1  2/2 mounts=[kube-api-access-b5s8t:/x]\n" +
		"  pod=web-5d5474d869- duration=44.085µs image web:1.0 1m2.5s\n"
	b := "ready in 15.5s: kube-apiserver https://127.0.0.1:1, graft 127.0.0.1:2\n" +
		"  web-7c9f8b6d4-26w6n   kwok-node-0  2/2 mounts=[kube-api-access-2ntp7:/x]\n" +
		"  pod=web-7c9f8b6d4- duration=1.2ms image web:1.0 3s\n"
	if c := strings.Replace(b, "26w6n", "47h2s", 1); normaliseDemo(c) != normaliseDemo(b) {
		t.Errorf("a generated name that reads as a duration normalises apart: %s", normaliseDemo(c))
	}
	if normaliseDemo(a) != normaliseDemo(b) {
		t.Errorf("runs differing only in what varies normalise apart:\n%s\n%s", normaliseDemo(a), normaliseDemo(b))
	}
	// What the reader should see stays: readiness, images, patch sizes.
	for _, change := range [][2]string{{"2/2", "1/2"}, {"web:1.0", "web:1.1"}, {"duration=", "patch_ops=2 duration="}} {
		if normaliseDemo(a) == normaliseDemo(strings.Replace(a, change[0], change[1], 1)) {
			t.Errorf("normalising hides %q becoming %q", change[0], change[1])
		}
	}
}
