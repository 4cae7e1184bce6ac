package inject

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/templates"
)

// restrictedSecurityContext is a container securityContext, as a YAML flow
// mapping, that meets Pod Security restricted: test templates use it so
// that profiles at the default podSecurity.maxLevel accept them.
const restrictedSecurityContext = `{allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}`

// renderSet passes lint: every default renders a valid fragment, and lint
// cannot try every string. Some strings a Pod may set render a fragment
// no API server accepts: issue 12's `_X` name (with logLevel a free
// string; as an enum, lint would refuse the set at load), a memory value
// that is no quantity, a sidecar name that is no DNS label or that
// another template injects.
var renderSet = fstest.MapFS{
	"agent.yaml": {Data: []byte(`name: agent
description: an agent whose name depends on its log level.
parameters:
  - {name: logLevel, type: string, default: info, description: l}
  - {name: memory, type: string, default: 64Mi, description: m}
fragment: |
  initContainers:
    - name: graft-agent{{ if eq .logLevel "debug" }}_X{{ end }}
      image: example.com/agent:1
      restartPolicy: Always
      args: [{{ printf "--log-level=%s" .logLevel | quote }}]
      resources: {requests: {memory: {{ .memory | quote }}}}
      securityContext: ` + restrictedSecurityContext + `
`)},
	"helper.yaml": {Data: []byte(`name: helper
description: a sidecar whose name a Pod may set.
parameters:
  - {name: sidecarName, type: string, default: graft-helper, description: n}
fragment: |
  initContainers:
    - {name: {{ .sidecarName | quote }}, image: example.com/helper:1, restartPolicy: Always,
       securityContext: ` + restrictedSecurityContext + `}
`)},
}

func renderEngine(t *testing.T) *Engine {
	t.Helper()
	set, err := templates.LoadFS(renderSet)
	if err != nil {
		t.Fatal(err)
	}
	both := []string{"agent", "helper"}
	e, err := New(Config{DefaultProfile: "strict", Profiles: map[string]Profile{
		"strict":  {Templates: both},
		"lenient": {Templates: both, OnInvalidParams: InvalidUseDefault},
		// narrow's own value for helper clashes with agent, which a Pod
		// may add with graft.dev/templates.
		"narrow": {Templates: []string{"helper"}, AllowedTemplates: both,
			Params: map[string]map[string]string{"helper": {"sidecarName": "graft-agent"}}},
	}}, set)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// podReviewWith is a CREATE review of a one-container Pod carrying annotations.
func podReviewWith(annotations map[string]string) []byte {
	pod := map[string]any{
		"metadata": map[string]any{"name": "web", "annotations": annotations},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "example.com/app:1"}}},
	}
	return corpus.Marshal("", "u-render", "CREATE", "shop", pod)
}

func TestInvalidRenderIsAnsweredPerProfile(t *testing.T) {
	tests := []struct {
		name        string
		profile     string
		annotations map[string]string
		reason      Reason
		// deny is the status message's prefix when denied.
		deny string
		// warnings are prefixes of the response's warnings, and inits the
		// init containers of the patched Pod, when injected.
		warnings []string
		inits    []string
	}{
		{
			name: "valid values", profile: "strict",
			annotations: map[string]string{"graft.dev/agent.logLevel": "warn", "graft.dev/helper.sidecarName": "graft-aid"},
			inits:       []string{"graft-agent", "graft-aid"},
		},
		{
			name: "a value that renders an invalid name", profile: "strict",
			annotations: map[string]string{"graft.dev/agent.logLevel": "debug"},
			reason:      ReasonInvalidParams,
			deny:        `annotation graft.dev/agent.logLevel="debug": template agent: initContainers[graft-agent_X]: name: a lowercase RFC 1123 label`,
		},
		{
			name: "only values that differ from the defaults are named", profile: "strict",
			annotations: map[string]string{"graft.dev/agent.logLevel": "debug", "graft.dev/agent.memory": "64Mi", "graft.dev/helper.sidecarName": "graft-aid"},
			reason:      ReasonInvalidParams,
			deny:        `annotation graft.dev/agent.logLevel="debug": template agent: initContainers[graft-agent_X]`,
		},
		{
			name: "a string that is no quantity", profile: "strict",
			annotations: map[string]string{"graft.dev/agent.memory": "lots"},
			reason:      ReasonInvalidParams,
			deny:        `annotation graft.dev/agent.memory="lots": template agent: rendered fragment: initContainers[0]: quantities must match the regular expression`,
		},
		{
			name: "two values of one template", profile: "strict",
			annotations: map[string]string{"graft.dev/agent.logLevel": "debug", "graft.dev/agent.memory": "1Gi"},
			reason:      ReasonInvalidParams,
			deny:        `annotations graft.dev/agent.logLevel="debug", graft.dev/agent.memory="1Gi": template agent: initContainers[graft-agent_X]`,
		},
		{
			name: "a value that names another template's container", profile: "strict",
			annotations: map[string]string{"graft.dev/helper.sidecarName": "graft-agent"},
			reason:      ReasonInvalidParams,
			deny:        `annotation graft.dev/helper.sidecarName="graft-agent": templates agent and helper both inject container "graft-agent"`,
		},
		{
			name: "a selection that clashes with the profile's values", profile: "narrow",
			annotations: map[string]string{"graft.dev/templates": "agent,helper"},
			reason:      ReasonTemplateSelection,
			deny:        `annotation graft.dev/templates="agent,helper": templates agent and helper both inject container "graft-agent"`,
		},
		{
			name: "default mode: the defaults, with a warning", profile: "lenient",
			annotations: map[string]string{"graft.dev/agent.logLevel": "debug", "graft.dev/helper.sidecarName": "graft-aid"},
			warnings:    []string{`graft: annotation graft.dev/agent.logLevel="debug" ignored: template agent: initContainers[graft-agent_X]: name:`},
			inits:       []string{"graft-agent", "graft-aid"},
		},
		{
			name: "default mode: each failing template falls back", profile: "lenient",
			annotations: map[string]string{"graft.dev/agent.memory": "lots", "graft.dev/helper.sidecarName": "Helper"},
			warnings: []string{
				`graft: annotation graft.dev/agent.memory="lots" ignored: template agent: rendered fragment:`,
				`graft: annotation graft.dev/helper.sidecarName="Helper" ignored: template helper: initContainers[Helper]: name:`,
			},
			inits: []string{"graft-agent", "graft-helper"},
		},
	}
	e := renderEngine(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			review := podReviewWith(tt.annotations)
			for range 2 { // the second answer comes from the plan cache
				out, res, err := e.Admit(nil, review, Options{Profile: tt.profile})
				if err != nil {
					t.Fatal(err)
				}
				var rv struct {
					Response struct {
						Allowed bool `json:"allowed"`
						Status  struct {
							Code    int    `json:"code"`
							Message string `json:"message"`
						} `json:"status"`
						Warnings []string `json:"warnings"`
					} `json:"response"`
				}
				if err := json.Unmarshal(out, &rv); err != nil {
					t.Fatal(err)
				}
				r := rv.Response
				if tt.deny != "" {
					if r.Allowed || r.Status.Code != 400 || !strings.HasPrefix(r.Status.Message, tt.deny) {
						t.Fatalf("allowed=%v code=%d message %q\nwant denied, 400, %q...", r.Allowed, r.Status.Code, r.Status.Message, tt.deny)
					}
					if res.Decision != DecisionDeny || res.Reason != tt.reason {
						t.Errorf("result %v/%v, want deny/%v", res.Decision, res.Reason, tt.reason)
					}
					continue
				}
				if !r.Allowed || res.Decision != DecisionInject {
					t.Fatalf("not injected: %s", out)
				}
				if len(r.Warnings) != len(tt.warnings) {
					t.Fatalf("warnings %q, want %d", r.Warnings, len(tt.warnings))
				}
				for i, w := range tt.warnings {
					if !strings.HasPrefix(r.Warnings[i], w) {
						t.Errorf("warning %q\nwant %q...", r.Warnings[i], w)
					}
				}
				if got := initNames(t, applyResponse(t, review, out)); strings.Join(got, ",") != strings.Join(tt.inits, ",") {
					t.Errorf("init containers %v, want %v", got, tt.inits)
				}
			}
		})
	}
	// What the cache holds for these Pods are denials and valid plans.
	for key, ent := range e.impl.plans.m {
		if ent.plan == nil {
			continue
		}
		for _, el := range append(append([]element(nil), ent.plan.inits...), ent.plan.sidecars...) {
			if errs := validation.IsDNS1123Label(el.name); len(errs) > 0 {
				t.Errorf("plan cached for %q injects %q: %v", key, el.name, errs)
			}
		}
	}
}

func initNames(t *testing.T, podJSON []byte) []string {
	t.Helper()
	var pod struct {
		Spec struct {
			InitContainers []struct {
				Name string `json:"name"`
			} `json:"initContainers"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(podJSON, &pod); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range pod.Spec.InitContainers {
		out = append(out, c.Name)
	}
	return out
}
