package export

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	regv1 "k8s.io/api/admissionregistration/v1"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/fixture"
	"github.com/graftdev/graft/templates"
)

// builtinSet is the built-in templates and the engine's fixtures (agent).
func builtinSet(t *testing.T) *templates.Set {
	t.Helper()
	return fixture.Templates(t)
}

func TestExportWiring(t *testing.T) {
	set := builtinSet(t)
	cfg := fixture.Config()
	cfg.Profiles["lenient"] = inject.Profile{Templates: []string{"agent"}, OnInvalidParams: inject.InvalidUseDefault}
	cfg.Profiles["hostnet"] = inject.Profile{Templates: []string{"agent"}, InjectHostNetwork: true}
	cfg.Profiles["keep"] = inject.Profile{Templates: []string{"agent"}, OnConflict: inject.ConflictKeep}
	cfg.ExcludedNamespaces = []string{"kube-system", "infra"}
	cases := []struct {
		profile     string
		labelValues []string
		validating  []regv1.ValidationAction
		hostNetwork bool // the policies skip hostNetwork Pods
		// validations of the first policy: the parameters, a conflict
		// (onConflict: deny), a parameter CEL cannot record, a record it
		// cannot merge, and the three guarantees (injected, nothing
		// removed, no forged sidecar).
		validations0 int
	}{
		{"enabled", []string{"enabled"}, []regv1.ValidationAction{regv1.Deny}, true, 7},
		{"agent", []string{"agent"}, []regv1.ValidationAction{regv1.Deny}, true, 7},
		{"lenient", []string{"lenient"}, []regv1.ValidationAction{regv1.Warn, regv1.Deny}, true, 1},
		{"hostnet", []string{"hostnet"}, []regv1.ValidationAction{regv1.Deny}, false, 7},
		{"keep", []string{"keep"}, []regv1.ValidationAction{regv1.Deny}, true, 6},
	}
	for _, tc := range cases {
		t.Run(tc.profile, func(t *testing.T) {
			p, err := Export(cfg, set, tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			sel := p.MutatingBinding.Spec.MatchResources.NamespaceSelector.MatchExpressions
			if !slices.Equal(sel[0].Values, tc.labelValues) || !slices.Equal(sel[1].Values, []string{"kube-system", "infra", "graft-system"}) {
				t.Errorf("namespace selector %+v", sel)
			}
			if p.Mutating.Spec.ReinvocationPolicy != regv1.IfNeededReinvocationPolicy {
				t.Errorf("reinvocation %s", p.Mutating.Spec.ReinvocationPolicy)
			}
			var actions []regv1.ValidationAction
			for _, b := range p.Bindings {
				actions = append(actions, b.Spec.ValidationActions...)
			}
			if !slices.Equal(actions, tc.validating) {
				t.Errorf("validating bindings %v, want %v", actions, tc.validating)
			}
			if n := len(p.Validating[0].Spec.Validations); n != tc.validations0 {
				t.Errorf("%d validations in %s, want %d", n, p.Validating[0].Name, tc.validations0)
			}
			skips := slices.ContainsFunc(p.Mutating.Spec.MatchConditions, func(c regv1.MatchCondition) bool { return c.Name == "not-host-network" })
			if skips != tc.hostNetwork {
				t.Errorf("skips hostNetwork Pods: %t, want %t", skips, tc.hostNetwork)
			}
		})
	}
	// The default profile also answers to the label value "enabled".
	cfg.DefaultProfile = "agent"
	p, err := Export(cfg, set, "agent")
	if err != nil {
		t.Fatal(err)
	}
	if v := p.MutatingBinding.Spec.MatchResources.NamespaceSelector.MatchExpressions[0].Values; !slices.Equal(v, []string{"agent", "enabled"}) {
		t.Errorf("default profile selects %v", v)
	}
}

func TestExportRefusesProfiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Two templates a Pod may get together that inject one volume name.
	write("twin.yaml", "name: twin\ndescription: Another agent volume.\nfragment: |\n  volumes:\n    - {name: graft-agent-run, emptyDir: {}}\n")
	// One export cannot compile.
	write("picky.yaml", "name: picky\ndescription: Tests a string.\nparameters:\n  - {name: s, type: string, default: x}\n"+
		"fragment: |\n  annotations:\n    a: b\n  {{- if .s }}\n    c: d\n  {{- end }}\n")
	own, err := templates.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	set := builtinSet(t).With(own)
	cfg := inject.DefaultConfig()
	cfg.Profiles["twins"] = inject.Profile{Templates: []string{"agent"}, AllowedTemplates: []string{"agent", "twin"}}
	cfg.Profiles["picky"] = inject.Profile{Templates: []string{"agent", "picky"}}
	cases := []struct{ profile, want string }{
		{"twins", `profile twins: templates agent and twin both inject volume "graft-agent-run"`},
		{"picky", "template picky (picky.yaml), fragment line 3: a condition on parameter s of type string"},
		{"nope", `unknown profile "nope"`},
	}
	for _, tc := range cases {
		_, err := Export(cfg, set, tc.profile)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.profile, err, tc.want)
		}
	}
	if _, err := Export(cfg, set, "nope"); !errors.Is(err, inject.ErrUnknownProfile) {
		t.Errorf("unknown profile: %v is not inject.ErrUnknownProfile", err)
	}
}
