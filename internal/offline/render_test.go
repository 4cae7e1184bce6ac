package offline

import (
	"bytes"
	"testing"

	"github.com/graftdev/graft/templates"
)

// What render prints starts with the fragment's first key: no template
// of the built-in set leaves a blank line at the top, whatever its
// actions render to.
func TestRenderStartsWithText(t *testing.T) {
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range set.Names() {
		out, err := renderTemplate(set, name, nil, "yaml")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		first, _, _ := bytes.Cut(out, []byte("\n"))
		if len(bytes.TrimSpace(first)) == 0 {
			t.Errorf("%s: starts with a blank line:\n%s", name, out)
		}
	}
}

func TestTrimLeadingBlankLines(t *testing.T) {
	for in, want := range map[string]string{
		"\n\n  \na: 1\n\nb: 2\n": "a: 1\n\nb: 2\n",
		"a: 1\n":                 "a: 1\n",
		"\n\n":                   "",
		"":                       "",
	} {
		if got := string(trimLeadingBlankLines([]byte(in))); got != want {
			t.Errorf("trimLeadingBlankLines(%q) = %q, want %q", in, got, want)
		}
	}
}
