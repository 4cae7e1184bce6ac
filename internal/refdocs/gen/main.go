// Command gen writes the generated reference files of graft's repository
// (see package refdocs), or with -check reports the stale ones and fails.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/graftdev/graft/internal/refdocs"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	check := flag.Bool("check", false, "write nothing; fail if a generated file is stale")
	flag.Parse()
	if err := run(*root, *check); err != nil {
		fmt.Fprintln(os.Stderr, "refdocs:", err)
		os.Exit(1)
	}
}

func run(root string, check bool) error {
	files, err := refdocs.Generate(root)
	if err != nil {
		return err
	}
	if check {
		stale, err := refdocs.Stale(root, files)
		if err != nil {
			return err
		}
		if len(stale) > 0 {
			return fmt.Errorf("stale: %s; run go generate ./internal/refdocs", strings.Join(stale, ", "))
		}
		return nil
	}
	for _, f := range files {
		path := filepath.Join(root, f.Path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
