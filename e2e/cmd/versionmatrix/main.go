// Command versionmatrix writes docs/reference/kubernetes-versions.md from
// the go test -json streams of `make e2e-matrix`, one per Kubernetes
// version: which API-level test passed, failed or skipped (and why) on
// which version, and the oldest version on which none failed.
//
//	versionmatrix -command 'make e2e-matrix' -out FILE v1.30.14=A.json v1.37.2=B.json
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	command := flag.String("command", "make e2e-matrix", "the command the results came from, named in the page")
	out := flag.String("out", "", "the Markdown file to write (stdout if empty)")
	note := flag.String("note", "", "a paragraph to add after the introduction (how the run went, say)")
	flag.Parse()
	if err := run(*command, *note, *out, flag.Args(), time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "versionmatrix:", err)
		os.Exit(1)
	}
}

func run(command, note, out string, args []string, now time.Time) error {
	if len(args) == 0 {
		return fmt.Errorf("no results: give VERSION=FILE.json for each version")
	}
	var runs []versionRun
	for _, arg := range args {
		r, err := readRun(arg)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	page := render(command, note, now, runs)
	if out == "" {
		_, err := os.Stdout.WriteString(page)
		return err
	}
	return os.WriteFile(out, []byte(page), 0o644)
}
