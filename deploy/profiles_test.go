package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/registration"
	"github.com/graftdev/graft/templates"
)

// loadFileConfig reads the shipped config.yaml as `graft serve --config`
// does: strictly, engine profiles and server settings.
func loadFileConfig(t *testing.T) config.File {
	t.Helper()
	f, err := config.Load("base/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// loadConfig returns the engine part of the shipped config.yaml.
func loadConfig(t *testing.T) inject.Config {
	t.Helper()
	return loadFileConfig(t).Config
}

// shutdownSettings are graft's drain delay and shutdown grace with the
// shipped config and the Deployment's args, defaults filled in.
func shutdownSettings(t *testing.T, args []string) (drainDelay, grace time.Duration) {
	t.Helper()
	s := loadFileConfig(t).Server
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--drain-delay="); ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("%s: %v", a, err)
			}
			s.DrainDelay = config.Duration{Duration: d}
		}
	}
	if err := s.Default(); err != nil {
		t.Fatal(err)
	}
	return s.DrainDelay.Duration, s.ShutdownGrace.Duration
}

// TestConfigIsValid: the shipped configuration and templates are accepted
// by the engine graft serves with.
func TestConfigIsValid(t *testing.T) {
	cfg := loadConfig(t)
	set, err := templates.LoadDir("base/templates")
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range cfg.Profiles {
		for _, tpl := range p.Templates {
			if _, ok := set.Get(tpl); !ok {
				t.Errorf("profile %s: template %q is not in base/templates", name, tpl)
			}
		}
	}
	if _, err := inject.New(cfg, set); err != nil {
		t.Fatalf("inject.New rejects base/config.yaml: %v", err)
	}
	if !sameSet(cfg.ExcludedNamespaces, systemNamespaces) {
		t.Errorf("excludedNamespaces %v, want %v (as the webhooks exclude)", cfg.ExcludedNamespaces, systemNamespaces)
	}
}

// TestConfigMatchesDefault: the shipped profiles are graft's defaults, so
// `graft serve` with no config and the installed webhook behave alike.
func TestConfigMatchesDefault(t *testing.T) {
	cfg, def := loadConfig(t), inject.DefaultConfig()
	if cfg.DefaultProfile != def.DefaultProfile {
		t.Errorf("defaultProfile %q, inject.DefaultConfig has %q", cfg.DefaultProfile, def.DefaultProfile)
	}
	if !reflect.DeepEqual(cfg.Profiles, def.Profiles) {
		t.Errorf("base/config.yaml profiles differ from inject.DefaultConfig:\n got %+v\nwant %+v\n"+
			"Update base/config.yaml, then run make deploy-webhooks.", cfg.Profiles, def.Profiles)
	}
}

// TestWebhooksAreGenerated: each shipped registration is exactly what
// `graft webhooks` writes for the configuration beside it.
func TestWebhooksAreGenerated(t *testing.T) {
	for _, dir := range []string{"base", "examples/revisions"} {
		f, err := config.Load(filepath.Join(dir, "config.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := registration.YAML(f, registration.Options{Source: "deploy/" + dir + "/config.yaml"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "mutatingwebhookconfiguration.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s/mutatingwebhookconfiguration.yaml is not what graft webhooks writes for %s/config.yaml: run make deploy-webhooks", dir, dir)
		}
	}
}

// TestOneWebhookPerProfileAndRevision: config.yaml, the webhooks and the
// policies name the same profiles; each profile has a webhook for
// namespaces without graft.dev/rev and one per revision and tag, and a
// guarantee policy.
func TestOneWebhookPerProfileAndRevision(t *testing.T) {
	f := loadFileConfig(t)
	cfg := f.Config
	out := kustomize(t, "base")
	mwc := one[admissionv1.MutatingWebhookConfiguration](t, out, "MutatingWebhookConfiguration", "graft")

	var got, want []string
	for _, w := range mwc.Webhooks {
		got = append(got, w.Name)
		profile, rev, _ := webhookRoute(w.Name)
		if _, ok := cfg.Profiles[profile]; !ok {
			t.Errorf("webhook %s serves profile %q, which config.yaml does not define", w.Name, profile)
			continue
		}
		if len(f.Targets(rev)) == 0 {
			t.Errorf("webhook %s serves no revision of config.yaml", w.Name)
		}
		if profile == cfg.DefaultProfile && rev == "" && *w.ClientConfig.Service.Path != "/inject" {
			t.Errorf("the default profile %s is not served on /inject", profile)
		}
	}
	var cfgProfiles []string
	for name := range cfg.Profiles {
		cfgProfiles = append(cfgProfiles, name)
		want = append(want, name+".inject.graft.dev")
		for _, rev := range append(f.RevisionNames(), f.TagNames()...) {
			want = append(want, name+"."+rev+".rev.inject.graft.dev")
		}
	}
	if !sameSet(got, want) {
		t.Errorf("webhooks %v, want %v", got, want)
	}

	for _, p := range cfgProfiles {
		one[admissionv1.ValidatingAdmissionPolicy](t, out, "ValidatingAdmissionPolicy", registration.PolicyName("graft", p))
	}
}

// TestTemplatesMatchBuiltin: the templates ConfigMap ships graft's built-in
// templates unchanged; `make deploy-templates` refreshes the copy.
func TestTemplatesMatchBuiltin(t *testing.T) {
	builtin, err := filepath.Glob("../templates/builtin/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := filepath.Glob("base/templates/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	names := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			out = append(out, filepath.Base(p))
		}
		return out
	}
	if !sameSet(names(builtin), names(shipped)) {
		t.Fatalf("base/templates has %v, templates/builtin has %v: run make deploy-templates", names(shipped), names(builtin))
	}
	out := kustomize(t, "base")
	cm := one[corev1.ConfigMap](t, out, "ConfigMap", "graft-templates")
	for _, name := range names(builtin) {
		want, err := os.ReadFile(filepath.Join("../templates/builtin", name))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := cm.Data[name]
		switch {
		case !ok:
			t.Errorf("ConfigMap graft-templates lacks %s: list templates/%s in deploy/base/kustomization.yaml", name, name)
		case !bytes.Equal([]byte(got), want):
			t.Errorf("ConfigMap graft-templates: %s differs from templates/builtin/%s: run make deploy-templates", name, name)
		}
	}
	if len(cm.Data) != len(names(builtin)) {
		t.Errorf("ConfigMap graft-templates has %d templates, want %d", len(cm.Data), len(names(builtin)))
	}
}
