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
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

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
			var names []string
			for _, d := range out.find("Deployment") {
				if ownDeployment(d.name) {
					names = append(names, d.name)
				}
			}
			if len(names) != 1 {
				t.Fatalf("graft's Deployments: %v, want one", names)
			}
			renderedConfig(t, out, names[0])
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
		// The messages are built in the policy's variables.
		var messages strings.Builder
		for _, v := range vap.Spec.Variables {
			messages.WriteString(v.Expression)
		}
		if !strings.Contains(messages.String(), "kubectl -n "+namespace+" get pods") {
			t.Errorf("%s: no message names the release namespace", name)
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

// TestChartImage: image.digest pins the image by digest, and the
// app.kubernetes.io/version label is the tag alone, a valid label value
// even when the tag carries a digest or is too long for a label.
func TestChartImage(t *testing.T) {
	h := newHelm(t)
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	long := strings.Repeat("a", 70) + "-"
	for _, c := range []struct {
		name        string
		args        []string
		image, want string
	}{
		{"defaults", nil, "ghcr.io/graftdev/graft:v0.1.0", "v0.1.0"},
		{"tag", []string{"--set", "image.tag=v0.2.0"}, "ghcr.io/graftdev/graft:v0.2.0", "v0.2.0"},
		{"digest", []string{"--set", "image.digest=" + digest}, "ghcr.io/graftdev/graft:v0.1.0@" + digest, "v0.1.0"},
		{"tag and digest", []string{"--set", "image.tag=v0.2.0", "--set", "image.digest=" + digest}, "ghcr.io/graftdev/graft:v0.2.0@" + digest, "v0.2.0"},
		{"digest in the tag", []string{"--set", "image.tag=v0.2.0@" + digest}, "ghcr.io/graftdev/graft:v0.2.0@" + digest, "v0.2.0"},
		{"tag too long for a label", []string{"--set", "image.tag=" + long}, "ghcr.io/graftdev/graft:" + long, strings.Repeat("a", 63)},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := h.render(t, c.args...)
			d := one[appsv1.Deployment](t, out, "Deployment", release)
			if got := d.Spec.Template.Spec.Containers[0].Image; got != c.image {
				t.Errorf("image %s, want %s", got, c.image)
			}
			for _, o := range out {
				var meta struct {
					Metadata metav1.ObjectMeta `json:"metadata"`
				}
				if err := yaml.Unmarshal(o.yaml, &meta); err != nil {
					t.Fatal(err)
				}
				v, ok := meta.Metadata.Labels["app.kubernetes.io/version"]
				if !ok {
					continue
				}
				if v != c.want {
					t.Errorf("%s %s: version label %q, want %q", o.kind, o.name, v, c.want)
				}
				if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
					t.Errorf("%s %s: version label %q is not a label value: %v", o.kind, o.name, v, errs)
				}
			}
		})
	}
}

// TestChartNetworkPolicy: enabled, the policy selects graft's Pods and
// lets the webhook port take connections from anywhere and the admin
// port only from metricsFrom; webhookFrom narrows the webhook port.
func TestChartNetworkPolicy(t *testing.T) {
	h := newHelm(t)
	if out := h.render(t); len(out.find("NetworkPolicy")) != 0 {
		t.Error("a NetworkPolicy by default: a Prometheus outside metricsFrom would stop scraping")
	}
	out := h.render(t, "--set", "networkPolicy.enabled=true")
	np := one[networkingv1.NetworkPolicy](t, out, "NetworkPolicy", release)
	d := one[appsv1.Deployment](t, out, "Deployment", release)
	if !selects(&np.Spec.PodSelector, d.Spec.Template.Labels) {
		t.Fatalf("the policy's selector %v does not select graft's Pods %v", np.Spec.PodSelector, d.Spec.Template.Labels)
	}
	ports := map[string]bool{}
	for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = true
	}
	byPort := map[string]networkingv1.NetworkPolicyIngressRule{}
	for _, r := range np.Spec.Ingress {
		for _, p := range r.Ports {
			if !ports[p.Port.String()] {
				t.Errorf("rule for port %s, which graft's container does not name", p.Port.String())
			}
			byPort[p.Port.String()] = r
		}
	}
	if r := byPort["https"]; len(r.From) != 0 {
		t.Errorf("webhook port allowed only from %v, want everywhere", r.From)
	}
	admin := byPort["admin"]
	if len(admin.From) != 1 || admin.From[0].NamespaceSelector == nil ||
		admin.From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" {
		t.Errorf("admin port allowed from %v, want the monitoring namespace", admin.From)
	}

	out = h.render(t, "--set", "networkPolicy.enabled=true", "--set", "networkPolicy.webhookFrom[0].ipBlock.cidr=10.0.0.0/24")
	np = one[networkingv1.NetworkPolicy](t, out, "NetworkPolicy", release)
	for _, r := range np.Spec.Ingress {
		if r.Ports[0].Port.String() == "https" && (len(r.From) != 1 || r.From[0].IPBlock == nil || r.From[0].IPBlock.CIDR != "10.0.0.0/24") {
			t.Errorf("webhookFrom not applied: %v", r.From)
		}
	}
}
