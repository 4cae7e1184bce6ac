package registration

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
)

const revisionsYAML = `
revision: v1
defaultProfile: mesh
profiles:
  mesh: {templates: [mesh-proxy]}
  agent: {templates: [agent]}
  node: {templates: [agent], injectHostNetwork: true}
revisions:
  v2:
    profiles:
      agent: {templates: [agent], injectHostNetwork: true}
tags:
  stable: {revision: v1}
  canary:
    split: [{revision: v2, percent: 10}, {revision: v1, percent: 90}]
excludedNamespaces: [kube-system, platform]
`

func parse(t *testing.T, data string) config.File {
	t.Helper()
	f, err := config.Parse("graft.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func byName(t *testing.T, mwc *admissionv1.MutatingWebhookConfiguration) map[string]admissionv1.MutatingWebhook {
	t.Helper()
	out := map[string]admissionv1.MutatingWebhook{}
	for _, w := range mwc.Webhooks {
		if _, dup := out[w.Name]; dup {
			t.Fatalf("webhook %s twice", w.Name)
		}
		out[w.Name] = w
	}
	return out
}

func TestWebhooks(t *testing.T) {
	mwc, err := Webhooks(parse(t, revisionsYAML), Options{})
	if err != nil {
		t.Fatal(err)
	}
	hooks := byName(t, mwc)
	// 3 profiles x (no label, v1, v2, canary, stable), the default profile first.
	if len(mwc.Webhooks) != 15 || mwc.Webhooks[0].Name != "mesh.inject.graft.dev" {
		t.Fatalf("%d webhooks, first %s", len(mwc.Webhooks), mwc.Webhooks[0].Name)
	}
	for _, tt := range []struct {
		name, path string
		rev        *metav1.LabelSelectorRequirement
	}{
		{"mesh.inject.graft.dev", "/inject", &metav1.LabelSelectorRequirement{Key: names.Revision, Operator: metav1.LabelSelectorOpDoesNotExist}},
		{"agent.inject.graft.dev", "/inject/agent", nil},
		{"node.inject.graft.dev", "/inject/node", nil},
		{"mesh.v1.rev.inject.graft.dev", "/inject/mesh/v1", &metav1.LabelSelectorRequirement{Key: names.Revision, Operator: metav1.LabelSelectorOpIn, Values: []string{"v1"}}},
		{"agent.v1.rev.inject.graft.dev", "/inject/agent/v1", nil},
		{"agent.v2.rev.inject.graft.dev", "/inject/agent/v2", nil},
		{"agent.stable.rev.inject.graft.dev", "/inject/agent/stable", nil},
		{"agent.canary.rev.inject.graft.dev", "/inject/agent/canary", &metav1.LabelSelectorRequirement{Key: names.Revision, Operator: metav1.LabelSelectorOpIn, Values: []string{"canary"}}},
		{"node.canary.rev.inject.graft.dev", "/inject/node/canary", nil},
	} {
		w, ok := hooks[tt.name]
		if !ok {
			t.Errorf("no webhook %s", tt.name)
			continue
		}
		svc := w.ClientConfig.Service
		if svc.Name != "graft" || svc.Namespace != "graft-system" || *svc.Port != 443 || *svc.Path != tt.path {
			t.Errorf("%s: service %s/%s:%d%s, want graft/graft-system:443%s", tt.name, svc.Namespace, svc.Name, *svc.Port, *svc.Path, tt.path)
		}
		exprs := w.NamespaceSelector.MatchExpressions
		if len(exprs) != 3 || exprs[0].Key != names.Inject || exprs[2].Key != names.NamespaceNameLabel ||
			!slices.Equal(exprs[2].Values, []string{"kube-system", "platform", "graft-system"}) {
			t.Errorf("%s: namespaceSelector %+v", tt.name, exprs)
		}
		if tt.rev != nil && !reflect.DeepEqual(exprs[1], *tt.rev) {
			t.Errorf("%s: revision requirement %+v, want %+v", tt.name, exprs[1], *tt.rev)
		}
		// Every Pod is sent: a CEL condition costs the API server more
		// than graft takes to skip a Pod.
		if len(w.MatchConditions) != 0 {
			t.Errorf("%s: matchConditions %+v, want none", tt.name, w.MatchConditions)
		}
	}
}

// TestEachNamespaceOneWebhook: a namespace is sent to exactly one webhook
// for its profile and revision, and to none when its labels name no
// profile, no revision or tag, or it is excluded.
func TestEachNamespaceOneWebhook(t *testing.T) {
	mwc, err := Webhooks(parse(t, revisionsYAML), Options{Namespace: "graft"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{names.Inject: "agent", names.NamespaceNameLabel: "shop"}, "agent.inject.graft.dev"},
		{map[string]string{names.Inject: "agent", names.Revision: "canary", names.NamespaceNameLabel: "shop"}, "agent.canary.rev.inject.graft.dev"},
		{map[string]string{names.Inject: "mesh", names.Revision: "v2", names.NamespaceNameLabel: "shop"}, "mesh.v2.rev.inject.graft.dev"},
		{map[string]string{names.Inject: "mesh", names.Revision: "v3", names.NamespaceNameLabel: "shop"}, ""},
		{map[string]string{names.Inject: "other", names.NamespaceNameLabel: "shop"}, ""},
		{map[string]string{names.Revision: "v2", names.NamespaceNameLabel: "shop"}, ""},
		{map[string]string{names.Inject: "agent", names.NamespaceNameLabel: "platform"}, ""},
		{map[string]string{names.Inject: "agent", names.Revision: "v1", names.NamespaceNameLabel: "graft"}, ""},
	} {
		var got []string
		for _, w := range mwc.Webhooks {
			sel, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
			if err != nil {
				t.Fatalf("%s: %v", w.Name, err)
			}
			if sel.Matches(labels.Set(tt.labels)) {
				got = append(got, w.Name)
			}
		}
		if want := []string{tt.want}; (tt.want == "" && len(got) != 0) || (tt.want != "" && !slices.Equal(got, want)) {
			t.Errorf("namespace %v: webhooks %v, want %q", tt.labels, got, tt.want)
		}
	}
}

// TestDefaultProfilePath: /inject serves the default revision's default
// profile, so only a profile that is that in every revision the default
// revision may choose is registered on it.
func TestDefaultProfilePath(t *testing.T) {
	data := revisionsYAML + "defaultRevision: canary\n"
	for _, tt := range []struct{ v2Default, want string }{{"", "/inject"}, {"agent", "/inject/mesh"}} {
		f := parse(t, data)
		f.Revisions["v2"] = config.Revision{DefaultProfile: tt.v2Default}
		mwc, err := Webhooks(f, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := *byName(t, mwc)["mesh.inject.graft.dev"].ClientConfig.Service.Path; got != tt.want {
			t.Errorf("v2's default profile %q: mesh's path %s, want %s", tt.v2Default, got, tt.want)
		}
	}
}

func TestBadProfileName(t *testing.T) {
	_, err := Webhooks(parse(t, "defaultProfile: a\nprofiles:\n  a: {templates: [agent]}\n  Big_Name: {templates: [agent]}\n"), Options{})
	if err == nil || !strings.Contains(err.Error(), `profile "Big_Name" cannot name a webhook`) {
		t.Errorf("err = %v", err)
	}
}

// TestYAMLReadsBack: the written YAML is exactly the registration, read
// strictly as the API types.
func TestYAMLReadsBack(t *testing.T) {
	f := parse(t, revisionsYAML)
	out, err := YAML(f, Options{Source: "graft.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "# Generated by `graft webhooks --config graft.yaml`") {
		t.Errorf("header: %.100s", out)
	}
	var got admissionv1.MutatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(out, &got); err != nil {
		t.Fatal(err)
	}
	want, err := Webhooks(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&got, want) {
		t.Errorf("the YAML reads back as\n%+v\nwant\n%+v", got, want)
	}
	again, err := YAML(f, Options{Source: "graft.yaml"})
	if err != nil || string(again) != string(out) {
		t.Errorf("two runs differ (%v)", err)
	}
}

// TestPodSecuritySplit: a profile allowed more than restricted (in any
// revision) gets a webhook per stricter Pod Security level, on a route
// that names the level; every namespace still reaches exactly one webhook
// of its profile and revision, and one at the right level.
func TestPodSecuritySplit(t *testing.T) {
	f := parse(t, revisionsYAML)
	mesh := f.Profiles["mesh"]
	mesh.PodSecurity.MaxLevel = "privileged"
	f.Profiles["mesh"] = mesh
	f.Revisions["v2"].Profiles["node"] = inject.Profile{Templates: []string{"agent"}, PodSecurity: inject.PodSecurity{MaxLevel: "baseline"}}
	mwc, err := Webhooks(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hooks := byName(t, mwc)
	// mesh: 5 routes x 3 levels; agent: 5; node: 5 x 2.
	if len(mwc.Webhooks) != 30 {
		t.Errorf("%d webhooks, want 30", len(mwc.Webhooks))
	}
	for name, path := range map[string]string{
		"mesh.inject.graft.dev":                         "/inject",
		"mesh.psa-restricted.inject.graft.dev":          "/inject/mesh.restricted",
		"mesh.psa-baseline.inject.graft.dev":            "/inject/mesh.baseline",
		"mesh.canary.rev.psa-baseline.inject.graft.dev": "/inject/mesh.baseline/canary",
		"node.v1.rev.psa-restricted.inject.graft.dev":   "/inject/node.restricted/v1",
		"agent.inject.graft.dev":                        "/inject/agent",
	} {
		w, ok := hooks[name]
		if !ok {
			t.Errorf("no webhook %s", name)
			continue
		}
		if got := *w.ClientConfig.Service.Path; got != path {
			t.Errorf("%s: path %s, want %s", name, got, path)
		}
	}
	if _, ok := hooks["node.psa-baseline.inject.graft.dev"]; ok {
		t.Error("node, at most baseline, has a webhook for baseline namespaces")
	}
	ns := func(kv ...string) map[string]string {
		m := map[string]string{names.NamespaceNameLabel: "shop"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tt := range []struct {
		labels map[string]string
		want   string
	}{
		{ns(names.Inject, "mesh"), "mesh.inject.graft.dev"},
		{ns(names.Inject, "mesh", names.PodSecurityEnforce, "privileged"), "mesh.inject.graft.dev"},
		{ns(names.Inject, "mesh", names.PodSecurityEnforce, "baseline"), "mesh.psa-baseline.inject.graft.dev"},
		{ns(names.Inject, "mesh", names.PodSecurityEnforce, "restricted", names.Revision, "v2"), "mesh.v2.rev.psa-restricted.inject.graft.dev"},
		{ns(names.Inject, "node", names.PodSecurityEnforce, "baseline"), "node.inject.graft.dev"},
		{ns(names.Inject, "node", names.PodSecurityEnforce, "restricted"), "node.psa-restricted.inject.graft.dev"},
		{ns(names.Inject, "agent", names.PodSecurityEnforce, "restricted"), "agent.inject.graft.dev"},
	} {
		var got []string
		for _, w := range mwc.Webhooks {
			sel, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
			if err != nil {
				t.Fatalf("%s: %v", w.Name, err)
			}
			if sel.Matches(labels.Set(tt.labels)) {
				got = append(got, w.Name)
			}
		}
		if !slices.Equal(got, []string{tt.want}) {
			t.Errorf("namespace %v: webhooks %v, want %s", tt.labels, got, tt.want)
		}
	}
}
