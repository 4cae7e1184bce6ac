package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/graftdev/graft/internal/refdocs"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/reference/cli.md from the commands' help")

// docs/reference/cli.md is the commands' help: stale, it fails here.
func TestCLIReference(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "reference", "cli.md")
	want := refdocs.CLIReference(newRootCmd())
	if *updateDocs {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Fatal("docs/reference/cli.md is stale: regenerate it with `go test ./cmd/graft -run TestCLIReference -update-docs` (or make docs)")
	}
}
