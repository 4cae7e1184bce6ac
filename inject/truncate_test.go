package inject

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/graftdev/graft/bench/corpus"
)

// TestTruncatedReviews cuts a review at every byte: each prefix is either
// refused as malformed or, if it still reads as a review, answered well.
func TestTruncatedReviews(t *testing.T) {
	e := newTestEngine(t, goldenConfig())
	body := corpus.Review(corpus.Prepend)
	for n := 0; n < len(body); n++ {
		out, _, err := e.Admit(nil, body[:n], Options{})
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("prefix %d: %v", n, err)
			}
			continue
		}
		if !json.Valid(out) {
			t.Fatalf("prefix %d: invalid response %s", n, out)
		}
	}
}
