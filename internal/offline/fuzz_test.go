package offline

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/manifest"
)

// FuzzInject feeds arbitrary bytes through the whole inject pipeline with
// the real engine: it must never panic, whatever it accepts it must
// accept again unchanged (inject twice == once), in YAML and in JSON, and
// the two outputs must mean the same objects.
// Seeds are the manifests of the CLI scripts (cmd/graft/testdata/script).
func FuzzInject(f *testing.F) {
	scripts, err := filepath.Glob("../../cmd/graft/testdata/script/*.txtar")
	if err != nil || len(scripts) == 0 {
		f.Fatalf("no CLI scripts to seed from: %v", err)
	}
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
	// Found by this fuzzer: a plain Y is a boolean to kubectl (YAML 1.1),
	// and once came out of -o json as "kind": true.
	f.Add([]byte("apiVersion: v1\nkind: Y\n"))
	f.Add([]byte("apiVersion: v1\nkind: Y\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, image: b}]}\n"))
	e := newTestEngine(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		out := map[string][]byte{}
		for _, format := range []string{"yaml", "json"} {
			once, err := injectBytes(e, data, format)
			if err != nil {
				return
			}
			twice, err := injectBytes(e, once, format)
			if err != nil {
				t.Fatalf("%s output is refused: %v\ninput:\n%s\noutput:\n%s", format, err, data, once)
			}
			if !bytes.Equal(once, twice) {
				t.Fatalf("%s: inject twice differs from once\ninput:\n%s\nonce:\n%s\ntwice:\n%s", format, data, once, twice)
			}
			out[format] = once
		}
		// The YAML, written into the input's text, means what the JSON says.
		y, j := objectsJSON(t, out["yaml"]), objectsJSON(t, out["json"])
		if len(y) != len(j) {
			t.Fatalf("%d objects in YAML, %d in JSON\ninput:\n%s\nyaml:\n%s", len(y), len(j), data, out["yaml"])
		}
		for i := range y {
			if !jsonEqual(y[i], j[i]) {
				t.Fatalf("object %d: YAML means\n%s\nJSON says\n%s\ninput:\n%s\nyaml:\n%s", i+1, y[i], j[i], data, out["yaml"])
			}
		}
	})
}

// objectsJSON returns the JSON of every object of a stream graft wrote.
func objectsJSON(t *testing.T, stream []byte) [][]byte {
	t.Helper()
	f, err := manifest.ParseFile("out", stream)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, d := range manifest.AllDocuments([]*manifest.File{f}) {
		if d.Root() == nil {
			continue
		}
		js, err := manifest.NodeJSON(d.Root())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, js)
	}
	return out
}

// jsonEqual reports whether two JSON documents hold the same value.
func jsonEqual(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// newTestEngine is the engine graft runs with by default.
func newTestEngine(tb testing.TB) *inject.Engine {
	tb.Helper()
	cfg, set, err := LoadConfig("", "")
	if err != nil {
		tb.Fatal(err)
	}
	e, err := inject.New(cfg, set)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// injectBytes is graft inject on one input file, in the default
// configuration, quietly.
func injectBytes(e *inject.Engine, data []byte, format string) ([]byte, error) {
	f, err := manifest.ParseFile("in", data)
	if err != nil {
		return nil, err
	}
	files := []*manifest.File{f}
	docs := manifest.AllDocuments(files)
	sel := &selector{defaultProfile: e.DefaultProfile(), profiles: e.Profiles(), assumed: e.DefaultProfile()}
	sel.declareNamespaces(docs)
	a := &admitter{engine: e, sel: sel, jsonOut: format == "json"}
	if err := injectDocuments(a, docs, NewReport(io.Discard, true, docs)); err != nil {
		return nil, err
	}
	return manifest.Encode(files, format)
}
