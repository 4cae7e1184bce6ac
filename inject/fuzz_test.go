package inject

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/graftdev/graft/bench/corpus"
)

// FuzzAdmit feeds arbitrary bytes to the engine: it must never panic, and
// must answer either with a well-formed response to the request or with
// ErrMalformed, never both and never neither.
func FuzzAdmit(f *testing.F) {
	for _, name := range []string{corpus.Small, corpus.Skip, corpus.V1beta1, corpus.Prepend} {
		f.Add(corpus.Review(name))
	}
	files, _ := filepath.Glob("testdata/golden/*.in.json")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var c goldenCase
		if err := json.Unmarshal(data, &c); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(c.Review))
	}
	e := newTestEngine(f, goldenConfig())
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, res, err := e.Admit(nil, body, Options{})
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error is not ErrMalformed: %v", err)
			}
			if len(resp) != 0 {
				t.Fatal("response written along with an error")
			}
			return
		}
		if !json.Valid(resp) {
			t.Fatalf("invalid response JSON: %s", resp)
		}
		if res.Decision == DecisionInject {
			// A patch must apply to the object the request carried.
			if json.Valid(body) {
				applyResponse(t, body, resp)
			}
		}
	})
}

// FuzzPatchRoundTrip generates Pods from fuzzed seeds: every patch must
// apply, and the patched Pod must need no further patch.
func FuzzPatchRoundTrip(f *testing.F) {
	for _, s := range []uint64{1, 2, 3, 42, 1 << 40} {
		f.Add(s, s*7+1)
	}
	e := newTestEngine(f, goldenConfig())
	f.Fuzz(func(t *testing.T, s1, s2 uint64) {
		pod := genPod(rand.New(rand.NewPCG(s1, s2)))
		uniqueNames(pod)
		review := podReview(pod, "fuzz")
		patched := applyResponse(t, review, mustAdmit(t, e, review, Options{}))
		again := podReview(json.RawMessage(patched), "fuzz-2")
		if p := responsePatch(t, mustAdmit(t, e, again, Options{})); p != nil {
			t.Fatalf("not idempotent: %s", p)
		}
	})
}
