package inject

import (
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/templates"
)

func newTestEngine(tb testing.TB, cfg Config, opts ...EngineOption) *Engine {
	tb.Helper()
	set, err := templates.Builtin()
	if err != nil {
		tb.Fatal(err)
	}
	e, err := New(cfg, set, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// injectedReview returns the review of the Pod that results from admitting
// review once: the "already injected" case.
func injectedReview(tb testing.TB, e *Engine, review []byte) []byte {
	tb.Helper()
	patched := applyResponse(tb, review, mustAdmit(tb, e, review, Options{}))
	var rv map[string]any
	if err := json.Unmarshal(review, &rv); err != nil {
		tb.Fatal(err)
	}
	req := rv["request"].(map[string]any)
	var obj any
	if err := json.Unmarshal(patched, &obj); err != nil {
		tb.Fatal(err)
	}
	return corpus.Marshal(rv["apiVersion"].(string), req["uid"].(string), req["operation"].(string), req["namespace"].(string), obj)
}

func mustAdmit(tb testing.TB, e *Engine, review []byte, o Options) []byte {
	tb.Helper()
	out, _, err := e.Admit(nil, review, o)
	if err != nil {
		tb.Fatalf("admit: %v", err)
	}
	return out
}

// applyResponse applies the response's patch to the review's object and
// returns the patched object (the object unchanged when there is no patch).
func applyResponse(tb testing.TB, review, resp []byte) []byte {
	tb.Helper()
	obj := reviewObject(tb, review)
	patch := responsePatch(tb, resp)
	if patch == nil {
		return obj
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		tb.Fatalf("decode patch: %v\n%s", err, patch)
	}
	out, err := p.Apply(obj)
	if err != nil {
		tb.Fatalf("apply patch: %v\n%s", err, patch)
	}
	return out
}

func reviewObject(tb testing.TB, review []byte) []byte {
	tb.Helper()
	var rv struct {
		Request struct {
			Object json.RawMessage `json:"object"`
		} `json:"request"`
	}
	if err := json.Unmarshal(review, &rv); err != nil {
		tb.Fatal(err)
	}
	return rv.Request.Object
}

// responsePatch returns the decoded patch of a response, or nil.
func responsePatch(tb testing.TB, resp []byte) []byte {
	tb.Helper()
	var r struct {
		Response struct {
			PatchType *string `json:"patchType"`
			Patch     []byte  `json:"patch"`
		} `json:"response"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		tb.Fatalf("response is not JSON: %v\n%s", err, resp)
	}
	if (r.Response.PatchType == nil) != (r.Response.Patch == nil) {
		tb.Fatalf("patch and patchType must come together: %s", resp)
	}
	return r.Response.Patch
}

func BenchmarkAdmit(b *testing.B) {
	e := newTestEngine(b, DefaultConfig())
	cases := []struct{ name, corpus string }{
		{"skip", corpus.Skip},
		{"injected", corpus.Small},
		{"small", corpus.Small},
		{"large", corpus.Large},
		{"prepend", corpus.Prepend},
		{"huge", corpus.Huge},
	}
	for _, c := range cases {
		body := corpus.Review(c.corpus)
		if c.name == "injected" {
			body = injectedReview(b, e, body)
		}
		b.Run(c.name, func(b *testing.B) {
			dst := make([]byte, 0, 64<<10)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if dst, _, err = e.Admit(dst[:0], body, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestZeroAllocs pins the allocation budget of the paths most Pods take.
func TestZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	e := newTestEngine(t, DefaultConfig())
	small := corpus.Review(corpus.Small)
	cases := map[string][]byte{
		"skip":     corpus.Review(corpus.Skip),
		"injected": injectedReview(t, e, small),
	}
	for name, body := range cases {
		dst := make([]byte, 0, 64<<10)
		e.Admit(dst, body, Options{}) // warm the pools
		got := testing.AllocsPerRun(200, func() {
			if _, _, err := e.Admit(dst[:0], body, Options{}); err != nil {
				t.Fatal(err)
			}
		})
		if got != 0 {
			t.Errorf("%s: %v allocations per admission, want 0", name, got)
		}
	}
}
