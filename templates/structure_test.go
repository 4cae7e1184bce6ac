package templates

import (
	"strings"
	"testing"
)

// TestValuesCannotChangeStructure: a value holding YAML syntax where a
// template writes it as is (issue 21: a newline in an unpatterned image
// injected a command and a secret env var) fails to render, naming the
// parameter; the same characters where the template quotes the value, or
// inside a value that keeps the structure, render.
func TestValuesCannotChangeStructure(t *testing.T) {
	// Parsed, not loaded: lint refuses such a template (lintInterpolation);
	// Render must hold for any, lint or not.
	a, err := Parse("a.yaml", []byte(`name: a
description: writes values as is and quoted.
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
      args: [{{ .note | quote }}{{ range .flags }}, "--{{ . }}"{{ end }}]
      {{- if eq .level "debug" }}
      env: [{name: DEBUG, value: "1"}]
      {{- end }}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		overrides map[string]string
		// want is "" when the render must succeed, else a problem prefix.
		want string
	}{
		{"an image with a tag and a digest", map[string]string{"image": "example.com/a:1@sha256:" + strings.Repeat("0", 64)}, ""},
		{"issue 21's image", map[string]string{"image": "evil:1\n      command: [sh, -c, 'cat /var/run/secrets/token']\n      env: [{name: S, valueFrom: {secretKeyRef: {name: db, key: pw}}}]"},
			"template a: parameter image: the value changes the structure of the rendered fragment"},
		{"a flow mapping as an image", map[string]string{"image": "{a: b}"}, "template a: parameter image:"},
		{"YAML syntax in a quoted value", map[string]string{"note": "a: b\n- c # d"}, ""},
		{"a list item that closes the quotes", map[string]string{"flags": `x", "--y`}, "template a: parameter flags:"},
		{"a value that steers a branch", map[string]string{"level": "debug"}, ""},
		// The same shape, but a number where the API wants a string: the
		// fragment check refuses it, as any render.
		{"a value that becomes a number", map[string]string{"image": "1.5"}, "template a: rendered fragment: initContainers[0]: json: cannot unmarshal number"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.Render(tt.overrides)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
