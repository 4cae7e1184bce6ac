package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// outcome is what happened to one top-level test on one version.
type outcome struct {
	action string // pass, fail or skip
	reason string // a skip's reason, a failure's first message
}

// versionRun is one version's results.
type versionRun struct {
	version string
	tests   map[string]outcome
	// broken says why the run produced no test results (its harness did
	// not start), if so; missing, that there is no run at all.
	broken  string
	missing bool
}

// event is a line of go test -json.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// readRun reads arg, VERSION=FILE. A file that is missing means the
// version's run never happened (its API server failed to build, say).
func readRun(arg string) (versionRun, error) {
	version, path, ok := strings.Cut(arg, "=")
	if !ok || version == "" || path == "" {
		return versionRun{}, fmt.Errorf("%q: want VERSION=FILE.json", arg)
	}
	r := versionRun{version: version, tests: map[string]outcome{}}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		r.broken = "no results (the run did not happen: see make e2e-matrix's output)"
		r.missing = true
		return r, nil
	}
	if err != nil {
		return r, err
	}
	defer f.Close()
	if err := r.read(f); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

func (r *versionRun) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	outputs := map[string][]string{}
	var pkgOutput []string
	failedPkg := false
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // a line that is not an event (a build's output)
		}
		top, _, sub := strings.Cut(e.Test, "/")
		switch {
		case e.Test == "" && e.Action == "output":
			pkgOutput = append(pkgOutput, e.Output)
		case e.Test == "" && e.Action == "fail":
			failedPkg = true
		case e.Test == "":
			// Another package's start, pass or skip.
		case e.Action == "output":
			outputs[top] = append(outputs[top], e.Output)
		case sub:
			// Subtests count through their parent.
		case e.Action == "pass" || e.Action == "fail" || e.Action == "skip":
			r.tests[top] = outcome{action: e.Action, reason: reason(e.Action, outputs[top])}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(r.tests) == 0 && failedPkg {
		r.broken = "the harness did not start: " + lastLines(pkgOutput, 3)
	}
	return nil
}

// reason picks from a test's output why it skipped, or its first failure.
func reason(action string, out []string) string {
	if action == "pass" {
		return ""
	}
	for _, line := range out {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "---") || strings.HasPrefix(line, "===") || line == "" {
			continue
		}
		// "file_test.go:12: message"
		if i := strings.Index(line, ".go:"); i > 0 {
			if j := strings.Index(line[i+4:], ": "); j >= 0 {
				return line[i+4+j+2:]
			}
		}
	}
	return ""
}

func lastLines(lines []string, n int) string {
	var keep []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "FAIL") {
			keep = append(keep, l)
		}
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	return strings.Join(keep, " / ")
}
