package inject

import (
	"errors"
	"strings"
	"testing"

	"github.com/graftdev/graft/templates"
)

func TestPodSecurity(t *testing.T) {
	redirect := map[string]string{"graft.dev/mesh-proxy.trafficRedirect": "init-container"}
	e := newTestEngine(t, Config{DefaultProfile: "mesh", Profiles: map[string]Profile{
		"mesh":    {Templates: []string{"mesh-proxy"}},
		"lenient": {Templates: []string{"mesh-proxy"}, OnInvalidParams: InvalidUseDefault},
		"iptables": {Templates: []string{"mesh-proxy"}, PodSecurity: PodSecurity{MaxLevel: templates.LevelPrivileged},
			Params: map[string]map[string]string{"mesh-proxy": {"trafficRedirect": "init-container"}}},
		"open": {Templates: []string{"mesh-proxy"}, PodSecurity: PodSecurity{MaxLevel: templates.LevelPrivileged}},
	}})
	tests := []struct {
		name        string
		profile     string
		annotations map[string]string
		namespace   templates.Level
		decision    Decision
		reason      Reason
		// want is a substring of the deny message or of a warning.
		want string
		// proxyInit says whether the iptables init container is injected.
		proxyInit bool
	}{
		{"a value above the profile's maxLevel", "mesh", redirect, "", DecisionDeny, ReasonPodSecurity,
			`annotation graft.dev/mesh-proxy.trafficRedirect="init-container": template mesh-proxy with trafficRedirect="init-container" needs Pod Security level privileged, and profile "mesh" allows up to restricted (podSecurity.maxLevel)`, false},
		{"the same, whatever the namespace", "mesh", redirect, templates.LevelPrivileged, DecisionDeny, ReasonPodSecurity,
			`profile "mesh" allows up to restricted`, false},
		{"the same under onInvalidParams: default", "lenient", redirect, "", DecisionInject, ReasonNone,
			`graft: annotation graft.dev/mesh-proxy.trafficRedirect="init-container": template mesh-proxy with trafficRedirect="i`, false},
		{"a value the profile allows, namespace unknown", "open", redirect, "", DecisionInject, ReasonNone, "", true},
		{"a value the profile allows, privileged namespace", "open", redirect, templates.LevelPrivileged, DecisionInject, ReasonNone, "", true},
		{"a value the profile allows, baseline namespace", "open", redirect, templates.LevelBaseline, DecisionDeny, ReasonPodSecurity,
			`graft refuses this Pod: template mesh-proxy with trafficRedirect="init-container" needs Pod Security level privileged, and its namespace enforces baseline (label pod-security.kubernetes.io/enforce)`, false},
		{"a value the profile allows, restricted namespace", "open", redirect, templates.LevelRestricted, DecisionDeny, ReasonPodSecurity,
			`its namespace enforces restricted`, false},
		{"the profile's defaults in a restricted namespace", "open", nil, templates.LevelRestricted, DecisionInject, ReasonNone, "", false},
		{"the profile's own value in a baseline namespace", "iptables", nil, templates.LevelBaseline, DecisionDeny, ReasonPodSecurity,
			`template mesh-proxy with trafficRedirect="init-container" needs Pod Security level privileged, and its namespace enforces baseline`, false},
		{"the profile's own value in a privileged namespace", "iptables", nil, templates.LevelPrivileged, DecisionInject, ReasonNone, "", true},
		{"a Pod asks for less than the profile's value", "iptables", map[string]string{"graft.dev/mesh-proxy.trafficRedirect": "cni"},
			templates.LevelRestricted, DecisionInject, ReasonNone, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			review := podReviewWith(tt.annotations)
			resp, res, err := e.Admit(nil, review, Options{Profile: tt.profile, PodSecurity: tt.namespace})
			if err != nil {
				t.Fatal(err)
			}
			if res.Decision != tt.decision || res.Reason != tt.reason {
				t.Fatalf("%v (%v), want %v (%v): %s", res.Decision, res.Reason, tt.decision, tt.reason, resp)
			}
			msgs := strings.Join(append(responseWarnings(resp), responseMessage(t, resp)), "\n")
			if tt.want == "" && msgs != "" || !strings.Contains(msgs, tt.want) {
				t.Fatalf("messages %q, want %q", msgs, tt.want)
			}
			if tt.decision != DecisionInject {
				return
			}
			pod := decodeGeneric(t, applyResponse(t, review, resp))
			if got := podHas(pod, "graft-proxy-init"); got != tt.proxyInit {
				t.Fatalf("graft-proxy-init injected: %v, want %v", got, tt.proxyInit)
			}
		})
	}
}

func TestPodSecurityConfig(t *testing.T) {
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{Profiles: map[string]Profile{"enabled": {Templates: []string{"mesh-proxy"},
		Params: map[string]map[string]string{"mesh-proxy": {"trafficRedirect": "init-container"}}}}}, set)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `template mesh-proxy with trafficRedirect="init-container" needs Pod Security level privileged, and profile "enabled" allows up to restricted`) {
		t.Fatalf("a profile whose own value needs more than its maxLevel: %v", err)
	}
	_, err = New(Config{Profiles: map[string]Profile{"enabled": {Templates: []string{"mesh-proxy"},
		PodSecurity: PodSecurity{MaxLevel: "root"}}}}, set)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `podSecurity.maxLevel: pod security level "root"`) {
		t.Fatalf("an unknown level: %v", err)
	}
}
