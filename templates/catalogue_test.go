package templates_test

import (
	"slices"
	"testing"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

// TestDefaultConfigCoversCatalogue ties the default profiles to the
// built-in templates: every template has a profile of its own name, and
// every profile names only templates that exist.
func TestDefaultConfigCoversCatalogue(t *testing.T) {
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	cfg := inject.DefaultConfig()
	for _, name := range set.Names() {
		p, ok := cfg.Profiles[name]
		if !ok || !slices.Equal(p.Templates, []string{name}) {
			t.Errorf("template %s has no profile injecting just it", name)
		}
	}
	if got := cfg.Profiles["enabled"].Templates; !slices.Equal(got, []string{"mesh-proxy"}) {
		t.Errorf("profile enabled injects %v, want [mesh-proxy]", got)
	}
	for pname, p := range cfg.Profiles {
		for _, name := range slices.Concat(p.Templates, p.AllowedTemplates) {
			if _, ok := set.Get(name); !ok {
				t.Errorf("profile %s names unknown template %s", pname, name)
			}
		}
		if len(p.AllowedTemplates) > 0 {
			for _, name := range p.Templates {
				if !slices.Contains(p.AllowedTemplates, name) {
					t.Errorf("profile %s injects %s but does not allow it", pname, name)
				}
			}
		}
	}
	if _, err := inject.New(cfg, set); err != nil {
		t.Fatalf("the engine refuses the default config: %v", err)
	}
}
