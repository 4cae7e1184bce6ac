// Package linttest is the table of template trees `graft templates lint`
// refuses (and a few it accepts), shared by the tests of every path that
// loads templates: lint itself, the loader, the configuration, and the
// server's start and reload. It holds test data only; no command imports it.
//
// Each case is a txtar file in testdata: its comment holds a description
// (lines starting with #) and the problem lines lint prints for the tree,
// each as a prefix, in order; its files are the tree.
package linttest

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing/fstest"

	"github.com/rogpeppe/go-internal/txtar"
)

//go:embed testdata/*.txtar
var testdata embed.FS

// Case is one template tree and what lint says about it.
type Case struct {
	Name string
	// Files maps slash-separated paths to contents.
	Files map[string]string
	// Want are the problem lines lint prints, each as a prefix, in order;
	// none for a tree lint accepts.
	Want []string
}

// Cases reads every case, sorted by name.
func Cases() ([]Case, error) {
	names, err := fs.Glob(testdata, "testdata/*.txtar")
	if err != nil {
		return nil, fmt.Errorf("lint cases: %w", err)
	}
	var out []Case
	for _, name := range names {
		data, err := testdata.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("lint cases: %w", err)
		}
		a := txtar.Parse(data)
		c := Case{Name: strings.TrimSuffix(path.Base(name), ".txtar"), Files: map[string]string{}}
		sc := bufio.NewScanner(bytes.NewReader(a.Comment))
		for sc.Scan() {
			if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
				c.Want = append(c.Want, line)
			}
		}
		for _, f := range a.Files {
			c.Files[f.Name] = string(f.Data)
		}
		out = append(out, c)
	}
	return out, nil
}

// FS is the case's tree.
func (c Case) FS() fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, body := range c.Files {
		fsys[name] = &fstest.MapFile{Data: []byte(body)}
	}
	return fsys
}

// Write writes the case's tree into dir.
func (c Case) Write(dir string) error {
	for _, name := range slices.Sorted(maps.Keys(c.Files)) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(c.Files[name]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Sets splits the case into the template sets lint checks one by one:
// each directory holding *.yaml files (hidden and testdata directories
// aside), or the root when there is none. Each set is a Case rooted at its
// directory, holding the tree below it and the problems lint reports in
// it, so loading it as a templates directory must refuse exactly when
// Want is not empty.
func (c Case) Sets() []Case {
	var dirs []string
	for name := range c.Files {
		dir := path.Dir(name)
		if path.Ext(name) == ".yaml" && !skipped(dir) && !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	slices.Sort(dirs)
	var out []Case
	for _, dir := range dirs {
		set := Case{Name: path.Join(c.Name, dir), Files: map[string]string{}}
		for name, body := range c.Files {
			if rel, ok := under(dir, name); ok {
				set.Files[rel] = body
			}
		}
		for _, w := range c.Want {
			file, _, _ := strings.Cut(w, ": ")
			if path.Dir(file) == dir || file == dir {
				rel, _ := under(dir, w)
				set.Want = append(set.Want, rel)
			}
		}
		out = append(out, set)
	}
	return out
}

// CheckLoad checks err, what loading the set as a templates directory at
// dir returned: nil when lint accepts the set; otherwise an error with the
// lint lines (a *templates.SetError, seen through its Lines method so this
// package need not import templates).
func (c Case) CheckLoad(dir string, err error) error {
	if len(c.Want) == 0 {
		if err != nil {
			return fmt.Errorf("lint accepts the set, loading refuses it: %w", err)
		}
		return nil
	}
	var lines interface{ Lines() []string }
	if !errors.As(err, &lines) {
		return fmt.Errorf("loading gave %v, want the set's lint problems", err)
	}
	return c.Match(dir, lines.Lines())
}

// Match checks got, the problem lines for the case's tree loaded or linted
// at dir: one per Want, in order, each starting with its Want with the
// file joined to dir (as `graft templates lint DIR` prints it).
func (c Case) Match(dir string, got []string) error {
	if len(got) != len(c.Want) {
		return fmt.Errorf("got %d problems, want %d:\n%s", len(got), len(c.Want), strings.Join(got, "\n"))
	}
	for i, w := range c.Want {
		file, rest, _ := strings.Cut(w, ": ")
		if want := filepath.Join(dir, file) + ": " + rest; !strings.HasPrefix(got[i], want) {
			return fmt.Errorf("problem %d:\n got %s\nwant a line starting %s", i, got[i], want)
		}
	}
	return nil
}

// under returns name relative to dir.
func under(dir, name string) (string, bool) {
	if dir == "." {
		return name, true
	}
	rel, ok := strings.CutPrefix(name, dir+"/")
	return rel, ok
}

// skipped reports a directory lint does not read: hidden or testdata.
func skipped(dir string) bool {
	for _, el := range strings.Split(dir, "/") {
		if el == "testdata" || (strings.HasPrefix(el, ".") && el != ".") {
			return true
		}
	}
	return false
}
