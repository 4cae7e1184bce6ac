package inject

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// guardConfig has a profile that locks the agent's image and log level,
// and one that admits images of one registry only.
func guardConfig() Config {
	return Config{DefaultProfile: "locked", Profiles: map[string]Profile{
		"locked": {Templates: []string{"agent"}, LockedParams: []string{"agent.image", "agent.logLevel"},
			Params: map[string]map[string]string{"agent": {"logLevel": "warn"}}},
		"lenient": {Templates: []string{"agent"}, LockedParams: []string{"*.image"}, OnInvalidParams: InvalidUseDefault},
		"registry": {Templates: []string{"agent"}, AllowedTemplates: []string{"agent", "otel-agent"},
			AllowedImages: []string{"ghcr.io/graftdev/", "docker.io/otel/"}},
		"repository": {Templates: []string{"agent"}, AllowedImages: []string{"ghcr.io/graftdev/agent"}},
	}}
}

func TestLockedParamsAndAllowedImages(t *testing.T) {
	e := newTestEngine(t, guardConfig())
	tests := []struct {
		name        string
		profile     string
		annotations map[string]string
		decision    Decision
		// want is a substring of the deny message or of a warning.
		want string
	}{
		{"a locked parameter changed", "locked", map[string]string{"graft.dev/agent.image": "evil.example/agent:1"},
			DecisionDeny, `annotation graft.dev/agent.image="evil.example/agent:1": parameter image of template agent is locked by profile "locked"`},
		{"a locked parameter the profile sets", "locked", map[string]string{"graft.dev/agent.logLevel": "debug"},
			DecisionDeny, `parameter logLevel of template agent is locked`},
		{"a locked parameter set to its value", "locked", map[string]string{"graft.dev/agent.logLevel": "warn"},
			DecisionInject, ""},
		{"a locked parameter at its default", "locked", map[string]string{"graft.dev/agent.image": "ghcr.io/graftdev/agent:1.0.0"},
			DecisionInject, ""},
		{"an unlocked parameter", "locked", map[string]string{"graft.dev/agent.cpu": "100m"},
			DecisionInject, ""},
		{"a locked parameter under onInvalidParams: default", "lenient", map[string]string{"graft.dev/agent.image": "evil.example/agent:1"},
			DecisionInject, `graft: annotation graft.dev/agent.image="evil.example/agent:1": parameter image of template agent is locked by profi`},
		{"an allowed image", "registry", map[string]string{"graft.dev/agent.image": "ghcr.io/graftdev/agent:2.0.0"},
			DecisionInject, ""},
		{"an image outside the prefixes", "registry", map[string]string{"graft.dev/agent.image": "ghcr.io/graftdev-copy/agent:1"},
			DecisionDeny, `annotation graft.dev/agent.image="ghcr.io/graftdev-copy/agent:1": template agent: container graft-agent: image "ghcr.io/graftdev-copy/agent:1" is not allowed by the profile (allowedImages: ghcr.io/graftdev/, docker.io/otel/)`},
		{"an allowed template with an allowed image", "registry", map[string]string{"graft.dev/templates": "otel-agent"},
			DecisionInject, ""},
		// An entry matches at a boundary: '/', ':' or '@'.
		{"another tag of the allowed repository", "repository", map[string]string{"graft.dev/agent.image": "ghcr.io/graftdev/agent:2.0.0"},
			DecisionInject, ""},
		{"a digest of the allowed repository", "repository", map[string]string{"graft.dev/agent.image": "ghcr.io/graftdev/agent@sha256:" + strings.Repeat("ab", 32)},
			DecisionInject, ""},
		{"a repository the allowed one is a prefix of", "repository", map[string]string{"graft.dev/agent.image": "ghcr.io/graftdev/agent-evil:1"},
			DecisionDeny, `image "ghcr.io/graftdev/agent-evil:1" is not allowed by the profile (allowedImages: ghcr.io/graftdev/agent)`},
		// No image that is not a reference, whatever allowedImages lists.
		{"a path out of the allowed registry", "registry", map[string]string{"graft.dev/agent.image": "ghcr.io/graftdev/../evil/agent:1"},
			DecisionDeny, `annotation graft.dev/agent.image="ghcr.io/graftdev/../evil/agent:1": must be a container image reference: it contains ".."`},
		{"an empty path segment", "repository", map[string]string{"graft.dev/agent.image": "ghcr.io/graftdev/agent//x:1"},
			DecisionDeny, `must be a container image reference: it has an empty path segment`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			review := podReviewWith(tt.annotations)
			resp, res, err := e.Admit(nil, review, Options{Profile: tt.profile})
			if err != nil {
				t.Fatal(err)
			}
			if res.Decision != tt.decision {
				t.Fatalf("decision %v (%v), want %v: %s", res.Decision, res.Reason, tt.decision, resp)
			}
			if tt.decision == DecisionDeny && res.Reason != ReasonInvalidParams {
				t.Errorf("reason %v, want %v", res.Reason, ReasonInvalidParams)
			}
			msgs := strings.Join(append(responseWarnings(resp), responseMessage(t, resp)), "\n")
			if tt.want == "" && msgs != "" || !strings.Contains(msgs, tt.want) {
				t.Fatalf("messages %q, want %q", msgs, tt.want)
			}
			if tt.decision == DecisionInject {
				pod := decodeGeneric(t, applyResponse(t, review, resp))
				eachInit(pod, func(c map[string]any) {
					if img, _ := c["image"].(string); strings.Contains(img, "evil.example") {
						t.Fatalf("a locked value reached the Pod: %s", img)
					}
				})
			}
		})
	}
}

func TestGuardsValidateConfig(t *testing.T) {
	set := testTemplates(t)
	profile := func(p Profile) Config {
		if p.Templates == nil {
			p.Templates = []string{"agent"}
		}
		return Config{Profiles: map[string]Profile{"enabled": p}}
	}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"a lock without a dot", profile(Profile{LockedParams: []string{"agent"}}), `lockedParams: "agent": want <template>.<param>`},
		{"a lock with an empty part", profile(Profile{LockedParams: []string{"agent."}}), `want <template>.<param>`},
		{"a lock of a template never injected", profile(Profile{LockedParams: []string{"mesh-proxy.image"}}), `the profile never injects template mesh-proxy`},
		{"a lock of an unknown parameter", profile(Profile{LockedParams: []string{"agent.colour"}}), `template agent has no parameter "colour"`},
		{"a lock of any template", profile(Profile{LockedParams: []string{"*.colour"}}), ""},
		{"a lock listed twice", profile(Profile{LockedParams: []string{"agent.image", "agent.image"}}), `listed twice`},
		{"an empty image prefix", profile(Profile{AllowedImages: []string{""}}), `allowedImages: "": want an image reference, or one ending in '/', ':' or '@': it is empty`},
		{"a wildcard in an entry", profile(Profile{AllowedImages: []string{"ghcr.io/graftdev/*"}}), `allowedImages: "ghcr.io/graftdev/*": want an image reference`},
		{"an entry with '..'", profile(Profile{AllowedImages: []string{"ghcr.io/../"}}), `allowedImages: "ghcr.io/../": want an image reference, or one ending in '/', ':' or '@': it contains ".."`},
		{"an entry ending at a boundary", profile(Profile{AllowedImages: []string{"ghcr.io/graftdev/agent:"}}), ""},
		{"the profile's own image is not allowed", profile(Profile{AllowedImages: []string{"example.com/"}}),
			`image "ghcr.io/graftdev/agent:1.0.0" is not allowed by the profile`},
		{"an allowed template's image is not allowed", profile(Profile{AllowedTemplates: []string{"agent", "otel-agent"}, AllowedImages: []string{"ghcr.io/"}}),
			`allowed template otel-agent: template otel-agent: container graft-otel-agent: image "docker.io/otel/`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg, set)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrConfig mentioning %q", err, tt.want)
			}
		})
	}
	if _, err := New(DefaultConfig(), set); err != nil {
		t.Fatalf("the built-in configuration: %v", err)
	}
}

// TestBuiltinProfilesLockImagesAndInterception: no Pod annotation changes
// the image of a built-in profile's sidecar, whichever template it adds,
// nor what decides whether the sidecars do their job: the proxy's
// redirection and its excluded ports, where the agents send what they
// collect, the Vault server the secrets agent logs in to.
func TestBuiltinProfilesLockImagesAndInterception(t *testing.T) {
	e := newTestEngine(t, DefaultConfig())
	params := []string{"image", "trafficRedirect", "excludeInboundPorts", "excludeOutboundPorts", "endpoint", "tls", "address"}
	checked := 0
	for _, profile := range e.Profiles() {
		ps, _ := e.profile(profile)
		for _, tmpl := range ps.allowed {
			for _, p := range params {
				if _, ok := tmpl.Param(p); ok {
					checked++
					if !ps.locked(tmpl.Name, p) {
						t.Errorf("profile %s does not lock %s.%s", profile, tmpl.Name, p)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no built-in template declares any of the parameters: the test checks nothing")
	}
	for _, tt := range []struct {
		name        string
		annotations map[string]string
		want        string // the deny message's rule; "" to inject
	}{
		{"redirection off", map[string]string{"graft.dev/mesh-proxy.trafficRedirect": "none"},
			`parameter trafficRedirect of template mesh-proxy is locked by profile "enabled"`},
		{"an outbound port past the proxy", map[string]string{"graft.dev/mesh-proxy.excludeOutboundPorts": "443"},
			`parameter excludeOutboundPorts of template mesh-proxy is locked by profile "enabled"`},
		{"an inbound port past the proxy", map[string]string{"graft.dev/mesh-proxy.excludeInboundPorts": "8080"},
			`parameter excludeInboundPorts of template mesh-proxy is locked by profile "enabled"`},
		{"telemetry elsewhere", map[string]string{"graft.dev/templates": "mesh-proxy,otel-agent", "graft.dev/otel-agent.endpoint": "collector.evil:4317"},
			`parameter endpoint of template otel-agent is locked by profile "enabled"`},
		{"logs elsewhere", map[string]string{"graft.dev/templates": "log-shipper", "graft.dev/log-shipper.endpoint": "fluentd.evil:24224"},
			`parameter endpoint of template log-shipper is locked by profile "enabled"`},
		{"another Vault", map[string]string{"graft.dev/templates": "secrets-agent", "graft.dev/secrets-agent.address": "http://vault.evil:8200"},
			`parameter address of template secrets-agent is locked by profile "enabled"`},
		{"a parameter left to the app", map[string]string{"graft.dev/mesh-proxy.logLevel": "debug"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, res, err := e.Admit(nil, podReviewWith(tt.annotations), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if res.Decision != DecisionInject {
					t.Fatalf("decision %v (%s), want inject", res.Decision, responseMessage(t, resp))
				}
				return
			}
			if msg := responseMessage(t, resp); res.Decision != DecisionDeny || !strings.Contains(msg, tt.want) {
				t.Fatalf("decision %v, message %q; want deny with %q", res.Decision, msg, tt.want)
			}
		})
	}
}

// responseMessage is the status message of a response, "" when none.
func responseMessage(t testing.TB, resp []byte) string {
	t.Helper()
	var r struct {
		Response struct {
			Status struct {
				Message string `json:"message"`
			} `json:"status"`
		} `json:"response"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		t.Fatalf("response not JSON: %v", err)
	}
	return r.Response.Status.Message
}
