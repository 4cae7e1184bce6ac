package main

import (
	"os"
	"strings"
	"testing"
)

// TestLayoutNamesEveryCommand: docs/development/layout.md's row of
// cmd/graft names every command graft has.
func TestLayoutNamesEveryCommand(t *testing.T) {
	b, err := os.ReadFile("../../docs/development/layout.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| `cmd/graft` |") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("layout.md has no row for cmd/graft")
	}
	for _, c := range newRootCmd().Commands() {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		if !strings.Contains(row, "`"+c.Name()+"`") {
			t.Errorf("layout.md's row of cmd/graft does not name the command %s", c.Name())
		}
	}
}
