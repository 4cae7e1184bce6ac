package export

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"

	"github.com/graftdev/graft/templates"
)

// TestImageFormatRuleSaysWhatTheEngineSays: the policy's rule for a
// parameter of format image refuses what templates.Param.Parse refuses,
// in its words, for a string and for a list's items.
func TestImageFormatRuleSaysWhatTheEngineSays(t *testing.T) {
	tmpl, err := templates.Parse("i.yaml", []byte(`name: i
description: image parameters.
parameters:
  - {name: image, type: string, format: image, default: "example.com/a:1", pattern: '^[a-z0-9][a-z0-9._/:@-]*$'}
  - {name: images, type: list, format: image, default: "example.com/a:1"}
fragment: ""
`))
	if err != nil {
		t.Fatal(err)
	}
	env, err := cel.NewEnv(cel.Variable("v", cel.StringType), ext.Strings(ext.StringsVersion(3)))
	if err != nil {
		t.Fatal(err)
	}
	values := []string{"example.com/a:1", "example.com/../a:1", "example.com//a", "Example.com/A", "a b", "",
		"example.com/a:1,b..c", "a,,b", "x:-1", "EXAMPLE", "a:1@sha256:" + strings.Repeat("f", 64)}
	for _, name := range []string{"image", "images"} {
		p, _ := tmpl.Param(name)
		ast, iss := env.Compile(ruleExpr(p, "v"))
		if iss.Err() != nil {
			t.Fatalf("%s: %v", name, iss.Err())
		}
		prog, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			out, _, err := prog.Eval(map[string]any{"v": v})
			if err != nil {
				t.Fatalf("%s=%q: %v", name, v, err)
			}
			want := ""
			if _, err := p.Parse(v); err != nil {
				want = err.Error()
			}
			if got := out.Value().(string); got != want {
				t.Errorf("%s=%q: the policy says %q, the engine %q", name, v, got, want)
			}
		}
	}
}
