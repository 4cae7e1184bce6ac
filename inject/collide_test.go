package inject

import (
	"strings"
	"testing"
)

// TestCollisions: each kind of collision of what a template adds with
// what the Pod's own containers use is a conflict, denied or (keep) the
// template left out, with a message naming both sides; none is one once
// graft injected the template (reinvocation, a second admission).
func TestCollisions(t *testing.T) {
	cfg := goldenConfig()
	cfg.Profiles["mesh-keep"] = Profile{Templates: []string{"mesh-proxy"}, OnConflict: ConflictKeep}
	e := newTestEngine(t, cfg)
	web := func(p map[string]any) map[string]any {
		return p["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	}
	set := func(key string, v any) func(map[string]any) {
		return func(p map[string]any) { web(p)[key] = v }
	}
	ports := func(ps ...map[string]any) func(map[string]any) {
		l := make([]any, len(ps))
		for i, p := range ps {
			l[i] = p
		}
		return set("ports", l)
	}
	tests := []struct {
		name    string
		profile string
		pod     func(map[string]any)
		// deny is a substring of the denial; warn of the warning under keep.
		deny, warn string
	}{
		{"port number", "mesh-proxy", ports(map[string]any{"containerPort": 15021}), `container "web" already uses port 15021/TCP, which template mesh-proxy's container "graft-proxy" opens`, ""},
		{"port number, keep", "mesh-keep", ports(map[string]any{"containerPort": 15021, "protocol": "TCP"}), "", `graft: template mesh-proxy not injected: container "web" already uses port 15021/TCP`},
		{"port number, SCTP", "mesh-proxy", ports(map[string]any{"containerPort": 15021, "protocol": "SCTP"}), "", ""},
		{"port name", "mesh-proxy", ports(map[string]any{"containerPort": 8081, "name": "proxy-health"}), `container "web" already names a port "proxy-health", as template mesh-proxy's container "graft-proxy" does`, ""},
		{"an init container's port", "mesh-proxy", func(p map[string]any) {
			appendTo(p, "initContainers", map[string]any{"name": "setup", "image": "s:1", "ports": []any{map[string]any{"containerPort": 15021}}})
		}, `container "setup" already uses port 15021/TCP`, ""},
		{"uid of a container", "mesh-proxy", set("securityContext", map[string]any{"runAsUser": 1337}), `container "web" runs as uid 1337, which template mesh-proxy reserves for its container "graft-proxy"`, ""},
		{"uid of the Pod", "mesh-proxy", func(p map[string]any) {
			p["spec"].(map[string]any)["securityContext"] = map[string]any{"runAsUser": 1337}
		}, `container "web" runs as uid 1337 (the Pod's securityContext.runAsUser)`, ""},
		{"another uid", "mesh-proxy", set("securityContext", map[string]any{"runAsUser": 1338, "runAsNonRoot": true}), "", ""},
		{"an uid not reserved", "agent", set("securityContext", map[string]any{"runAsUser": 65532}), "", ""},
		{"env var", "agent", set("env", []any{map[string]any{"name": "GRAFT_AGENT_ADDR", "value": "x"}}), `container "web" already sets env var "GRAFT_AGENT_ADDR", which template agent sets in every app container`, ""},
		{"env var, keep", "keep", set("env", []any{map[string]any{"name": "GRAFT_AGENT_ADDR", "value": "x"}}), "", `container "web" already sets env var "GRAFT_AGENT_ADDR"`},
		{"overridable env var", "otel-agent", set("env", []any{map[string]any{"name": "OTEL_TRACES_SAMPLER", "value": "always_on"}}), "", ""},
		{"graft's own otel var", "otel-agent", set("env", []any{map[string]any{"name": "GRAFT_OTEL_POD_NAME", "value": "x"}}), `already sets env var "GRAFT_OTEL_POD_NAME"`, ""},
		{"mount path", "agent", set("volumeMounts", []any{map[string]any{"name": "config", "mountPath": "/var/run/graft-agent"}}), `container "web" already mounts volume "config" at /var/run/graft-agent, where template agent mounts volume "graft-agent-run"`, ""},
		{"mount of graft's volume at graft's path", "agent", set("volumeMounts", []any{map[string]any{"name": "graft-agent-run", "mountPath": "/var/run/graft-agent"}}), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := twoContainerPod(tt.pod)
			review := podReview(pod, "collide")
			o := Options{Profile: tt.profile}
			resp, res, err := e.Admit(nil, review, o)
			if err != nil {
				t.Fatal(err)
			}
			if tt.deny != "" {
				if res.Decision != DecisionDeny || res.Reason != ReasonConflict || !strings.Contains(responseMessage(t, resp), tt.deny) {
					t.Fatalf("%v (%v) %q, want denied for a conflict with %q", res.Decision, res.Reason, responseMessage(t, resp), tt.deny)
				}
				return
			}
			if res.Decision != DecisionInject {
				t.Fatalf("%v (%v): %s", res.Decision, res.Reason, resp)
			}
			warnings := strings.Join(responseWarnings(resp), "\n")
			if tt.warn == "" && warnings != "" || !strings.Contains(warnings, tt.warn) {
				t.Fatalf("warnings %q, want %q", warnings, tt.warn)
			}
			patched := decodeGeneric(t, applyResponse(t, review, resp))
			requireNoPatch(t, e, o, patched, "after the first admission")
			// A container another mutator adds later is an app container
			// like the others, and graft's own are not colliding with
			// themselves.
			appendTo(patched, "containers", map[string]any{"name": "late", "image": "l:1"})
			again := admitGeneric(t, e, o, patched)
			requireNoPatch(t, e, o, again, "after reinvocation")
		})
	}
}
