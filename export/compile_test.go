package export

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/graftdev/graft/templates"
)

// newTemplate parses a small template for a test; params is the YAML of
// its parameters list, fragment its fragment.
func newTemplate(t *testing.T, params, fragment string) *templates.Template {
	t.Helper()
	var b strings.Builder
	b.WriteString("name: tst\ndescription: a test template\nplacement: first\n")
	if params != "" {
		b.WriteString("parameters:\n")
		for _, l := range strings.Split(strings.TrimSpace(params), "\n") {
			b.WriteString("  " + l + "\n")
		}
	}
	b.WriteString("fragment: |\n")
	for _, l := range strings.Split(fragment, "\n") {
		b.WriteString("  " + l + "\n")
	}
	tmpl, err := templates.Parse("tst.yaml", []byte(b.String()))
	if err != nil {
		t.Fatalf("template: %v\n%s", err, b.String())
	}
	return tmpl
}

// checkAgainstEngine evaluates every variant that values select and
// compares it with what the template engine renders for them.
func checkAgainstEngine(t *testing.T, tmpl *templates.Template, c *template, values []map[string]string) {
	t.Helper()
	for _, overrides := range values {
		text, err := tmpl.RenderYAML(overrides)
		if err != nil {
			t.Fatalf("render %v: %v", overrides, err)
		}
		want, err := decode(string(text))
		if err != nil {
			t.Fatal(err)
		}
		vals := rawValues{}
		for i := range tmpl.Params {
			p := &tmpl.Params[i]
			vals[p.Name] = p.Default
			if v, ok := overrides[p.Name]; ok {
				vals[p.Name] = v
			}
		}
		v := c.variantFor(vals)
		if v == nil {
			t.Fatalf("no variant for %v", overrides)
		}
		if got := eval(v.node, vals); !reflect.DeepEqual(got, want) {
			t.Errorf("values %v: %s", overrides, describeDiff(got, want))
		}
	}
}

func TestCompileConstructs(t *testing.T) {
	cases := []struct {
		name, params, fragment string
		values                 []map[string]string
		// cel must appear in the CEL of the first variant's fragment.
		cel      []string
		variants int
	}{{
		name:   "quote makes any string safe as a whole value",
		params: "- {name: s, type: string, default: x}",
		fragment: `annotations:
  a: {{ .s | quote }}`,
		values: []map[string]string{{"s": `a: "b" # c`}, {"s": "line\nbreak\ttab\\"}, {"s": ""}, {"s": "on"}},
		cel:    []string{`{"a": dyn(variables.p_tst["s"])}`},
	}, {
		name:   "a patterned value inside a plain scalar",
		params: "- {name: port, type: string, default: '80', pattern: '^[0-9]{1,5}$'}",
		fragment: `initContainers:
  - name: c
    args: [--listen=127.0.0.1:{{ .port }}]`,
		values: []map[string]string{{"port": "8080"}, {"port": "0"}},
		cel:    []string{`"--listen=127.0.0.1:" + variables.p_tst["port"]`},
	}, {
		name:   "an int as a whole unquoted value is a number",
		params: "- {name: port, type: int, default: '80', min: '1', max: '65535'}",
		fragment: `initContainers:
  - name: c
    ports: [{containerPort: {{ .port }}}]`,
		values: []map[string]string{{"port": "0080"}, {"port": "+443"}},
		cel:    []string{`int(variables.p_tst["port"])`},
	}, {
		name:   "a negated bool prints its flip",
		params: "- {name: tls, type: bool, default: 'false'}",
		fragment: `annotations:
  insecure: "{{ not .tls }}"`,
		values: []map[string]string{{"tls": "true"}, {"tls": "false"}},
		cel:    []string{`(variables.p_tst["tls"] == "true" ? "false" : "true")`},
	}, {
		name: "if over an enum makes one variant per value",
		params: `- {name: mode, type: enum, default: a, values: [a, b, c]}
- {name: img, type: string, default: x, pattern: '^[a-z]+$'}`,
		fragment: `initContainers:
{{- if eq .mode "a" }}
  - name: only-a
    image: reg/{{ .img }}
{{- else if eq .mode "b" }}
  - name: only-b
    image: reg/{{ .img }}-b
{{- end }}
  - name: always
    image: {{ .img | quote }}`,
		values:   []map[string]string{{"mode": "a"}, {"mode": "b", "img": "y"}, {"mode": "c"}},
		variants: 3,
	}, {
		name:   "a range over a list with a separator is a join",
		params: "- {name: ports, type: list, default: '', pattern: '^[0-9]+$', max: '8'}",
		fragment: `annotations:
  ports: "15021{{ range .ports }},{{ . }}{{ end }}"
  joined: {{ join ";" .ports | quote }}`,
		values: []map[string]string{{"ports": ""}, {"ports": "80"}, {"ports": " 80, 443 ,8080"}},
		cel:    []string{`variables.l_tst["ports"].map(it, "," + it).join("")`, `variables.l_tst["ports"].join(";")`},
	}, {
		name:   "a range with an index-dependent separator",
		params: "- {name: paths, type: list, default: a, min: '1', pattern: '^[a-z/]+$'}",
		fragment: `annotations:
  test: {{ range $j, $p := .paths }}{{ if $j }} && {{ end }}test -f /x/{{ $p }}{{ end }}`,
		values: []map[string]string{{"paths": "a"}, {"paths": "a,b/c,d"}},
		cel:    []string{`variables.l_tst["paths"].map(it, "test -f /x/" + it).join(" && ")`},
	}, {
		name:     "a comment a patterned value cannot end",
		params:   "- {name: s, type: string, default: x, pattern: '^[a-z]+$'}",
		fragment: "# built for {{ .s }}\nannotations:\n  a: b",
		values:   []map[string]string{{"s": "y"}},
	}, {
		name: "printf, variables, toJson in a block scalar, a range over an int",
		params: `- {name: addr, type: string, default: 'http://v', pattern: '^https?://[a-z.]+$'}
- {name: paths, type: list, default: 'a', pattern: '^[a-z]+$'}`,
		fragment: `{{- $dir := "/run" }}
initContainers:
{{- range $i := 2 }}
  - name: c{{ $i }}
    env:
      - name: CONFIG
        value: |
          {"addr": {{ $.addr | toJson }}, "files": [
          {{- range $j, $p := $.paths }}{{ if $j }},{{ end }}{{ printf "%s/%s" $dir $p | toJson }}{{ end }}],
           "q": {{ printf "a %q" $.addr | toJson }}}
{{- end }}`,
		values: []map[string]string{{"paths": "a,b"}, {"addr": "https://x.y", "paths": ""}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := newTemplate(t, tc.params, tc.fragment)
			c, err := compileTemplate(tmpl)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			if tc.variants > 0 && len(c.variants) != tc.variants {
				t.Errorf("%d variants, want %d", len(c.variants), tc.variants)
			}
			checkAgainstEngine(t, tmpl, c, append(tc.values, map[string]string{}))
			cel := celNode(c.variants[0].node, paramVars{tmpl: "tst"})
			for _, want := range tc.cel {
				if !strings.Contains(cel, want) {
					t.Errorf("CEL lacks %s:\n%s", want, cel)
				}
			}
		})
	}
}

func TestCompileRefusals(t *testing.T) {
	cases := []struct {
		name, params, fragment string
		line                   int
		reason                 string
	}{{
		name:     "a condition on a string",
		params:   "- {name: s, type: string, default: x}",
		fragment: "annotations:\n{{- if .s }}\n  a: b\n{{- end }}",
		line:     2, reason: "a condition on parameter s of type string: only enum and bool parameters may steer the fragment",
	}, {
		name:     "a comparison of an int",
		params:   "- {name: num, type: int, default: '1'}",
		fragment: "annotations:\n  a: b\n{{- if eq .num 2 }}\n  c: d\n{{- end }}",
		line:     3, reason: "a comparison on parameter num of type int",
	}, {
		name:     "an unpatterned string unquoted",
		params:   "- {name: s, type: string, default: x}",
		fragment: "annotations:\n  a: x{{ .s }}",
		line:     2, reason: "parameter s may hold characters YAML reads specially here (any character); quote it",
	}, {
		name:     "an unanchored pattern bounds nothing",
		params:   "- {name: s, type: string, default: x, pattern: '[a-z]+'}",
		fragment: "annotations:\n  a: x{{ .s }}",
		line:     2, reason: "parameter s may hold characters YAML reads specially here (any character)",
	}, {
		name:     "a value YAML may read as a number",
		params:   "- {name: s, type: string, default: x, pattern: '^[0-9a-z]+$'}",
		fragment: "annotations:\n  a: {{ .s }}",
		line:     2, reason: "parameter s in an unquoted value may make YAML read it as a number, boolean or null",
	}, {
		name:     "an enum value YAML reads as a boolean",
		params:   "- {name: m, type: enum, default: x, values: [x, 'on']}",
		fragment: "initContainers:\n  - name: c\n    args: [{{ .m }}]",
		line:     3, reason: `enum value "on" of parameter m is not read as a string by YAML unquoted`,
	}, {
		name:     "a name built from a parameter",
		params:   "- {name: s, type: string, default: x}",
		fragment: "initContainers:\n  - name: {{ .s | quote }}",
		reason:   "initContainers[0]: the name must be fixed text, not built from parameters",
	}, {
		name:     "a parameter in a key",
		params:   "- {name: s, type: string, default: x}",
		fragment: "annotations:\n  {{ .s | quote }}: v",
		line:     2, reason: "parameter s lands in a YAML key; keys must be fixed",
	}, {
		name:     "a range producing list items",
		params:   "- {name: l, type: list, default: a, pattern: '^[a-z]+$'}",
		fragment: "initContainers:\n  - name: c\n    args:\n{{- range .l }}\n      - {{ . }}\n{{- end }}",
		reason:   "a range over parameter l produces YAML structure",
	}, {
		name:     "a function without a CEL equivalent",
		params:   "- {name: l, type: list, default: a}",
		fragment: "annotations:\n  n: {{ len .l | quote }}",
		line:     2, reason: "function len has no CEL equivalent in export",
	}, {
		name:     "a printf verb without one",
		params:   "- {name: s, type: string, default: x}",
		fragment: "annotations:\n  n: {{ printf \"%x\" .s | quote }}",
		line:     2, reason: "printf verb %x is not supported",
	}, {
		name:     "toJson of text JSON escapes, inside a larger value",
		params:   "- {name: s, type: string, default: x, pattern: '^[a-z<>]+$'}",
		fragment: "annotations:\n  n: |\n    {\"s\": {{ .s | toJson }}}",
		line:     3, reason: `parameter s inside a larger text through toJson may hold characters toJson escapes ('<' '>')`,
	}, {
		name:     "a comment a value could end",
		params:   "- {name: s, type: string, default: x}",
		fragment: "# built for {{ .s }}\nannotations:\n  a: b",
		line:     1, reason: "parameter s in a YAML comment may hold a line break",
	}, {
		name:     "nested ranges",
		params:   "- {name: l, type: list, default: a, pattern: '^[a-z]+$'}",
		fragment: "annotations:\n  n: \"{{ range .l }}{{ range $.l }}{{ . }}{{ end }}{{ end }}\"",
		line:     2, reason: "nested ranges over list parameters are not supported",
	}, {
		name:     "break",
		params:   "- {name: l, type: list, default: a, pattern: '^[a-z]+$'}",
		fragment: "annotations:\n  n: \"{{ range .l }}{{ break }}{{ end }}\"",
		line:     2, reason: "break and continue are not supported",
	}, {
		name: "too many variants",
		params: `- {name: a, type: enum, default: x, values: [x, y, z, w]}
- {name: b, type: enum, default: x, values: [x, y, z, w]}
- {name: c, type: enum, default: x, values: [x, y, z, w, v]}`,
		fragment: "annotations:\n  n: \"{{ if eq .a \"x\" }}{{ end }}{{ if eq .b \"x\" }}{{ end }}{{ if eq .c \"x\" }}{{ end }}\"",
		reason:   "control flow over 80 combinations of parameters a, b, c; at most 64 compile",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := newTemplate(t, tc.params, tc.fragment)
			_, err := compileTemplate(tmpl)
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("want a refusal, got %v", err)
			}
			if r.Template != "tst" || r.File != "tst.yaml" {
				t.Errorf("refusal names template %q file %q", r.Template, r.File)
			}
			if r.Line != tc.line {
				t.Errorf("line %d, want %d (%v)", r.Line, tc.line, r)
			}
			if !strings.Contains(r.Reason, tc.reason) {
				t.Errorf("reason %q lacks %q", r.Reason, tc.reason)
			}
			if want := "template tst (tst.yaml)"; !strings.HasPrefix(r.Error(), want) {
				t.Errorf("message %q", r.Error())
			}
		})
	}
}
