package templates

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// opaqueTarget writes its values in every way a fragment can: as is,
// quoted, inside YAML's own quotes, in a block scalar, in a flow
// sequence, through printf, toJson and join, in a comment, into a key.
// Parsed, not loaded: lint refuses a template that writes values as is;
// Render must hold for any template, lint or not.
const opaqueTarget = `name: a
description: writes values in every way.
podSecurity: baseline
parameters:
  - {name: image, type: string, default: example.com/a:1, description: i}
  - {name: note, type: string, default: hello, description: n}
  - {name: flags, type: list, default: "x", description: f}
  - {name: level, type: string, default: info, description: l}
fragment: |
  initContainers:
    - name: graft-a
      image: {{ .image }}
      restartPolicy: Always
      # {{ .note }}
      args: [{{ .note | quote }}{{ range .flags }}, "--{{ . }}"{{ end }}, '{{ .note }}']
      command: {{ toJson .flags }}
      env:
        - {name: A, value: {{ printf "run %s" .note }}}
        - name: B
          value: --flags={{ join "," .flags }}
        - name: C
          value: |
            {"note": {{ toJson .note }}, "level": {{ .level | quote }}}
        {{- if eq .level "debug" }}
        - {name: DEBUG, value: "1"}
        {{- end }}
  annotations:
    example.com/{{ .level }}: {{ .note }}
`

func TestValuesAreOpaque(t *testing.T) {
	a, err := Parse("a.yaml", []byte(opaqueTarget))
	if err != nil {
		t.Fatal(err)
	}
	type env struct{ Name, Value string }
	type container struct {
		Image   string   `json:"image"`
		Args    []string `json:"args"`
		Command []string `json:"command"`
		Env     []env    `json:"env"`
	}
	envs := func(note, flags, level string) []env {
		return []env{{"A", "run " + note}, {"B", "--flags=" + flags}, {"C", `{"note": "` + note + `", "level": "` + level + `"}` + "\n"}}
	}
	for _, tt := range []struct {
		name      string
		overrides map[string]string
		want      container
		// annotation is the one annotation's key and value.
		annotation KV
		// problem, when set, is the start of the render's error.
		problem string
	}{{
		name: "defaults",
		want: container{Image: "example.com/a:1", Args: []string{"hello", "--x", "hello"}, Command: []string{"x"},
			Env: envs("hello", "x", "info")},
		annotation: KV{"example.com/info", "hello"},
	}, {
		name:      "an image with a tag and a digest",
		overrides: map[string]string{"image": "example.com/a:1@sha256:" + strings.Repeat("0", 64)},
		want: container{Image: "example.com/a:1@sha256:" + strings.Repeat("0", 64), Args: []string{"hello", "--x", "hello"},
			Command: []string{"x"}, Env: envs("hello", "x", "info")},
		annotation: KV{"example.com/info", "hello"},
	}, {
		// Issue 21: a newline and keys in an image written as is added a
		// command and an env var. Now it is one string, which no image
		// reference is.
		name:      "issue 21's image",
		overrides: map[string]string{"image": "evil:1\n      command: [sh, -c, 'cat /var/run/secrets/token']\n      env: [{name: S, valueFrom: {secretKeyRef: {name: db, key: pw}}}]"},
		problem:   `template a: initContainers[graft-a]: image: "evil:1\n      command: [sh, -c, 'cat /var/run/secrets/token']`,
	}, {
		name:      "a flow mapping as an image",
		overrides: map[string]string{"image": "{a: b}"},
		problem:   `template a: initContainers[graft-a]: image: "{a: b}" is not a container image reference`,
	}, {
		name:      "YAML syntax everywhere a note goes",
		overrides: map[string]string{"note": "a: b\n- c # d\n'\"}]\\"},
		want: container{Image: "example.com/a:1",
			Args: []string{"a: b\n- c # d\n'\"}]\\", "--x", "a: b\n- c # d\n'\"}]\\"}, Command: []string{"x"},
			Env: []env{{"A", "run a: b\n- c # d\n'\"}]\\"}, {"B", "--flags=x"},
				{"C", `{"note": "a: b\n- c # d\n'\"}]\\", "level": "info"}` + "\n"}}},
		annotation: KV{"example.com/info", "a: b\n- c # d\n'\"}]\\"},
	}, {
		name:      "list items that close the quotes",
		overrides: map[string]string{"flags": `x", "--y`},
		want: container{Image: "example.com/a:1", Args: []string{"hello", `--x"`, `--"--y`, "hello"}, Command: []string{`x"`, `"--y`},
			Env: envs("hello", `x","--y`, "info")},
		annotation: KV{"example.com/info", "hello"},
	}, {
		name:      "a value that steers a branch and names a key",
		overrides: map[string]string{"level": "debug"},
		want: container{Image: "example.com/a:1", Args: []string{"hello", "--x", "hello"}, Command: []string{"x"},
			Env: append(envs("hello", "x", "debug"), env{"DEBUG", "1"})},
		annotation: KV{"example.com/debug", "hello"},
	}, {
		name:      "a key a value cannot extend",
		overrides: map[string]string{"level": "x: y\n  example.com/z"},
		problem:   `template a: annotations[example.com/x: y`,
	}, {
		// An inert value is written as itself, and YAML types it: the same
		// shape, but a number where the API wants a string.
		name:      "a value that becomes a number",
		overrides: map[string]string{"image": "1.5"},
		problem:   "template a: rendered fragment: initContainers[0]: json: cannot unmarshal number",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := a.Render(tt.overrides)
			if tt.problem != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.problem) {
					t.Fatalf("err = %v, want %q", err, tt.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(f.InitContainers) != 1 || len(f.Annotations) != 1 {
				t.Fatalf("rendered %d init containers and %d annotations, want 1 and 1", len(f.InitContainers), len(f.Annotations))
			}
			var got container
			if err := json.Unmarshal(f.InitContainers[0].Raw, &got); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("container\n got %#v\nwant %#v", got, tt.want)
			}
			if f.Annotations[0] != tt.annotation {
				t.Errorf("annotation %q, want %q", f.Annotations[0], tt.annotation)
			}
		})
	}
}

// TestDuplicateKeysAreRefused: a YAML parser takes the later of two equal
// keys; a fragment holding one twice is refused, naming the line and the
// key, wherever the mapping is and whatever made the keys equal.
func TestDuplicateKeysAreRefused(t *testing.T) {
	for _, tt := range []struct{ name, params, fragment, want string }{{
		name: "the template writes image twice",
		fragment: `initContainers:
  - name: graft-a
    image: example.com/a:1
    restartPolicy: Always
    image: example.com/b:1`,
		want: `template a: rendered fragment: line 5: key "image" already set in map (a mapping holds each key once)`,
	}, {
		name: "a branch adds a key the template also writes",
		params: `  - {name: debug, type: bool, default: "true"}
`,
		fragment: `annotations:
  example.com/a: x
  {{- if .debug }}
  example.com/a: y
  {{- end }}`,
		want: `template a: rendered fragment: line 3: key "example.com/a" already set in map`,
	}, {
		name: "two keys equal once YAML types them",
		fragment: `annotations:
  "1": x
  1: y`,
		want: `template a: rendered fragment: annotations: key "1" twice (a mapping holds each key once)`,
	}, {
		name: "two keys equal once their values are in",
		params: `  - {name: k, type: string, default: "a b"}
`,
		fragment: `annotations:
  {{ .k }}: x
  {{ "a b" | quote }}: y`,
		want: `template a: rendered fragment: annotations: key "a b" twice`,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			src := "name: a\ndescription: d\n"
			if tt.params != "" {
				src += "parameters:\n" + tt.params
			}
			src += "fragment: |\n  " + strings.ReplaceAll(tt.fragment, "\n", "\n  ") + "\n"
			tmpl := &Template{}
			if err := yaml.UnmarshalStrict([]byte(src), tmpl); err != nil {
				t.Fatal(err)
			}
			if err := tmpl.init(); err != nil {
				t.Fatal(err)
			}
			_, err := tmpl.Render(nil)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestRenderYAMLWritesValues: RenderYAML is the text the template writes,
// values in place; for values without YAML syntax it reads as the
// fragment Render returns.
func TestRenderYAMLWritesValues(t *testing.T) {
	set, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range set.Names() {
		tmpl, _ := set.Get(name)
		text, err := tmpl.RenderYAML(nil)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(text), tokenPrefix) {
			t.Errorf("%s: RenderYAML left a token in:\n%s", name, text)
		}
		f, err := parseFragment(text) // the text's own structure, no tokens in it
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := tmpl.Render(nil)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(f) != fmt.Sprint(want) {
			t.Errorf("%s: RenderYAML's text reads as\n%v\nRender gives\n%v", name, f, want)
		}
	}
}

// shape is a rendered document's structure: every key path, key names
// included, each list's length and each scalar's kind. The values of
// strings are left out: they are what a parameter may change.
func shape(v any, path string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		*out = append(*out, path+"{}")
		for _, k := range slices.Sorted(maps.Keys(x)) {
			shape(x[k], path+"."+fmt.Sprintf("%q", k), out)
		}
	case []any:
		*out = append(*out, fmt.Sprintf("%s[%d]", path, len(x)))
		for i, e := range x {
			shape(e, fmt.Sprintf("%s[%d]", path, i), out)
		}
	default:
		*out = append(*out, fmt.Sprintf("%s=%T", path, v))
	}
}

// documentShape renders t with vals, parses it as Render does and
// returns its shape.
func documentShape(t *Template, vals map[string]any) ([]string, error) {
	text, err := t.execute(vals)
	if err != nil {
		return nil, err
	}
	js, err := document(text)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, err
	}
	var out []string
	shape(doc, "", &out)
	return out, nil
}

// permissiveBuiltins are the built-in templates with the patterns and
// formats of their string and list parameters taken away: what remains
// between a value and the document is the template's text and Render.
func permissiveBuiltins(tb testing.TB) []*Template {
	tb.Helper()
	set, err := Builtin()
	if err != nil {
		tb.Fatal(err)
	}
	var out []*Template
	for _, name := range set.Names() {
		orig, _ := set.Get(name)
		t, err := Parse(orig.File, orig.Source)
		if err != nil {
			tb.Fatal(err)
		}
		for i := range t.Params {
			t.Params[i].Pattern, t.Params[i].re, t.Params[i].Format = "", nil, ""
		}
		out = append(out, t)
	}
	return out
}

// valuesWith are t's defaults with every string and list parameter's
// value from text: a string whole, a list split at commas.
func valuesWith(tb testing.TB, t *Template, text func(p *Param) string) map[string]any {
	tb.Helper()
	vals, err := t.Values(nil)
	if err != nil {
		tb.Fatal(err)
	}
	for i := range t.Params {
		p := &t.Params[i]
		switch p.Type {
		case TypeString:
			vals[p.Name] = text(p)
		case TypeList:
			vals[p.Name] = strings.Split(text(p), ",")
		}
	}
	return vals
}

// hostile are characters that carry syntax somewhere in YAML or in the
// texts the built-in templates write, and some that carry none.
var hostile = []string{"\n", "\r", "\t", " ", ":", ": ", "#", " #", "'", `"`, `\`, "{", "}", "[", "]", ",", "&", "*", "!",
	"|", ">", "%", "@", "`", "- ", "? ", "---", "...", "$(", "{{", "}}", "é", "\u2028", "\x00", "\xff", "a", "Z", "0", "/", ".",
	tokenPrefix, tokenPrefix + "r41Z", "true", "~", "<<"}

// TestValuesCannotChangeStructure: whatever text the string and list
// parameters of a built-in template hold, past every pattern, the
// document it renders has the structure the defaults render: the same
// key paths (names included), list lengths and kinds of scalar.
func TestValuesCannotChangeStructure(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 32))
	for _, tmpl := range permissiveBuiltins(t) {
		want, err := documentShape(tmpl, must(tmpl.Values(nil)))
		if err != nil {
			t.Fatal(err)
		}
		for range 300 {
			vals := valuesWith(t, tmpl, func(*Param) string {
				var b strings.Builder
				for range 1 + rng.IntN(12) {
					b.WriteString(hostile[rng.IntN(len(hostile))])
				}
				return b.String()
			})
			got, err := documentShape(tmpl, vals)
			if err != nil {
				t.Fatalf("%s with %q: %v", tmpl.Name, vals, err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s with %q renders another structure:\n got %v\nwant %v", tmpl.Name, vals, got, want)
			}
		}
	}
}

// FuzzValuesCannotChangeStructure is TestValuesCannotChangeStructure
// with the fuzzer's strings: every string and list parameter of every
// built-in template (patterns and formats taken away) holds s.
func FuzzValuesCannotChangeStructure(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Add("evil:1\n      command: [sh]\n      image: x")
	f.Add(`x", "--y`)
	tmpls := permissiveBuiltins(f)
	wants := make([][]string, len(tmpls))
	for i, tmpl := range tmpls {
		var err error
		if wants[i], err = documentShape(tmpl, must(tmpl.Values(nil))); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, tmpl := range tmpls {
			vals := valuesWith(t, tmpl, func(*Param) string { return s })
			got, err := documentShape(tmpl, vals)
			if err != nil {
				t.Fatalf("%s with %q: %v", tmpl.Name, s, err)
			}
			if !slices.Equal(got, wants[i]) {
				t.Fatalf("%s with %q renders another structure:\n got %v\nwant %v", tmpl.Name, s, got, wants[i])
			}
		}
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
