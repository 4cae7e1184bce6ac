package inject

import (
	"encoding/json"
	"runtime"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/templates"
)

// newTestEngine builds an engine on the built-in templates plus the test
// fixtures in testdata/templates (shapes the built-in set lacks).
func newTestEngine(tb testing.TB, cfg Config, opts ...EngineOption) *Engine {
	tb.Helper()
	e, err := New(cfg, testTemplates(tb), opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// testTemplates is the built-in templates and the test fixtures.
func testTemplates(tb testing.TB) *templates.Set {
	tb.Helper()
	set, err := templates.Builtin()
	if err != nil {
		tb.Fatal(err)
	}
	fixtures, err := templates.LoadDir("testdata/templates")
	if err != nil {
		tb.Fatal(err)
	}
	return set.With(fixtures)
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

// reinvokedReview is injectedReview as the API server sends graft's
// second call: the Pod decoded into its typed object, defaulted, and
// encoded again (struct field order), graft's containers included.
func reinvokedReview(tb testing.TB, e *Engine, review []byte) []byte {
	tb.Helper()
	pod := decodeGeneric(tb, reviewObject(tb, injectedReview(tb, e, review)))
	apiServerDefaults(pod)
	var typed corev1.Pod
	if err := json.Unmarshal(mustJSON(tb, pod), &typed); err != nil {
		tb.Fatal(err)
	}
	return corpus.Marshal("admission.k8s.io/v1", "reinvoked", "CREATE", typed.Namespace, &typed)
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
		{"token", corpus.Token},
		{"reinvoked", corpus.Token},
	}
	for _, c := range cases {
		body := corpus.Review(c.corpus)
		switch c.name {
		case "injected":
			body = injectedReview(b, e, body)
		case "reinvoked":
			body = reinvokedReview(b, e, body)
		}
		b.Run(c.name, func(b *testing.B) {
			// One admission before the loop (b.Loop's first call resets
			// the counters), so B/op is the steady state: otherwise the
			// first iteration grows the scratch from the previous case's
			// size (233 KB for huge's 5,000 env names), which showed as
			// 1-2 B/op on large and about 100 on huge.
			dst, _, err := e.Admit(make([]byte, 0, 64<<10), body, Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			cpu := processCPU() // steadier than ns/op on a shared machine
			for b.Loop() {
				if dst, _, err = e.Admit(dst[:0], body, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// TestZeroAllocs pins the allocation budget README claims for every
// BenchmarkAdmit case: none after warm-up, including the first admission
// after garbage collections (the scratch free list outlives them; a
// sync.Pool did not, see scratchPool). It holds under -race too, now that
// no sync.Pool is on the path for the race detector to drain.
func TestZeroAllocs(t *testing.T) {
	e := newTestEngine(t, DefaultConfig())
	cases := []struct {
		name string
		body []byte
	}{
		{"skip", corpus.Review(corpus.Skip)},
		{"injected", injectedReview(t, e, corpus.Review(corpus.Small))},
		{"small", corpus.Review(corpus.Small)},
		{"prepend", corpus.Review(corpus.Prepend)},
		{"large", corpus.Review(corpus.Large)},
		{"huge", corpus.Review(corpus.Huge)},
		{"token", corpus.Review(corpus.Token)},
		{"reinvoked", reinvokedReview(t, e, corpus.Review(corpus.Token))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var dst []byte
			admit := func() {
				var err error
				if dst, _, err = e.Admit(dst[:0], c.body, Options{}); err != nil {
					t.Fatal(err)
				}
			}
			admit() // warm the caches, the scratch and dst
			if got := testing.AllocsPerRun(100, admit); got != 0 {
				t.Errorf("%v allocations per admission, want 0", got)
			}
			afterGC := func() {
				runtime.GC()
				runtime.GC()
				admit()
			}
			if got := testing.AllocsPerRun(5, afterGC); got != 0 {
				t.Errorf("%v allocations per admission after two collections, want 0", got)
			}
		})
	}
}
