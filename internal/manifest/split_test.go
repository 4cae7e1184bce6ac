package manifest

import (
	"bytes"
	"io"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

func TestSplitYAMLTextFollowsTheDecoder(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"a: 1\n", []string{"a: 1\n"}},
		{"a: 1\n---\nb: 2\n", []string{"a: 1\n", "---\nb: 2\n"}},
		{"---\na: 1\n", []string{"---\na: 1\n"}},
		{"# head\n\n---\na: 1\n", []string{"# head\n\n---\na: 1\n"}},
		{"a: 1\n---\n---\nb: 2", []string{"a: 1\n", "---\n", "---\nb: 2"}},
		{"a: 1\n--- # c\nb: 2\n", []string{"a: 1\n", "--- # c\nb: 2\n"}},
		{"a: 1\r\n---\r\nb: 2\r\n", []string{"a: 1\r\n", "---\r\nb: 2\r\n"}},
		{"s: |\n  ----\n  x\n", []string{"s: |\n  ----\n  x\n"}},
		{"a: 1\n---x: 2\n", []string{"a: 1\n---x: 2\n"}},
		{"# only a comment\n", nil},
		{"", nil},
	}
	for _, tt := range tests {
		got := splitYAMLText([]byte(tt.in))
		if len(got) != len(tt.want) {
			t.Errorf("%q: got %d documents %q, want %q", tt.in, len(got), got, tt.want)
			continue
		}
		for i := range got {
			if string(got[i]) != tt.want[i] {
				t.Errorf("%q: document %d = %q, want %q", tt.in, i+1, got[i], tt.want[i])
			}
		}
		// The decoder sees as many documents, each the same as its text alone.
		dec := yaml.NewDecoder(bytes.NewReader([]byte(tt.in)))
		for i := 0; ; i++ {
			var n yaml.Node
			err := dec.Decode(&n)
			if err == io.EOF {
				if i != len(got) {
					t.Errorf("%q: decoder saw %d documents, split %d", tt.in, i, len(got))
				}
				break
			}
			if err != nil {
				t.Fatalf("%q: %v", tt.in, err)
			}
			if i >= len(got) {
				continue
			}
			var alone yaml.Node
			if err := yaml.Unmarshal(got[i], &alone); err != nil {
				t.Fatalf("%q: document %d alone: %v", tt.in, i+1, err)
			}
			a, _ := NodeJSON(&n)
			b, _ := NodeJSON(&alone)
			if !bytes.Equal(a, b) {
				t.Errorf("%q: document %d: decoder %s, text alone %s", tt.in, i+1, a, b)
			}
		}
	}
}
