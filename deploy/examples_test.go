package deploy

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/inject"
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

// TestRevisionsExample: the revisions example is a configuration graft
// serves with the shipped templates and profiles, its namespace is sent to
// the canary's webhook of its profile only, and the canary gives some
// workloads the new revision's proxy, every Pod of a workload alike.
func TestRevisionsExample(t *testing.T) {
	const dir = "examples/revisions"
	f, err := config.Load(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(f.Profiles)), slices.Sorted(maps.Keys(loadConfig(t).Profiles)); !slices.Equal(got, want) {
		t.Errorf("the example's profiles %v are not the shipped ones %v (the policy lists those)", got, want)
	}
	rc, err := f.RevisionsConfig("base/templates")
	if err != nil {
		t.Fatal(err)
	}
	revs, err := inject.NewRevisions(rc)
	if err != nil {
		t.Fatal(err)
	}

	var ns corev1.Namespace
	readYAML(t, filepath.Join(dir, "namespace.yaml"), &ns)
	var mwc admissionv1.MutatingWebhookConfiguration
	readYAML(t, filepath.Join(dir, "mutatingwebhookconfiguration.yaml"), &mwc)
	labels := maps.Clone(ns.Labels)
	labels["kubernetes.io/metadata.name"] = ns.Name
	var sent []admissionv1.MutatingWebhook
	for _, w := range mwc.Webhooks {
		if selects(w.NamespaceSelector, labels) {
			sent = append(sent, w)
		}
	}
	if len(sent) != 1 || sent[0].Name != "enabled.canary.rev.inject.graft.dev" {
		t.Fatalf("namespace %s is sent to %d webhooks, want enabled.canary.rev.inject.graft.dev only", ns.Name, len(sent))
	}
	path := *sent[0].ClientConfig.Service.Path
	profile, rev, _ := strings.Cut(strings.TrimPrefix(path, "/inject/"), "/")

	images := map[string]string{}
	for i := 0; len(images) < 2 && i < 1000; i++ {
		owner := fmt.Sprintf("0d0c0b0a-1111-4222-8333-%012d", i)
		var first string
		for j := range 2 {
			review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",` +
				`"kind":{"group":"","version":"v1","kind":"Pod"},"namespace":"` + ns.Name + `","operation":"CREATE",` +
				`"object":{"metadata":{"generateName":"web-","ownerReferences":[{"uid":"` + owner + `","controller":true}]},` +
				`"spec":{"containers":[{"name":"web","image":"web:` + strconv.Itoa(j) + `"}]}}}}`
			ex, err := revs.Explain([]byte(review), inject.Options{Profile: profile, Revision: rev})
			if err != nil {
				t.Fatal(err)
			}
			if j == 0 {
				first = ex.Result.Revision
			} else if ex.Result.Revision != first {
				t.Fatalf("owner %s: Pods on %s and %s", owner, first, ex.Result.Revision)
			}
			images[ex.Result.Revision] = regexp.MustCompile(`envoyproxy/envoy:v[0-9.]+`).FindString(string(ex.Patch))
		}
	}
	if images["2026-11"] != "envoyproxy/envoy:v1.39.0" || images["2026-12"] != "envoyproxy/envoy:v1.40.0" {
		t.Errorf("proxies by revision: %v", images)
	}
}

// readYAML reads the one object in path into v, strictly.
func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
