package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets scripts run graft in-process as the "graft" command, and
// tests run it as "graft-fsize0": graft in a process that cannot write a
// byte to a file, as on a full disk.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"graft": func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
		"graft-fsize0": func() {
			// Go ignores SIGXFSZ, so such writes fail with EFBIG.
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 0, Max: 0}); err != nil {
				fmt.Fprintln(os.Stderr, "setrlimit:", err)
				os.Exit(3)
			}
			os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
	})
}

// TestScripts runs the CLI scripts under testdata/script.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		UpdateScripts:       os.Getenv("GRAFT_UPDATE_SCRIPTS") == "1",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"additions-only": additionsOnly,
			"crlf":           rewriteFile(func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }),
			"lf":             rewriteFile(func(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }),
			"chomp":          rewriteFile(func(s string) string { return strings.TrimSuffix(s, "\n") }),
		},
	})
}

// additionsOnly checks that a diff from the first file to the second
// shows only added lines: every line of the first, line break included,
// is in the second, in order. (A last line without a line break may gain
// one.)
func additionsOnly(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: additions-only before after")
	}
	before := strings.SplitAfter(ts.ReadFile(args[0]), "\n")
	after := strings.SplitAfter(ts.ReadFile(args[1]), "\n")
	j := 0
	missing := ""
	for i, l := range before {
		if l == "" {
			continue
		}
		last := i == len(before)-1 && !strings.HasSuffix(l, "\n")
		for j < len(after) && after[j] != l && !(last && strings.TrimRight(after[j], "\r\n") == l) {
			j++
		}
		if j == len(after) {
			missing = fmt.Sprintf("line %d of %s, %q, is not in %s (in order)", i+1, args[0], l, args[1])
			break
		}
		j++
	}
	switch {
	case missing != "" && !neg:
		ts.Fatalf("%s", missing)
	case missing == "" && neg:
		ts.Fatalf("%s has every line of %s, in order", args[1], args[0])
	}
}

// rewriteFile returns a script command that rewrites its file with edit.
func rewriteFile(edit func(string) string) func(*testscript.TestScript, bool, []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: FILE")
		}
		ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(edit(ts.ReadFile(args[0]))), 0o644))
	}
}
