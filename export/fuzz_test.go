package export

import (
	"testing"

	"github.com/graftdev/graft/templates"
)

// FuzzCompile: any template the loader accepts compiles or is refused;
// the compiler never panics or hangs on it.
func FuzzCompile(f *testing.F) {
	set, err := templates.Builtin()
	if err != nil {
		f.Fatal(err)
	}
	params := `parameters:
  - {name: s, type: string, default: x, pattern: '^[a-z]+$'}
  - {name: e, type: enum, default: a, values: [a, b]}
  - {name: l, type: list, default: 'p,q', pattern: '^[a-z]+$'}
  - {name: n, type: int, default: '1'}
  - {name: b, type: bool, default: 'true'}
`
	for _, name := range set.Names() {
		t, _ := set.Get(name)
		f.Add(params, t.Fragment)
	}
	f.Add(params, "annotations:\n  a: {{ if eq .e \"a\" }}{{ .s }}{{ end }}{{ range .l }},{{ . }}{{ end }}")
	f.Fuzz(func(t *testing.T, params, fragment string) {
		doc := "name: fz\ndescription: fuzzed\n" + params + "fragment: |\n"
		for _, line := range splitLines(fragment) {
			doc += "  " + line + "\n"
		}
		tmpl, err := templates.Parse("fz.yaml", []byte(doc))
		if err != nil {
			return
		}
		_, _ = compileTemplate(tmpl)
	})
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
