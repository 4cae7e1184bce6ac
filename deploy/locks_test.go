package deploy

import (
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

// TestShippedConfigurationsLockWhatBaseLocks: every configuration deploy/
// ships (base, each example, each overlay as kustomize builds it, the
// chart with its defaults and with each ci values file) locks, in every
// revision, in every profile named like one of base's, at least the
// parameters base's profile locks, for every template either may inject.
// A revision's profile replaces the top level's whole, so the revisions
// example once dropped the locks of every profile it redefined, and
// following the canary docs unlocked every sidecar image.
func TestShippedConfigurationsLockWhatBaseLocks(t *testing.T) {
	base := loadConfig(t)
	// What base locks is what the built-in profiles lock.
	for name, p := range base.Profiles {
		if !slices.Equal(p.LockedParams, inject.BuiltinLocks()) {
			t.Errorf("base/config.yaml: profile %s locks %v, want inject.BuiltinLocks() %v", name, p.LockedParams, inject.BuiltinLocks())
		}
	}
	shipped := map[string]config.File{"base/config.yaml": loadFileConfig(t)}
	examples, err := filepath.Glob("examples/*/config.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no example configurations: %v", err)
	}
	for _, path := range examples {
		f, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		shipped[path] = f
	}
	for _, v := range variants() {
		out := kustomize(t, v.dir(t))
		cm := one[corev1.ConfigMap](t, out, "ConfigMap", "graft-config")
		f, err := config.Parse("config.yaml", []byte(cm.Data["config.yaml"]))
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		shipped["kustomize "+v.name] = f
	}
	// base against itself, each example, base and each overlay as built,
	// each with base's profiles.
	checkLocks(t, base, shipped, (2+len(examples)+len(variants()))*len(base.Profiles))

	t.Run("chart", func(t *testing.T) {
		h := newHelm(t)
		charts := map[string]config.File{}
		for _, v := range append([]chartVariant{{name: "defaults"}}, chartVariants(t, "")...) {
			out := h.render(t, v.args...)
			fullname := out.find("MutatingWebhookConfiguration")[0].name
			charts["chart "+v.name] = renderedConfig(t, out, fullname)
		}
		// The defaults and the revisions ci values hold base's profiles.
		checkLocks(t, base, charts, 2*len(base.Profiles))
	})
}

// checkLocks fails t for each profile of shipped named like one of
// base's that, in some revision, leaves a parameter base's profile locks
// unlocked, for a built-in template either may inject; and if fewer than
// min profiles were compared.
func checkLocks(t *testing.T, base inject.Config, shipped map[string]config.File, min int) {
	t.Helper()
	builtin, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for what, f := range shipped {
		for _, rev := range f.RevisionNames() {
			cfg, _ := f.EngineConfig(rev)
			for name, p := range cfg.Profiles {
				want, ok := base.Profiles[name]
				if !ok {
					continue // a profile of one's own
				}
				compared++
				tns := slices.Concat(want.Templates, want.AllowedTemplates, p.Templates, p.AllowedTemplates)
				slices.Sort(tns)
				for _, tn := range slices.Compact(tns) {
					tmpl, ok := builtin.Get(tn)
					if !ok {
						continue
					}
					for _, prm := range tmpl.Params {
						if want.Locks(tn, prm.Name) && !p.Locks(tn, prm.Name) {
							t.Errorf("%s: revision %s: profile %s does not lock %s.%s, which deploy/base/config.yaml locks",
								what, rev, name, tn, prm.Name)
						}
					}
				}
			}
		}
	}
	if compared < min {
		t.Errorf("compared %d profiles, want at least %d: the test checks less than it says", compared, min)
	}
}
