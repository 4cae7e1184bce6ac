package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// render writes the page: a table of tests by version, then per version
// what it lacks (its skips' reasons) and what failed.
func render(command, note string, now time.Time, runs []versionRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Kubernetes versions\n\n")
	fmt.Fprintf(&b, "<!-- Written by e2e/cmd/versionmatrix from `%s`; do not edit. -->\n\n", command)
	fmt.Fprintf(&b, "graft's API-level end-to-end suites (admission alone: kube-apiserver with\n"+
		"its default admission plugins and etcd, no controllers and no nodes) and a\n"+
		"sample of the acceptance corpus, run against each Kubernetes minor the\n"+
		"README claims by `%s` on %s. Each kube-apiserver is built from\n"+
		"its `k8s.io/kubernetes` module (`e2e/tools/matrix/`). `make test` runs\n"+
		"the newest (the whole suite) and the oldest (these suites).\n\n",
		command, now.UTC().Format("2006-01-02"))
	if note != "" {
		b.WriteString(note + "\n\n")
	}

	var tests []string
	for _, r := range runs {
		for name := range r.tests {
			if !slices.Contains(tests, name) {
				tests = append(tests, name)
			}
		}
	}
	slices.Sort(tests)

	b.WriteString("| test |")
	for _, r := range runs {
		fmt.Fprintf(&b, " %s |", strings.TrimPrefix(r.version, "v"))
	}
	b.WriteString("\n|---|")
	for range runs {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, name := range tests {
		fmt.Fprintf(&b, "| `%s` |", name)
		for _, r := range runs {
			o, ok := r.tests[name]
			switch {
			case !ok:
				b.WriteString(" – |")
			case o.action == "pass":
				b.WriteString(" pass |")
			case o.action == "skip":
				b.WriteString(" skip |")
			default:
				b.WriteString(" **FAIL** |")
			}
		}
		b.WriteString("\n")
	}

	b.WriteString("\n## What each version lacks\n\n")
	// floor is the oldest version from which every newer one that ran
	// (runs are oldest first) passed too.
	floor, held := "", true
	var notRun []string
	for i := len(runs) - 1; i >= 0; i-- {
		switch {
		case runs[i].missing:
			notRun = append([]string{runs[i].version}, notRun...)
		case held && runs[i].passed():
			floor = runs[i].version
		default:
			held = false
		}
	}
	for _, r := range runs {
		fmt.Fprintf(&b, "- **%s**: ", r.version)
		var notes []string
		if r.broken != "" {
			notes = append(notes, r.broken)
		}
		// Skips grouped by their reason, in the order first met.
		var reasons []string
		skipped := map[string][]string{}
		for _, name := range tests {
			o, ok := r.tests[name]
			if !ok {
				continue
			}
			switch o.action {
			case "skip":
				if _, seen := skipped[o.reason]; !seen {
					reasons = append(reasons, o.reason)
				}
				skipped[o.reason] = append(skipped[o.reason], "`"+name+"`")
			case "fail":
				notes = append(notes, fmt.Sprintf("`%s` **failed**: %s", name, o.reason))
			}
		}
		for _, reason := range reasons {
			notes = append(notes, fmt.Sprintf("%s skipped: %s", strings.Join(skipped[reason], ", "), reason))
		}
		if len(notes) == 0 {
			notes = append(notes, "nothing: every test passed")
		}
		b.WriteString(strings.Join(notes, "; "))
		b.WriteString(".\n")
	}
	if floor != "" {
		fmt.Fprintf(&b, "\nThe oldest version from which every version run passed: %s", floor)
		if len(notRun) > 0 {
			fmt.Fprintf(&b, " (not run: %s)", strings.Join(notRun, ", "))
		}
		b.WriteString(".\n")
	}
	return b.String()
}

// passed reports whether the run happened and no test failed.
func (r versionRun) passed() bool {
	if r.broken != "" || len(r.tests) == 0 {
		return false
	}
	for _, o := range r.tests {
		if o.action == "fail" {
			return false
		}
	}
	return true
}
