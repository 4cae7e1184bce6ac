package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// graftFlags is every flag of every graft command: names and shorthands.
func graftFlags() map[string]bool {
	flags := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, set := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			set.VisitAll(func(f *pflag.Flag) {
				flags[f.Name] = true
				if f.Shorthand != "" {
					flags[f.Shorthand] = true
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	return flags
}

// TestNamedFlagsExist: every flag internal/names names (its Flag*
// constants) is a flag of a graft command, so a message built from one
// names a flag the user can give.
func TestNamedFlagsExist(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../internal/names/names.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	flags := graftFlags()
	n := 0
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if !strings.HasPrefix(id.Name, "Flag") {
					continue
				}
				n++
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Errorf("names.%s is not a plain string", id.Name)
					continue
				}
				if v, _ := strconv.Unquote(lit.Value); !flags[v] {
					t.Errorf("names.%s = %q: no graft command has that flag", id.Name, v)
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("%d Flag constants in internal/names: the test read too few", n)
	}
}

// longFlag is a long flag as a message spells it.
var longFlag = regexp.MustCompile(`(?:^|[^-\w])--([a-z][a-z0-9-]*)`)

// stillSpelt are files outside cmd/ whose messages still spell a flag of
// graft's, and why they may for now.
var stillSpelt = map[string]string{
	"internal/offline/engine.go": "owned by issue 35's engine work (branch house-engine), which rewrites it",
}

// TestMessagesNameFlagsFromNames: no string outside cmd/ (tests, the e2e
// suite and the load tests aside, which run graft with its flags) spells
// a flag of graft's: messages name flags with internal/names' constants,
// so renaming a flag cannot leave a stale message.
func TestMessagesNameFlagsFromNames(t *testing.T) {
	flags := graftFlags()
	root := "../.."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "cmd" || rel == "e2e" || rel == "bench") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if _, ok := stillSpelt[rel]; ok {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, _ := strconv.Unquote(lit.Value)
			for _, m := range longFlag.FindAllStringSubmatch(s, -1) {
				if flags[m[1]] {
					t.Errorf("%s: %q spells the flag --%s: name it with internal/names (--\"+names.Flag...)", rel, s, m[1])
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
