package refdocs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// File is one generated file, its path relative to the repository.
type File struct {
	Path string
	Data []byte
}

// Generate returns every generated file of the repository at root.
func Generate(root string) ([]File, error) {
	var files []File
	for _, g := range []struct {
		path string
		gen  func(string) ([]byte, error)
	}{
		{"docs/reference/configuration.md", configReference},
		{"docs/reference/templates.md", templatesReference},
		{"docs/reference/names.md", namesReference},
		{ChartSchema, chartSchema},
		{Layout, layoutImports},
	} {
		data, err := g.gen(root)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", g.path, err)
		}
		files = append(files, File{Path: g.path, Data: data})
	}
	return files, nil
}

// Stale returns the paths of the files whose contents under root differ
// from what Generate makes.
func Stale(root string, files []File) ([]string, error) {
	var stale []string
	for _, f := range files {
		have, err := os.ReadFile(filepath.Join(root, f.Path))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("refdocs: %w", err)
		}
		if !bytes.Equal(have, f.Data) {
			stale = append(stale, f.Path)
		}
	}
	return stale, nil
}
