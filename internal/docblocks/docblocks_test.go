package docblocks

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	text := "# T\n\n<!-- not run: needs a cluster -->\n```sh\nkubectl get pods\n```\n\n" +
		"## Then\n\n1. A step:\n\n   ```\n   output\n   ```\n\n" +
		"<!-- checked by TestX -->\n```sh\n# not a heading\nkubectl apply -k .\n```\n"
	bs := Parse(text)
	if len(bs) != 3 {
		t.Fatalf("%d blocks, want 3", len(bs))
	}
	if b := bs[0]; b.Lang != "sh" || b.Marker != "not run: needs a cluster" || b.Text != "kubectl get pods\n" || b.Line != 4 || b.Section != "T" {
		t.Errorf("first block %+v", b)
	}
	if b := bs[1]; b.Lang != "" || b.Marker != "" || b.Text != "output\n" || b.Section != "Then" {
		t.Errorf("second block %+v", b)
	}
	if b := bs[2]; b.Section != "Then" || b.Text != "# not a heading\nkubectl apply -k .\n" {
		t.Errorf("third block %+v: a comment in a block is no heading", b)
	}
	if !slices.ContainsFunc(bs, Block.Shell) {
		t.Error("no shell block found")
	}
	if r, ok := bs[0].NotRun(); !ok || r != "needs a cluster" {
		t.Errorf("NotRun = %q, %v", r, ok)
	}
	if _, ok := bs[1].NotRun(); ok {
		t.Error("an unmarked block is not-run")
	}
	if name, ok := bs[2].CheckedBy(); !ok || name != "TestX" {
		t.Errorf("CheckedBy = %q, %v", name, ok)
	}
	if name, ok := (Block{Marker: "demo output: checked by TestReadme"}).CheckedBy(); !ok || name != "TestReadme" {
		t.Errorf("CheckedBy of a demo output marker = %q, %v", name, ok)
	}
}

func TestMatchOutput(t *testing.T) {
	for _, tt := range []struct {
		want, got string
		ok        bool
	}{
		{"a\nb\n", "a\nb\n", true},
		{"a\nb\n", "a\nc\n", false},
		{"a\n...\nd\n", "a\nb\nc\nd\n", true},
		{"a\n...\nd\n", "a\nd\n", true},
		{"a\n...\n", "a\n", true},
		{"patch: ...\n", "patch: 9 operations\n", true},
		{"patch: 3 ...\n", "patch: 9 operations\n", false},
		{"a\n", "a\nb\n", false},
		{"a  \n", "a\n", true},
	} {
		if err := MatchOutput(tt.want, tt.got); (err == nil) != tt.ok {
			t.Errorf("MatchOutput(%q, %q) = %v, want ok %v", tt.want, tt.got, err, tt.ok)
		}
	}
}

// FuzzParse: any text parses without a panic into blocks whose lines are
// in the text, in order, each with the body the text has after its fence.
func FuzzParse(f *testing.F) {
	f.Add("# T\n<!-- run -->\n```sh\necho\n```\n")
	f.Add("  ```\n  x\n")
	f.Add("```\n```\n```")
	f.Fuzz(func(t *testing.T, text string) {
		lines := strings.Split(text, "\n")
		last := 0
		for _, b := range Parse(text) {
			if b.Line <= last || b.Line > len(lines) {
				t.Fatalf("block at line %d after %d, in %d lines", b.Line, last, len(lines))
			}
			if !strings.Contains(lines[b.Line-1], "```") {
				t.Fatalf("line %d is no fence: %q", b.Line, lines[b.Line-1])
			}
			last = b.Line + strings.Count(b.Text, "\n")
		}
	})
}
