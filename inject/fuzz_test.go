package inject

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

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
	// The new paths: many containers (the patch limit, lowered here so
	// small inputs reach it), escapes, repeated keys, trailing bytes.
	f.Add(manyContainersReview(3))
	small := corpus.Review(corpus.Small)
	if esc, err := reencode(rand.New(rand.NewPCG(3, 4)), small); err == nil {
		f.Add(esc)
	}
	f.Add(append(slices.Clone(small), " {}"...))
	f.Add(bytes.Replace(small, []byte(`"labels":{`), []byte(`"labels":{"graft.dev/inject":"false","graft.dev\/inject":"true",`), 1))
	f.Add(podReviewWith(map[string]string{"graft.dev/agent.logLevel": strings.Repeat("\n\u0000", 300)}))
	cfg := goldenConfig()
	cfg.MaxPatchBytes = 16 << 10
	e := newTestEngine(f, cfg)
	// graft's own sidecar in the Pod: what the comparison with graft's
	// render reads (own.go, compare.go).
	f.Add(injectedReview(f, e, small))
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
		checkBounded(t, resp, cfg.MaxPatchBytes)
		if res.Decision == DecisionInject {
			// A patch must apply to the object the request carried.
			if json.Valid(body) {
				applyResponse(t, body, resp)
			}
		}
	})
}

// checkBounded asserts what bounds every answer, whatever the request:
// the patch within maxPatch, each warning under 120 characters and
// free of control characters, at most maxWarnings of them, a message of
// at most maxMessage characters.
func checkBounded(t *testing.T, resp []byte, maxPatch int) {
	t.Helper()
	var r struct {
		Response struct {
			Patch    []byte   `json:"patch"`
			Warnings []string `json:"warnings"`
			Status   struct {
				Message string `json:"message"`
			} `json:"status"`
		} `json:"response"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		t.Fatalf("response: %v", err)
	}
	if len(r.Response.Patch) > maxPatch {
		t.Errorf("a %d-byte patch, over %d", len(r.Response.Patch), maxPatch)
	}
	if len(r.Response.Warnings) > maxWarnings {
		t.Errorf("%d warnings", len(r.Response.Warnings))
	}
	for _, w := range r.Response.Warnings {
		checkWarning(t, w)
	}
	if n := utf8.RuneCountInString(r.Response.Status.Message); n > maxMessage {
		t.Errorf("a message of %d characters", n)
	}
}

// FuzzEscapedDecideAlike is TestEscapedReviewsDecideAlike with fuzzed
// encodings: a base review (by index) re-encoded from a fuzzed seed is
// decided as the base is.
func FuzzEscapedDecideAlike(f *testing.F) {
	for i := range uint64(8) {
		f.Add(uint16(i*7), i, i*31+1)
	}
	e := newTestEngine(f, goldenConfig())
	var bases []escapeBase
	var once sync.Once
	f.Fuzz(func(t *testing.T, pick uint16, s1, s2 uint64) {
		once.Do(func() { bases = sortedEscapeBases(t, e) })
		b := bases[int(pick)%len(bases)]
		esc, err := reencode(rand.New(rand.NewPCG(s1, s2)), b.review)
		if err != nil {
			t.Fatal(err)
		}
		want, got := decide(t, e, b.review, b.o), decide(t, e, esc, b.o)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s decides otherwise re-encoded:\n got %+v\nwant %+v\nreview %s", b.name, got, want, esc)
		}
	})
}

// FuzzBudget: wherever the deadline passes (at a fuzzed clock reading),
// a Pod of fuzzed size is answered budget-exceeded or as it would be
// without a deadline, and the engine reads the clock no more once late.
func FuzzBudget(f *testing.F) {
	for _, s := range [][2]uint16{{1, 300}, {2, 300}, {5, 3000}, {40, 3000}, {7, 0}} {
		f.Add(s[0], s[1])
	}
	start := time.Unix(1e9, 0)
	c := &countingClock{start: start}
	e := newTestEngine(f, DefaultConfig(), WithClock(func() time.Time { return c.now() }))
	free := newTestEngine(f, DefaultConfig())
	f.Fuzz(func(t *testing.T, passAt, n uint16) {
		n %= 4000
		body := manyContainersReview(int(n))
		*c = countingClock{start: start, passAt: int(passAt)}
		_, res, err := e.Admit(nil, body, Options{Deadline: start.Add(time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Reason == ReasonBudgetExceeded {
			if c.reads != int(passAt) {
				t.Fatalf("late at reading %d, read %d times", passAt, c.reads)
			}
			return
		}
		if passAt > 0 && c.reads >= int(passAt) {
			t.Fatalf("late at reading %d of %d, answered %v/%v", passAt, c.reads, res.Decision, res.Reason)
		}
		_, want, _ := free.Admit(nil, body, Options{})
		if res.Decision != want.Decision || res.Reason != want.Reason {
			t.Fatalf("in time: %v/%v, without a deadline %v/%v", res.Decision, res.Reason, want.Decision, want.Reason)
		}
	})
}

// FuzzCanonical: canonical keeps a string's value (as encoding/json
// reads it), is idempotent, and leaves canonical strings as they are.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{"plain", `a\"b`, `\u006Eamespace`, `\/\b\f\n\r\t`, `\ud83d\ude00`, `\ud800x`, `\u0026\u003c`, "é\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var want string
		if json.Unmarshal([]byte(`"`+raw+`"`), &want) != nil {
			return // not JSON string content
		}
		if !utf8.ValidString(want) || !utf8.ValidString(raw) {
			return // invalid UTF-8 outside escapes: the API server sends none
		}
		c, err := canonical(raw)
		if err != nil {
			t.Fatalf("canonical(%q): %v", raw, err)
		}
		var got string
		if err := json.Unmarshal([]byte(`"`+c+`"`), &got); err != nil || got != want {
			t.Fatalf("canonical(%q) = %q reads %q, want %q (%v)", raw, c, got, want, err)
		}
		if !isCanonical(c) {
			t.Fatalf("canonical(%q) = %q is not canonical", raw, c)
		}
		if c2, _ := canonical(c); c2 != c {
			t.Fatalf("canonical is not idempotent: %q, then %q", c, c2)
		}
		if string(appendEscaped(nil, want)) != c {
			t.Fatalf("canonical(%q) = %q, want the value escaped: %q", raw, c, appendEscaped(nil, want))
		}
	})
}

// FuzzBoundedText: the writer's output is a JSON string whose value is
// the input's, or its first characters and the marker, within max.
func FuzzBoundedText(f *testing.F) {
	f.Add("hello", uint8(3), false)
	f.Add("a\n\"é😀\xff", uint8(4), true)
	f.Fuzz(func(t *testing.T, s string, max uint8, warning bool) {
		m := int(max%64) + 2
		b := boundedText{dst: []byte{'"'}, max: m, marker: "…", warning: warning}
		b.add(s)
		var got string
		if err := json.Unmarshal(append(b.dst, '"'), &got); err != nil {
			t.Fatalf("%q: not a JSON string: %s", s, b.dst)
		}
		// Each invalid byte becomes U+FFFD (as Go's encoder writes it);
		// in a warning, each control character too.
		var want string
		for _, r := range s {
			if warning && unicode.IsControl(r) {
				r = utf8.RuneError
			}
			want += string(r)
		}
		if n := utf8.RuneCountInString(got); n > m {
			t.Fatalf("%q cut to %d characters, over %d", s, n, m)
		}
		if got != want && !(strings.HasSuffix(got, "…") && strings.HasPrefix(want, strings.TrimSuffix(got, "…"))) {
			t.Fatalf("%q (max %d) written as %q", s, m, got)
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
