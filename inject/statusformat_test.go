package inject

import (
	"os"
	"strings"
	"testing"
)

// The examples of docs/reference/status-format.md are records as graft
// reads and writes them: each parses, and a version 2 example is in the
// canonical form, so writing it again gives the same bytes.
func TestStatusFormatExamples(t *testing.T) {
	doc, err := os.ReadFile("../docs/reference/status-format.md")
	if err != nil {
		t.Fatal(err)
	}
	versions := map[int]int{}
	for _, block := range strings.Split(string(doc), "```json\n")[1:] {
		example, _, ok := strings.Cut(block, "\n```")
		if !ok {
			t.Fatalf("unterminated json block: %.80s", block)
		}
		st, err := ParseStatus(example)
		if err != nil {
			t.Errorf("%s: %v", example, err)
			continue
		}
		versions[st.Version]++
		if got := st.Value(); st.Version == 2 && got != example {
			t.Errorf("not canonical:\n doc  %s\n graft %s", example, got)
		}
	}
	if versions[1] == 0 || versions[2] == 0 {
		t.Errorf("examples by version %v: want one of each", versions)
	}
}
