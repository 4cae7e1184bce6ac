package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/graftdev/graft/inject"
)

// FuzzInject feeds arbitrary bytes through the whole inject pipeline with
// the real engine: it must never panic, and whatever it accepts it must
// accept again unchanged (inject twice == once), in YAML and in JSON.
// Seeds are the manifests of the CLI scripts.
func FuzzInject(f *testing.F) {
	scripts, _ := filepath.Glob("testdata/script/*.txtar")
	for _, s := range scripts {
		ar, err := txtar.ParseFile(s)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range ar.Files {
			if ext := filepath.Ext(file.Name); (ext == ".yaml" || ext == ".json") && filepath.Dir(file.Name) != "tmpl" {
				f.Add(file.Data)
			}
		}
	}
	cfg, set, err := loadEngineConfig("", "")
	if err != nil {
		f.Fatal(err)
	}
	e, err := inject.New(cfg, set)
	if err != nil {
		f.Fatal(err)
	}
	a := &admitter{engine: e}
	ignore := func(*document, string, string) {}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range []string{"yaml", "json"} {
			docs, err := parseDocuments("in", data)
			if err != nil {
				return
			}
			once, err := injectDocuments(a, docs, format, ignore)
			if err != nil {
				return
			}
			again, err := parseDocuments("once", once)
			if err != nil {
				t.Fatalf("%s output does not parse: %v\ninput:\n%s\noutput:\n%s", format, err, data, once)
			}
			twice, err := injectDocuments(a, again, format, ignore)
			if err != nil {
				t.Fatalf("%s output is refused: %v\ninput:\n%s\noutput:\n%s", format, err, data, once)
			}
			if !bytes.Equal(once, twice) {
				t.Fatalf("%s: inject twice differs from once\ninput:\n%s\nonce:\n%s\ntwice:\n%s", format, data, once, twice)
			}
		}
	})
}
