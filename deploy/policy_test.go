package deploy

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/export"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/guaranteecorpus"
	"github.com/graftdev/graft/internal/registration"
	"github.com/graftdev/graft/internal/vapeval"
	"github.com/graftdev/graft/templates"
)

// notInjectedMsg starts the shipped policies' message for a Pod graft
// never saw.
const notInjectedMsg = "graft did not inject this Pod"

// removedMsg is in the message for a Pod a later mutator stripped.
const removedMsg = "a mutating admission step after graft removed it"

// shippedPolicies are the shipped guarantee policies, compiled, by
// profile.
func shippedPolicies(t *testing.T) map[string]*vapeval.Policy {
	t.Helper()
	out := map[string]*vapeval.Policy{}
	built := kustomize(t, "base")
	for _, o := range built.find("ValidatingAdmissionPolicy") {
		vap := one[admissionv1.ValidatingAdmissionPolicy](t, built, "ValidatingAdmissionPolicy", o.name)
		if vap.Name == registration.UnknownRevisionPolicyName("graft") {
			continue
		}
		profile, ok := strings.CutPrefix(vap.Name, registration.PolicyName("graft", ""))
		if !ok {
			t.Fatalf("policy %s is not named %s", vap.Name, registration.PolicyName("graft", "<profile>"))
		}
		p, err := vapeval.Compile(&vap)
		if err != nil {
			t.Fatalf("%s: %v", vap.Name, err)
		}
		out[profile] = p
	}
	return out
}

// verdict runs profile's shipped policy on pod (JSON) in namespace apps,
// which it must select.
func verdict(t *testing.T, policies map[string]*vapeval.Policy, profile, pod string) vapeval.Verdict {
	t.Helper()
	v := anyVerdict(t, policies, profile, pod)
	if !v.Selected {
		t.Fatalf("profile %s's policy does not select its namespace", profile)
	}
	return v
}

// anyVerdict is verdict for a Pod the policy may leave out.
func anyVerdict(t *testing.T, policies map[string]*vapeval.Policy, profile, pod string) vapeval.Verdict {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(pod), &obj); err != nil {
		t.Fatal(err)
	}
	p, ok := policies[profile]
	if !ok {
		t.Fatalf("no shipped policy for profile %s", profile)
	}
	// The API server defaults the Pod before any validation.
	typed, err := vapeval.PodOf(obj)
	if err != nil {
		t.Fatal(err)
	}
	export.APIDefaults(typed)
	v, err := p.Admit(vapeval.Request{Object: typed, Namespace: vapeval.NamespaceOf("apps", map[string]string{injectLabel: profile})})
	if err != nil {
		t.Fatalf("%v\npod: %s", err, pod)
	}
	return v
}

// shippedEngine is the engine with the shipped configuration and templates.
func shippedEngine(t *testing.T) (*inject.Engine, inject.Config) {
	t.Helper()
	cfg := loadConfig(t)
	set, err := templates.LoadDir("base/templates")
	if err != nil {
		t.Fatal(err)
	}
	engine, err := inject.New(cfg, set)
	if err != nil {
		t.Fatal(err)
	}
	return engine, cfg
}

// admitPod runs pod (JSON, namespace apps) through engine with profile and
// returns the patched Pod and the decision.
func admitPod(t *testing.T, engine *inject.Engine, profile, pod string) ([]byte, inject.Result) {
	t.Helper()
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
		`"namespace":"apps","operation":"CREATE","object":` + pod + `}}`
	resp, res, err := engine.Admit(nil, []byte(review), inject.Options{Profile: profile})
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Response struct{ Patch []byte } `json:"response"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		t.Fatal(err)
	}
	if r.Response.Patch == nil {
		return []byte(pod), res
	}
	patch, err := jsonpatch.DecodePatch(r.Response.Patch)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := patch.Apply([]byte(pod))
	if err != nil {
		t.Fatal(err)
	}
	return patched, res
}

const appPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"apps"},` +
	`"spec":{"containers":[{"name":"app","image":"app:1"}]}}`

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withConflictKeep is cfg with every profile keeping the Pod's own
// objects on a conflict.
func withConflictKeep(cfg inject.Config) inject.Config {
	profiles := map[string]inject.Profile{}
	for name, p := range cfg.Profiles {
		p.OnConflict = inject.ConflictKeep
		profiles[name] = p
	}
	cfg.Profiles = profiles
	return cfg
}

// TestPoliciesAreGenerated: each shipped guarantee is exactly what `graft
// guarantee` writes for the configuration beside it and the shipped
// templates.
func TestPoliciesAreGenerated(t *testing.T) {
	for _, dir := range []string{"base", "examples/revisions"} {
		f, err := config.Load(filepath.Join(dir, "config.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		rc, err := f.RevisionsConfig("base/templates")
		if err != nil {
			t.Fatal(err)
		}
		want, err := registration.GuaranteeYAML(rc, registration.Options{Source: "deploy/" + dir + "/config.yaml"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "validatingadmissionpolicy.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s/validatingadmissionpolicy.yaml is not what graft guarantee writes for %s/config.yaml: run make deploy-webhooks", dir, dir)
		}
	}
}

// TestPolicyPassesWhatGraftInjects: a Pod the real engine injected with
// each shipped profile passes on the matchCondition alone; without the
// label graft.dev/injected, it passes too (the label proves nothing either
// way). Each container graft added, removed after graft, is refused by
// name; graft called again puts it back.
func TestPolicyPassesWhatGraftInjects(t *testing.T) {
	policies := shippedPolicies(t)
	engine, cfg := shippedEngine(t)
	for name := range cfg.Profiles {
		t.Run(name, func(t *testing.T) {
			patched, res := admitPod(t, engine, name, appPod)
			if res.Decision != inject.DecisionInject {
				t.Fatalf("decision %v (%v), want inject", res.Decision, res.Reason)
			}
			if v := verdict(t, policies, name, string(patched)); v.Matched {
				t.Fatalf("the matchCondition holds for a Pod graft injected (denied %q)", v.Denied)
			}
			var injected corev1.Pod
			if err := json.Unmarshal(patched, &injected); err != nil {
				t.Fatal(err)
			}
			unlabelled := injected.DeepCopy()
			delete(unlabelled.Labels, "graft.dev/injected")
			if v := verdict(t, policies, name, mustJSON(t, unlabelled)); v.Denied != "" {
				t.Errorf("no label: refused: %s", v.Denied)
			}
			var added []string
			for _, c := range append(slices.Clone(injected.Spec.InitContainers), injected.Spec.Containers...) {
				if c.Name != "app" {
					added = append(added, c.Name)
				}
			}
			if len(added) == 0 {
				t.Fatal("the engine added no container")
			}
			for _, gone := range added {
				p := injected.DeepCopy()
				p.Spec.InitContainers = slices.DeleteFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == gone })
				p.Spec.Containers = slices.DeleteFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == gone })
				if v := verdict(t, policies, name, mustJSON(t, p)); !strings.Contains(v.Denied, gone) || !strings.Contains(v.Denied, removedMsg) {
					t.Errorf("%s removed after graft: denied %q, want it named as removed", gone, v.Denied)
				}
				restored, _ := admitPod(t, engine, name, mustJSON(t, p))
				if v := verdict(t, policies, name, string(restored)); v.Matched {
					t.Errorf("graft called again does not restore %s: %q", gone, v.Denied)
				}
			}
		})
	}
}

// TestPolicyVerdicts pins the shipped policy's answers for the Pods it
// must tell apart, in a namespace of the default profile (its mesh-proxy
// adds the native sidecar graft-proxy).
func TestPolicyVerdicts(t *testing.T) {
	policies := shippedPolicies(t)
	engine, _ := shippedEngine(t)
	injected, _ := admitPod(t, engine, "enabled", appPod)
	var real corev1.Pod
	if err := json.Unmarshal(injected, &real); err != nil {
		t.Fatal(err)
	}
	status := real.Annotations["graft.dev/status"]
	var proxy corev1.Container
	for _, c := range real.Spec.InitContainers {
		if c.Name == "graft-proxy" {
			proxy = c
		}
	}
	pod := func(labels, annotations map[string]string, spec string) string {
		meta := map[string]any{"name": "p", "namespace": "apps"}
		if labels != nil {
			meta["labels"] = labels
		}
		if annotations != nil {
			meta["annotations"] = annotations
		}
		return `{"apiVersion":"v1","kind":"Pod","metadata":` + mustJSON(t, meta) + `,"spec":` + spec + `}`
	}
	withProxy := func(edit func(*corev1.Container)) string {
		c := proxy.DeepCopy()
		edit(c)
		return `{"initContainers":[` + mustJSON(t, c) + `],"containers":[{"name":"app"}]}`
	}
	const app = `{"containers":[{"name":"app"}]}`
	// The record, and the annotations graft writes beside it.
	recorded := func(s string) map[string]string {
		a := maps.Clone(real.Annotations)
		a["graft.dev/status"] = s
		return a
	}
	injectedLabel := map[string]string{"graft.dev/injected": "default"}
	with := func(m map[string]string, k, v string) map[string]string {
		m = maps.Clone(m)
		m[k] = v
		return m
	}
	cases := []struct {
		name string
		pod  string
		want string // "" admitted, "pass" admitted on the matchCondition, "skip" not selected, else in the message
	}{
		{"no status", pod(nil, nil, app), notInjectedMsg},
		{"foreign labels and annotations only", pod(map[string]string{"app": "web"}, map[string]string{"a": "b"}, app), notInjectedMsg},
		{"labelled injected, no record", pod(injectedLabel, nil, app), notInjectedMsg},
		{"opted out", pod(map[string]string{"graft.dev/inject": "false"}, nil, app), "skip"},
		{"opt-out label with another value", pod(map[string]string{"graft.dev/inject": "true"}, nil, app), notInjectedMsg},
		{"graft's record and sidecar", pod(injectedLabel, recorded(status), withProxy(func(*corev1.Container) {})), "pass"},
		{"graft's record, sidecar removed", pod(injectedLabel, recorded(status), app), "graft adds init container graft-proxy (template mesh-proxy) to this Pod"},
		{"v1 record (graft upgrades it on admission), sidecar removed", pod(nil, recorded(`{"templates":["mesh-proxy"],"initContainers":["graft-proxy"]}`), app),
			"graft.dev/status records no template mesh-proxy injected at revision default"},
		{"copied record, own image", pod(injectedLabel, recorded(status), withProxy(func(c *corev1.Container) { c.Image = "evil.example/proxy:1" })),
			"init container graft-proxy is not graft's: field image is not what template mesh-proxy renders for this Pod"},
		{"copied record, NET_ADMIN", pod(injectedLabel, recorded(status), withProxy(func(c *corev1.Container) {
			c.SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
		})), "init container graft-proxy is not graft's: field securityContext is not what template mesh-proxy renders"},
		{"copied record, root", pod(injectedLabel, recorded(status), withProxy(func(c *corev1.Container) {
			u := int64(0)
			c.SecurityContext.RunAsUser = &u
		})), "field securityContext"},
		{"copied record, own command", pod(injectedLabel, recorded(status), withProxy(func(c *corev1.Container) { c.Command = []string{"/bin/sh", "-c", "x"} })),
			"field command"},
		{"copied record, not native", pod(injectedLabel, recorded(status), withProxy(func(c *corev1.Container) { c.RestartPolicy = nil })),
			"field restartPolicy"},
		{"a sidecar's name, a record claiming nothing", pod(nil, recorded(`{"version":2}`), withProxy(func(*corev1.Container) {})),
			"graft.dev/status records no template mesh-proxy"},
		{"a record claiming nothing, no sidecar", pod(nil, recorded(`{"version":2}`), app), "graft.dev/status records no template mesh-proxy"},
		{"a bogus record", pod(nil, recorded("x"), app), "graft.dev/status records no template mesh-proxy"},
		{"another template's sidecar name", pod(injectedLabel, recorded(status),
			`{"initContainers":[`+mustJSON(t, proxy)+`,{"name":"graft-secrets-agent","image":"evil:1","restartPolicy":"Always"}],"containers":[{"name":"app"}]}`),
			"init container graft-secrets-agent is named like a sidecar of template secrets-agent, which graft does not inject into this Pod"},
		{"a reserved annotation preset", pod(injectedLabel, with(recorded(status), "redirect.graft.dev/mode", "none"), withProxy(func(*corev1.Container) {})),
			`annotation redirect.graft.dev/mode="none" is not what template mesh-proxy renders for this Pod`},
		{"hostNetwork, profile skips it", pod(nil, nil, `{"hostNetwork":true,"containers":[{"name":"app"}]}`), "pass"},
		{"hostNetwork false", pod(nil, nil, `{"hostNetwork":false,"containers":[{"name":"app"}]}`), notInjectedMsg},
		{"mirror Pod", pod(nil, map[string]string{"kubernetes.io/config.mirror": "x"}, app), "pass"},
		{"selects no templates", pod(nil, map[string]string{"graft.dev/templates": " , "}, app), ""},
		{"selects a template", pod(nil, map[string]string{"graft.dev/templates": "mesh-proxy"}, app), notInjectedMsg},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := anyVerdict(t, policies, "enabled", c.pod)
			switch {
			case c.want != "skip" && !got.Selected:
				t.Fatalf("the policy does not select the Pod")
			case c.want == "skip":
				if got.Selected {
					t.Fatalf("%+v, want the policy not to apply", got)
				}
			case c.want == "pass":
				if got.Matched {
					t.Fatalf("%+v, want the matchCondition to pass it", got)
				}
			case c.want == "" && got.Denied != "":
				t.Fatalf("refused: %s", got.Denied)
			case !strings.Contains(got.Denied, c.want):
				t.Fatalf("%+v, want a refusal saying %q", got, c.want)
			}
		})
	}
	got := verdict(t, policies, "mesh-proxy", pod(nil, nil, app))
	for _, s := range []string{"namespace apps", "label graft.dev/inject=mesh-proxy", "graft-system get pods", `graft.dev/inject: "false"`} {
		if !strings.Contains(got.Denied, s) {
			t.Errorf("message %q does not say %q", got.Denied, s)
		}
	}
}

// TestPolicyAgreesWithEngineSkips: every Pod the real engine admits, the
// policy admits: those graft injects on the matchCondition alone; those it
// leaves alone without a record (an empty template selection, a mirror
// Pod, a hostNetwork Pod) pass too; under onConflict: keep, a Pod whose
// own container graft kept and recorded as kept passes.
func TestPolicyAgreesWithEngineSkips(t *testing.T) {
	policies := shippedPolicies(t)
	engine, _ := shippedEngine(t)
	podWith := func(annotations map[string]string, spec string) string {
		meta := map[string]any{"name": "p", "namespace": "apps"}
		if annotations != nil {
			meta["annotations"] = annotations
		}
		return `{"apiVersion":"v1","kind":"Pod","metadata":` + mustJSON(t, meta) + `,"spec":` + spec + `}`
	}
	const app = `{"containers":[{"name":"app","image":"app:1"}]}`
	type pod struct {
		name, pod string
		engine    *inject.Engine
	}
	cases := []pod{
		{"mirror", podWith(map[string]string{"kubernetes.io/config.mirror": "x"}, app), engine},
		{"hostNetwork", podWith(nil, `{"hostNetwork":true,"containers":[{"name":"app","image":"app:1"}]}`), engine},
		// The default profile's mesh-proxy adds init container graft-proxy.
		{"every template conflicts, denied", podWith(nil, `{"initContainers":[{"name":"graft-proxy","image":"mine:1"}],"containers":[{"name":"app","image":"app:1"}]}`), engine},
	}
	for _, value := range []string{"", " ", ",", " , ,", "\t,\n", "mesh-proxy", " mesh-proxy ,", "mesh-proxy,mesh-proxy", ", secrets-agent", "otel-agent,log-shipper"} {
		cases = append(cases, pod{"graft.dev/templates=" + value, podWith(map[string]string{"graft.dev/templates": value}, app), engine})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			patched, res := admitPod(t, c.engine, "", c.pod)
			if res.Decision == inject.DecisionDeny {
				return // graft refuses it itself: the policy never sees it
			}
			got := verdict(t, policies, "enabled", string(patched))
			if got.Denied != "" {
				t.Errorf("graft admits the Pod (%v/%v), yet the policy refuses it: %s", res.Decision, res.Reason, got.Denied)
			}
			// A Pod choosing its templates is checked by the validations.
			if res.Decision == inject.DecisionInject && got.Matched && !strings.Contains(c.pod, "graft.dev/templates") {
				t.Errorf("graft injected the Pod, yet the matchCondition holds")
			}
		})
	}
	// onConflict: keep: the shipped profiles deny, so this is the policy a
	// keeping configuration gets. graft keeps the Pod's own graft-proxy,
	// leaves mesh-proxy out and records the container under "kept"
	// (docs/concepts/guarantee.md; the engine's side is inject/'s).
	f := loadFileConfig(t)
	f.Config = withConflictKeep(f.Config)
	rc, err := f.RevisionsConfig("base/templates")
	if err != nil {
		t.Fatal(err)
	}
	gs, err := registration.Guarantees(rc, registration.Options{})
	if err != nil {
		t.Fatal(err)
	}
	keeping := map[string]*vapeval.Policy{}
	for _, g := range gs {
		if keeping[g.Profile], err = vapeval.Compile(g.Policy); err != nil {
			t.Fatal(err)
		}
	}
	const own = `{"initContainers":[{"name":"graft-proxy","image":"mine:1"}],"containers":[{"name":"app","image":"app:1"}]}`
	kept := podWith(map[string]string{"graft.dev/status": `{"version":2,"kept":["graft-proxy"]}`}, own)
	if got := verdict(t, keeping, "enabled", kept); got.Denied != "" {
		t.Errorf("onConflict: keep kept the Pod's own graft-proxy, yet the policy refuses it: %s", got.Denied)
	}
	if got := verdict(t, policies, "enabled", kept); !strings.Contains(got.Denied, "graft.dev/status records no template mesh-proxy") {
		t.Errorf("onConflict: deny: a record keeping the Pod's own graft-proxy is honoured: %+v", got)
	}
	notKept := podWith(map[string]string{"graft.dev/status": `{"version":2}`}, own)
	if got := verdict(t, keeping, "enabled", notKept); got.Denied == "" {
		t.Error("onConflict: keep: the Pod's own graft-proxy, not recorded as kept, is admitted")
	}
}

// TestRevisionsExampleGuarantee: issue 34's canary path. Following
// deploy/examples/revisions/README.md on a deploy/base install applies the
// example's configuration, webhooks and guarantee (it replaces the base's
// policies of the same names): graft's Pods in namespaces on the canary
// tag, on stable, without a label and on either revision pass it, the new
// revision's sidecar included; a namespace labelled with one revision
// refuses the other's; and the policy names every served revision.
func TestRevisionsExampleGuarantee(t *testing.T) {
	f, err := config.Load("examples/revisions/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.RevisionsConfig("base/templates")
	if err != nil {
		t.Fatal(err)
	}
	revs, err := inject.NewRevisions(rc)
	if err != nil {
		t.Fatal(err)
	}
	shipped := map[string]admissionv1.ValidatingAdmissionPolicy{}
	var policies []*vapeval.Policy
	data, err := os.ReadFile("examples/revisions/validatingadmissionpolicy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	built := parseObjects(t, data)
	for _, o := range built.find("ValidatingAdmissionPolicy") {
		vap := one[admissionv1.ValidatingAdmissionPolicy](t, built, "ValidatingAdmissionPolicy", o.name)
		shipped[vap.Name] = vap
		p, err := vapeval.Compile(&vap)
		if err != nil {
			t.Fatalf("%s: %v", vap.Name, err)
		}
		for _, b := range built.find("ValidatingAdmissionPolicyBinding") {
			bind := one[admissionv1.ValidatingAdmissionPolicyBinding](t, built, "ValidatingAdmissionPolicyBinding", b.name)
			if bind.Spec.PolicyName == vap.Name {
				if err := p.Bind(&bind); err != nil {
					t.Fatal(err)
				}
			}
		}
		policies = append(policies, p)
	}
	if got := shipped[registration.PolicyName("graft", "enabled")].Annotations["guarantee.graft.dev/revisions"]; got != "2026-11,2026-12" {
		t.Errorf("the default revision's policy accepts %q, want every served revision", got)
	}
	check := func(pod *corev1.Pod, rev string) string {
		t.Helper()
		ns := map[string]string{injectLabel: "enabled"}
		if rev != "" {
			ns[revLabel] = rev
		}
		denied, selected := "", 0
		for _, p := range policies {
			v, err := p.Admit(vapeval.Request{Object: pod, Namespace: vapeval.NamespaceOf("shop", ns)})
			if err != nil {
				t.Fatal(err)
			}
			if v.Selected {
				selected++
			}
			if denied == "" {
				denied = v.Denied
			}
		}
		if selected != 1 {
			t.Fatalf("%d policies select a namespace labelled %q", selected, rev)
		}
		return denied
	}
	for _, rev := range []string{"", "stable", "canary", "2026-11", "2026-12"} {
		for _, target := range []string{"2026-11", "2026-12"} {
			p := admitRev(t, revs, "enabled", target)
			denied := check(p, rev)
			want := rev == "" || rev == "stable" || rev == "canary" || rev == target
			if (denied == "") != want {
				t.Errorf("namespace labelled %q, Pod injected at %s: denied %q, want admitted %v", rev, target, denied, want)
			}
		}
	}
}

// admitRev injects an app Pod with revs for profile at revision rev and
// stores it as the API server would.
func admitRev(t *testing.T, revs *inject.Revisions, profile, rev string) *corev1.Pod {
	t.Helper()
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
		`"namespace":"shop","operation":"CREATE","object":` + appPod + `}}`
	resp, res, err := revs.Admit(nil, []byte(review), inject.Options{Profile: profile, Revision: rev})
	if err != nil || res.Decision != inject.DecisionInject {
		t.Fatalf("revision %s: %v %v", rev, res.Decision, err)
	}
	var r struct {
		Response struct{ Patch []byte } `json:"response"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(r.Response.Patch)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := patch.Apply([]byte(appPod))
	if err != nil {
		t.Fatal(err)
	}
	var p corev1.Pod
	if err := json.Unmarshal(patched, &p); err != nil {
		t.Fatal(err)
	}
	return guaranteecorpus.Store(&p, true)
}
