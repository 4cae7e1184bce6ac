package deploy

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/registration"
	"github.com/graftdev/graft/templates"
)

// renderedConfig reads the configuration and templates a chart render
// gives graft, as graft serve reads them, and builds the engine from them.
func renderedConfig(t *testing.T, out output, fullname string) config.File {
	t.Helper()
	cm := one[corev1.ConfigMap](t, out, "ConfigMap", fullname+"-config")
	f, err := config.Parse("config.yaml", []byte(cm.Data["config.yaml"]))
	if err != nil {
		t.Fatalf("graft would not start on the rendered config.yaml: %v", err)
	}
	server := f.Server
	if err := server.Default(); err != nil {
		t.Fatalf("server settings: %v", err)
	}
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.find("ConfigMap") {
		if o.name != fullname+"-templates" {
			continue
		}
		files := fstest.MapFS{}
		for name, body := range one[corev1.ConfigMap](t, out, "ConfigMap", o.name).Data {
			files[name] = &fstest.MapFile{Data: []byte(body)}
		}
		own, err := templates.LoadFS(files)
		if err != nil {
			t.Fatalf("graft would not load the rendered templates: %v", err)
		}
		set = set.With(own)
	}
	if _, err := inject.New(f.Config, set); err != nil {
		t.Fatalf("graft would not serve the rendered configuration: %v", err)
	}
	return f
}

// TestChartConfigIsServed: with every variant, graft starts on the
// configuration and templates the chart renders.
func TestChartConfigIsServed(t *testing.T) {
	h := newHelm(t)
	for _, v := range chartVariants(t, "") {
		t.Run(v.name, func(t *testing.T) {
			out := h.render(t, v.args...)
			d := out.find("Deployment")
			if len(d) != 1 {
				t.Fatalf("%d Deployments", len(d))
			}
			renderedConfig(t, out, d[0].name)
		})
	}
}

// TestChartFollowsValues: ci/custom-values.yaml's profiles, templates,
// settings and policy actions reach the webhooks, the policy and graft.
func TestChartFollowsValues(t *testing.T) {
	h := newHelm(t)
	out := h.render(t, "--values", filepath.Join(chartDir, "ci", "custom-values.yaml"))
	const fullname = "graft-sidecars" // release graft, nameOverride sidecars
	excluded := []string{"kube-system", namespace}

	f := renderedConfig(t, out, fullname)
	if f.DefaultProfile != "mesh" || !sameSet(profileNames(f.Profiles), []string{"mesh", "node-agent"}) {
		t.Errorf("profiles %v (default %q), want mesh and node-agent (default mesh): null drops a shipped one", profileNames(f.Profiles), f.DefaultProfile)
	}
	if !sameSet(f.ExcludedNamespaces, excluded) {
		t.Errorf("excludedNamespaces %v, want %v (the release namespace added)", f.ExcludedNamespaces, excluded)
	}
	if f.Server.Budget.Duration != 500*time.Millisecond || f.Server.MaxInFlight != 256 || f.Server.LogLevel != "warn" {
		t.Errorf("server settings %+v: want budget 500ms, maxInFlight 256, logLevel warn", f.Server)
	}

	mwc := one[admissionv1.MutatingWebhookConfiguration](t, out, "MutatingWebhookConfiguration", fullname)
	wantPath := map[string]string{
		"mesh.inject.graft.dev": "/inject", "mesh.default.rev.inject.graft.dev": "/inject/mesh/default",
		"node-agent.inject.graft.dev": "/inject/node-agent", "node-agent.default.rev.inject.graft.dev": "/inject/node-agent/default",
		// node-agent allows Pod Security baseline: restricted namespaces
		// have webhooks of their own, whose route names the level.
		"node-agent.psa-restricted.inject.graft.dev":             "/inject/node-agent.restricted",
		"node-agent.default.rev.psa-restricted.inject.graft.dev": "/inject/node-agent.restricted/default",
	}
	if len(mwc.Webhooks) != len(wantPath) {
		t.Fatalf("%d webhooks, want one per profile, revision and split level: %v", len(mwc.Webhooks), wantPath)
	}
	for _, w := range mwc.Webhooks {
		if got := deref(w.ClientConfig.Service.Path); got != wantPath[w.Name] || w.ClientConfig.Service.Name != fullname {
			t.Errorf("%s: calls %s%s, want %s%s", w.Name, w.ClientConfig.Service.Name, got, fullname, wantPath[w.Name])
		}
		if got := exprValues(w.NamespaceSelector, "kubernetes.io/metadata.name", metav1.LabelSelectorOpNotIn); !sameSet(got, excluded) {
			t.Errorf("%s: excludes %v, want %v", w.Name, got, excluded)
		}
		if deref(w.TimeoutSeconds) != 5 {
			t.Errorf("%s: timeoutSeconds %d, want 5", w.Name, deref(w.TimeoutSeconds))
		}
	}

	// One guarantee per profile (what they hold: chart_webhooks_test.go).
	for _, profile := range []string{"mesh", "node-agent"} {
		name := registration.PolicyName(fullname, profile)
		vap := one[admissionv1.ValidatingAdmissionPolicy](t, out, "ValidatingAdmissionPolicy", name)
		if got := exprValues(vap.Spec.MatchConstraints.NamespaceSelector, injectLabel, metav1.LabelSelectorOpIn); !slices.Equal(got, []string{profile}) {
			t.Errorf("%s covers %v, want [%s]", name, got, profile)
		}
		var problem string
		for _, v := range vap.Spec.Variables {
			if v.Name == "problem" {
				problem = v.Expression
			}
		}
		if !strings.Contains(problem, "kubectl -n "+namespace+" get pods") {
			t.Errorf("%s: the message does not name the release namespace: %s", name, problem)
		}
		bind := one[admissionv1.ValidatingAdmissionPolicyBinding](t, out, "ValidatingAdmissionPolicyBinding", name)
		if want := []admissionv1.ValidationAction{admissionv1.Warn, admissionv1.Audit}; !slices.Equal(bind.Spec.ValidationActions, want) || bind.Spec.PolicyName != vap.Name {
			t.Errorf("binding %+v, want policy %s with %v", bind.Spec, vap.Name, want)
		}
	}

	d := one[appsv1.Deployment](t, out, "Deployment", fullname)
	if deref(d.Spec.Replicas) != 3 || d.Spec.Template.Spec.Containers[0].Image != "ghcr.io/graftdev/graft:v0.1.1" {
		t.Errorf("replicas %d image %s, want 3 and tag v0.1.1", deref(d.Spec.Replicas), d.Spec.Template.Spec.Containers[0].Image)
	}
}

// TestChartMinimal: without the policy, a priority class or template files,
// the chart leaves out what would serve them, and graft serves its built-in
// templates.
func TestChartMinimal(t *testing.T) {
	h := newHelm(t)
	out := h.render(t, "--values", filepath.Join(chartDir, "ci", "minimal-values.yaml"))
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ResourceQuota", "Namespace", "Certificate", "Secret"} {
		if n := len(out.find(kind)); n != 0 {
			t.Errorf("%d %s rendered", n, kind)
		}
	}
	d := one[appsv1.Deployment](t, out, "Deployment", release)
	ps := d.Spec.Template.Spec
	if ps.PriorityClassName != "" {
		t.Errorf("priorityClassName %q", ps.PriorityClassName)
	}
	for _, o := range out.find("ConfigMap") {
		if o.name == release+"-templates" {
			t.Error("a templates ConfigMap without templates")
		}
	}
	if slices.ContainsFunc(ps.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--templates-dir") }) ||
		slices.ContainsFunc(ps.Volumes, func(v corev1.Volume) bool { return v.Name == "templates" }) {
		t.Errorf("--templates-dir or its volume without templates: %v", ps.Containers[0].Args)
	}
	renderedConfig(t, out, release)
}

func profileNames(p map[string]inject.Profile) []string {
	var out []string
	for name := range p {
		out = append(out, name)
	}
	return out
}
