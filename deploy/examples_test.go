package deploy

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/templates"
)

// TestExamples: the examples build, opt in and out the documented way, and
// every graft.dev/<template>.<param> annotation names a real parameter with
// a value the template accepts.
func TestExamples(t *testing.T) {
	cfg := loadConfig(t)
	set, err := templates.LoadDir("base/templates")
	if err != nil {
		t.Fatal(err)
	}
	out := kustomize(t, "examples")
	ns := one[corev1.Namespace](t, out, "Namespace", "graft-demo")
	profile, ok := cfg.Profiles[ns.Labels[injectLabel]]
	if !ok {
		t.Errorf("namespace label %s=%q names no profile", injectLabel, ns.Labels[injectLabel])
	}
	pod := one[corev1.Pod](t, out, "Pod", "debug-shell")
	if pod.Labels[injectLabel] != "false" {
		t.Errorf("the opted-out Pod's label %s=%q, want \"false\"", injectLabel, pod.Labels[injectLabel])
	}
	d := one[appsv1.Deployment](t, out, "Deployment", "web")
	n := 0
	for key, value := range d.Spec.Template.Annotations {
		rest, ok := strings.CutPrefix(key, "graft.dev/")
		if !ok {
			continue
		}
		n++
		tplName, param, _ := strings.Cut(rest, ".")
		if !slices.Contains(profile.Templates, tplName) && !slices.Contains(profile.AllowedTemplates, tplName) {
			t.Errorf("%s: the namespace's profile does not inject %s", key, tplName)
		}
		tpl, ok := set.Get(tplName)
		if !ok {
			t.Errorf("%s: no template %q", key, tplName)
			continue
		}
		p, ok := tpl.Param(param)
		if !ok {
			t.Errorf("%s: template %s has no parameter %q", key, tplName, param)
			continue
		}
		if _, err := p.Parse(value); err != nil {
			t.Errorf("%s: %q: %v", key, value, err)
		}
	}
	if n == 0 {
		t.Error("the Deployment shows no per-Pod parameter")
	}
}
