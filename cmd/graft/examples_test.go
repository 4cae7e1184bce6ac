package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/spf13/cobra"

	"github.com/graftdev/graft/internal/live"
)

// Every command has examples, and every example line is a command line
// that the command it documents accepts: its subcommand path, its flags
// and its arguments. (Flags renamed or removed break this test, not the
// help a user copies from.)
func TestExamplesParse(t *testing.T) {
	var walk func(c *cobra.Command)
	checked := 0
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		t.Run(c.CommandPath(), func(t *testing.T) {
			if strings.TrimSpace(c.Example) == "" {
				t.Fatal("no Example")
			}
			lines := 0
			for _, line := range strings.Split(c.Example, "\n") {
				line = strings.TrimSpace(line)
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				lines++
				if err := exampleLineError(c, line); err != nil {
					t.Error(err)
				}
			}
			if lines == 0 {
				t.Error("the Example has no command line")
			}
		})
		checked++
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	if checked < 15 {
		t.Errorf("checked %d commands: the walk missed some", checked)
	}
}

// exampleLineError parses line (up to a pipe) with a fresh command tree,
// as graft would run it, without running it.
func exampleLineError(doc *cobra.Command, line string) error {
	line, _, _ = strings.Cut(line, " | ")
	words := strings.Fields(line)
	if words[0] != "graft" || strings.ContainsAny(line, `'"$<>;&`) {
		return fmt.Errorf("%q: want a plain graft command line", line)
	}
	root := newRootCmd()
	c, rest, err := root.Find(words[1:])
	if err != nil {
		return fmt.Errorf("%q: %w", line, err)
	}
	// An example documents its own command or one of its subcommands (the
	// root's may show any).
	if !strings.HasPrefix(c.CommandPath()+" ", doc.CommandPath()+" ") {
		return fmt.Errorf("%q runs %q, not %q", line, c.CommandPath(), doc.CommandPath())
	}
	c.InitDefaultHelpFlag()
	c.InitDefaultVersionFlag()
	if err := c.ParseFlags(rest); err != nil {
		return fmt.Errorf("%q: %w", line, err)
	}
	if err := c.ValidateArgs(c.Flags().Args()); err != nil {
		return fmt.Errorf("%q: %w", line, err)
	}
	return nil
}

// The check can fail: an unknown flag, another command, a missing
// argument and shell quoting are caught.
func TestExamplesParseCatches(t *testing.T) {
	root := newRootCmd()
	inject, _, err := root.Find([]string{"inject"})
	if err != nil {
		t.Fatal(err)
	}
	lint, _, err := root.Find([]string{"templates", "lint"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		doc  *cobra.Command
		line string
	}{
		{inject, "graft inject --no-such-flag -f a.yaml"},
		{inject, "graft explain -f a.yaml"},
		{lint, "graft templates lint"},
		{inject, `graft inject -f "a b.yaml"`},
	} {
		if exampleLineError(tt.doc, tt.line) == nil {
			t.Errorf("%q passed", tt.line)
		}
	}
}

// exampleNotRun says why an example line is not run by TestExamplesRun
// ("" when it is): the line needs what a test here does not have.
func exampleNotRun(c *cobra.Command, words []string) string {
	switch c.Name() {
	case "serve":
		return "serves until stopped"
	case "audit", "rollout", "watchdog":
		return "reads a cluster"
	case "probe":
		return "needs a graft serving"
	case "proxy-init":
		// Run as root here, it would redirect this machine's own TCP
		// traffic; internal/redirect tests it in a namespace of its own.
		return "programs the network namespace it runs in"
	case "explain":
		if _, _, ok := live.ParseRef(words[len(words)-1]); ok || slices.ContainsFunc(words, func(w string) bool { return strings.Contains(w, "/") && !strings.Contains(w, ".") }) {
			return "reads a cluster"
		}
	case "version":
		if slices.Contains(words, "--server") {
			return "needs a graft serving"
		}
	}
	if slices.ContainsFunc(words, func(w string) bool { return strings.HasPrefix(w, "https://") }) {
		return "fetches from the network"
	}
	return ""
}

// The files the examples name, as a user would have them.
const examplesFixtures = `-- app.yaml --
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: registry.example/web:1.0.0
-- db.yaml --
apiVersion: v1
kind: Pod
metadata:
  name: db
spec:
  containers:
    - name: db
      image: registry.example/db:1.0.0
-- manifests/web.yaml --
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: registry.example/web:1.0.0
-- manifests/jobs/report.yaml --
apiVersion: batch/v1
kind: Job
metadata:
  name: report
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: report
          image: registry.example/report:1.0.0
`

// TestExamplesRun runs every example line of the commands' help that
// needs no cluster, server or network, each command's in order, against
// the files they name (a configuration and templates as deploy/base
// ships them); exampleNotRun says why the others are not. A line piped
// into another program runs up to the pipe.
func TestExamplesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the help's examples")
	}
	dir := t.TempDir()
	var walk func(c *cobra.Command)
	ran := 0
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		script := "# The examples of " + c.CommandPath() + ".\n"
		for _, line := range strings.Split(c.Example, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			line, _, _ = strings.Cut(line, " | ")
			words := strings.Fields(line)
			doc, _, err := newRootCmd().Find(words[1:])
			if err != nil {
				t.Errorf("%q: %v", line, err)
				continue
			}
			if why := exampleNotRun(doc, words); why != "" {
				script += "# not run, " + why + ": " + line + "\n"
				continue
			}
			script += "exec " + line + "\n"
			ran++
		}
		name := strings.ReplaceAll(c.CommandPath(), " ", "_") + ".txtar"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script+examplesFixtures), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	if ran < 20 {
		t.Fatalf("%d example lines to run: the walk missed some", ran)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			// graft-config.yaml and ./templates as deploy/base ships them;
			// my-templates another directory of templates; an injected
			// manifest to uninject.
			copies := map[string]string{
				"graft-config.yaml":   repoPath("deploy", "base", "config.yaml"),
				"templates/README.md": repoPath("templates", "README.md"),
			}
			for to, from := range copies {
				data, err := os.ReadFile(from)
				if err != nil {
					return err
				}
				if err := os.MkdirAll(filepath.Dir(filepath.Join(env.WorkDir, to)), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(env.WorkDir, to), data, 0o644); err != nil {
					return err
				}
			}
			for _, d := range []string{"templates", "my-templates"} {
				if err := os.CopyFS(filepath.Join(env.WorkDir, d), os.DirFS(repoPath("deploy", "base", "templates"))); err != nil {
					return err
				}
			}
			var stderr strings.Builder
			if code := run([]string{"inject", "-f", filepath.Join(env.WorkDir, "app.yaml"), "--output-file", filepath.Join(env.WorkDir, "injected.yaml")},
				strings.NewReader(""), io.Discard, &stderr); code != 0 {
				return fmt.Errorf("injecting app.yaml: %s", stderr.String())
			}
			return nil
		},
	})
}
