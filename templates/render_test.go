package templates

import (
	"errors"
	"strings"
	"testing"
)

// renderTarget is lint-clean at its defaults, but its string parameters
// reach names, quantities and list indexes unchecked, so some values a Pod
// may set render a fragment no Pod could hold.
const renderTarget = `name: target
description: a template whose string parameters reach names and quantities.
parameters:
  - {name: suffix, type: string, default: "", description: s}
  - {name: memory, type: string, default: 64Mi, description: m}
  - {name: helper, type: string, default: helper, description: h}
  - {name: items, type: list, default: a, description: i}
  - {name: pick, type: int, default: "0", min: "0", max: "9", description: p}
fragment: |
  initContainers:
    - name: graft-target{{ .suffix }}
      image: example.com/x:1
      restartPolicy: Always
      args: [{{ index .items .pick | quote }}]
      resources: {requests: {memory: {{ .memory | quote }}}, limits: {memory: 1Gi}}
  containers:
    - {name: {{ .helper | quote }}, image: example.com/x:1}
`

func TestRenderValidatesTheFragment(t *testing.T) {
	tmpl, err := Parse("target.yaml", []byte(renderTarget))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		overrides map[string]string
		// want is the RenderError's message; empty for a valid render.
		want string
	}{
		{name: "defaults"},
		{name: "a valid suffix", overrides: map[string]string{"suffix": "-debug"}},
		{
			name:      "a suffix that breaks the container name",
			overrides: map[string]string{"suffix": "_X"},
			want:      "template target: initContainers[graft-target_X]: name: a lowercase RFC 1123 label",
		},
		{
			name:      "a string that is no quantity",
			overrides: map[string]string{"memory": "lots"},
			want:      "template target: rendered fragment: initContainers[0]: quantities must match the regular expression",
		},
		{
			name:      "a quantity above its limit",
			overrides: map[string]string{"memory": "2Gi"},
			want:      "template target: initContainers[graft-target]: resources: requests[memory] 2Gi exceeds its limit 1Gi",
		},
		{
			name:      "a container named like the sidecar",
			overrides: map[string]string{"helper": "graft-target"},
			want:      "template target: containers[graft-target]: name: also used by initContainers[graft-target]",
		},
		{
			name:      "a missing name",
			overrides: map[string]string{"helper": ""},
			want:      "template target: rendered fragment: containers[0]: name is required",
		},
		{
			name:      "an index the template cannot execute",
			overrides: map[string]string{"pick": "3"},
			want:      "template target: render: template: target:",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := tmpl.Render(tt.overrides)
			if tt.want == "" {
				if err != nil || len(f.InitContainers) != 1 {
					t.Fatalf("Render = %+v, %v; want one init container", f, err)
				}
				return
			}
			rerr, ok := errors.AsType[*RenderError](err)
			if !ok {
				t.Fatalf("err = %v (%T), want a *RenderError", err, err)
			}
			if rerr.Template != "target" || len(rerr.Problems) == 0 {
				t.Errorf("RenderError %+v", rerr)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant %s...", err, tt.want)
			}
			if f != nil {
				t.Errorf("an invalid render returned a fragment")
			}
		})
	}
}

// TestRenderKeepsParamErrors: an invalid value is a *ParamError naming the
// annotation, not a RenderError: it never reaches the template.
func TestRenderKeepsParamErrors(t *testing.T) {
	tmpl, err := Parse("target.yaml", []byte(renderTarget))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render(map[string]string{"pick": "10"})
	if pe, ok := errors.AsType[*ParamError](err); !ok || pe.Param != "pick" {
		t.Fatalf("err = %v, want a *ParamError for pick", err)
	}
	if _, ok := errors.AsType[*RenderError](err); ok {
		t.Fatalf("a parameter error reported as a render error: %v", err)
	}
}
