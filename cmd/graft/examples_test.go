package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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
