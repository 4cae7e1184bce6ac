package corpus

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestReviewsAreDeterministicAndSized(t *testing.T) {
	sizes := map[string][2]int{ // min, max bytes
		Small: {5000, 7500}, Medium: {12000, 19000}, Large: {40000, 58000}, Huge: {400000, 650000},
	}
	for _, name := range Names() {
		a, b := Review(name), Review(name)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two builds differ", name)
		}
		if !json.Valid(a) {
			t.Errorf("%s: not valid JSON", name)
		}
		if r, ok := sizes[name]; ok && (len(a) < r[0] || len(a) > r[1]) {
			t.Errorf("%s: %d bytes, want %d..%d", name, len(a), r[0], r[1])
		}
	}
}
