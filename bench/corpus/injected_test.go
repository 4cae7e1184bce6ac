package corpus_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

var update = flag.Bool("update", false, "rewrite injected.json from the engine's output")

// TestInjectedIsCurrent: the checked-in injected Pod is exactly small after
// the default profile's patch, so the engine has nothing to add to it.
func TestInjectedIsCurrent(t *testing.T) {
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	eng, err := inject.New(inject.DefaultConfig(), set)
	if err != nil {
		t.Fatal(err)
	}
	small := corpus.Review(corpus.Small)
	resp, _, err := eng.Admit(nil, small, inject.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Response struct{ Patch []byte } `json:"response"`
	}
	var rv struct {
		Request struct{ Object json.RawMessage } `json:"request"`
	}
	if err := json.Unmarshal(resp, &r); err != nil || json.Unmarshal(small, &rv) != nil {
		t.Fatalf("decode: %v", err)
	}
	p, err := jsonpatch.DecodePatch(r.Response.Patch)
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.Apply(rv.Request.Object)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		var buf bytes.Buffer
		if err := json.Indent(&buf, want, "", " "); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("injected.json", append(buf.Bytes(), '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile("injected.json")
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if json.Unmarshal(got, &g) != nil || json.Unmarshal(want, &w) != nil || !jsonEqual(g, w) {
		t.Fatal("injected.json is stale: run go test ./bench/corpus -run TestInjectedIsCurrent -update")
	}
	_, res, err := eng.Admit(nil, corpus.Review(corpus.Injected), inject.Options{})
	if err != nil || res.Reason != inject.ReasonAlreadyInjected {
		t.Fatalf("admitting the injected corpus: %v %v, want already-injected", res.Reason, err)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
