package deploy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

// notInjectedMsg starts the shipped policy's message.
const notInjectedMsg = "graft did not inject this Pod"

// shippedPolicy is the shipped ValidatingAdmissionPolicy, compiled. It
// must be one set of expressions: kube-apiserver converts the Pod once per
// set it evaluates, and that conversion is what the policy costs.
func shippedPolicy(t *testing.T) *policyEvaluator {
	t.Helper()
	vap := one[admissionv1.ValidatingAdmissionPolicy](t, kustomize(t, "base"), "ValidatingAdmissionPolicy", "graft-injection-required")
	if len(vap.Spec.MatchConditions) != 0 || len(vap.Spec.AuditAnnotations) != 0 || len(vap.Spec.Validations) != 1 {
		t.Fatalf("%d matchConditions, %d audit annotations, %d validations: want the validation alone",
			len(vap.Spec.MatchConditions), len(vap.Spec.AuditAnnotations), len(vap.Spec.Validations))
	}
	return newPolicyEvaluator(t, vap)
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

// statusV1 rewrites a Pod's graft.dev/status from the version 2 record
// graft writes into version 1, which graft wrote before and which Pods
// created then still carry.
func statusV1(t *testing.T, p *corev1.Pod) {
	t.Helper()
	st, err := inject.ParseStatus(p.Annotations["graft.dev/status"])
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	var v1 struct {
		Templates      []string `json:"templates"`
		Containers     []string `json:"containers,omitempty"`
		InitContainers []string `json:"initContainers,omitempty"`
		Volumes        []string `json:"volumes,omitempty"`
	}
	for _, ts := range st.Templates {
		v1.Templates = append(v1.Templates, ts.Name)
		v1.Containers = append(v1.Containers, ts.Containers...)
		v1.InitContainers = append(v1.InitContainers, ts.InitContainers...)
		v1.Volumes = append(v1.Volumes, ts.Volumes...)
	}
	p.Annotations["graft.dev/status"] = mustJSON(t, v1)
}

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

// TestPolicyPassesWhatGraftInjects: for a Pod the real engine injected with
// each shipped profile, the policy does not apply (the objectSelector
// passes it by its graft.dev/injected label, without a conversion).
// Without the label, a Pod carrying graft.dev/status as graft writes it
// (version 2) or wrote it before (version 1) is admitted. A container a
// later mutator removed is not the policy's to see: graft restores it when
// called again.
func TestPolicyPassesWhatGraftInjects(t *testing.T) {
	policy := shippedPolicy(t)
	engine, cfg := shippedEngine(t)
	for name := range cfg.Profiles {
		t.Run(name, func(t *testing.T) {
			patched, res := admitPod(t, engine, name, appPod)
			if res.Decision != inject.DecisionInject {
				t.Fatalf("decision %v (%v), want inject", res.Decision, res.Reason)
			}
			var injected corev1.Pod
			if err := json.Unmarshal(patched, &injected); err != nil {
				t.Fatal(err)
			}
			ns := map[string]string{injectLabel: name}
			if got := policy.evaluate(t, mustJSON(t, &injected), ns); got.matched {
				t.Fatalf("the policy applies to a Pod graft injected (labels %v): %+v", injected.Labels, got)
			}
			unlabelled := injected.DeepCopy()
			delete(unlabelled.Labels, "graft.dev/injected")
			v1 := unlabelled.DeepCopy()
			statusV1(t, v1)
			for form, pod := range map[string]*corev1.Pod{"v1": v1, "v2": unlabelled} {
				if got := policy.evaluate(t, mustJSON(t, pod), ns); got.denied != "" {
					t.Errorf("%s status, no label: refused: %s", form, got.denied)
				}
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
				restored, _ := admitPod(t, engine, name, mustJSON(t, p))
				var r corev1.Pod
				if err := json.Unmarshal(restored, &r); err != nil {
					t.Fatal(err)
				}
				if !slices.ContainsFunc(append(r.Spec.InitContainers, r.Spec.Containers...), func(c corev1.Container) bool { return c.Name == gone }) {
					t.Errorf("graft called again does not restore %s", gone)
				}
			}
		})
	}
}

// TestPolicyVerdicts pins the policy's answer for the Pods it must tell
// apart.
func TestPolicyVerdicts(t *testing.T) {
	policy := shippedPolicy(t)
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
	const app = `{"containers":[{"name":"app"}]}`
	status := func(s string) map[string]string { return map[string]string{"graft.dev/status": s} }
	cases := []struct {
		name string
		pod  string
		want string // "" admitted, "skip" not evaluated, else the message's start
	}{
		{"no status", pod(nil, nil, app), notInjectedMsg},
		{"foreign labels and annotations only", pod(map[string]string{"app": "web"}, map[string]string{"a": "b"}, app), notInjectedMsg},
		{"labelled injected", pod(map[string]string{"graft.dev/injected": "default"}, nil, app), "skip"},
		{"labelled injected, any revision", pod(map[string]string{"graft.dev/injected": "2026-12"}, nil, app), "skip"},
		{"opted out", pod(map[string]string{"graft.dev/inject": "false"}, nil, app), "skip"},
		{"opt-out label with another value", pod(map[string]string{"graft.dev/inject": "true"}, nil, app), notInjectedMsg},
		{"v1 status", pod(nil, status(`{"templates":["mesh-proxy"],"initContainers":["graft-proxy"]}`), app), ""},
		{"v2 status", pod(nil, status(`{"version":2,"injected":["graft-proxy"],"templates":[{"name":"mesh-proxy","revision":"default","digest":"9f86d081884c7d65","initContainers":["graft-proxy"]}]}`), app), ""},
		{"v2 status, nothing injected (onConflict: keep)", pod(nil, status(`{"version":2}`), app), ""},
		{"hostNetwork, profile skips it", pod(nil, nil, `{"hostNetwork":true,"containers":[{"name":"app"}]}`), ""},
		{"hostNetwork false", pod(nil, nil, `{"hostNetwork":false,"containers":[{"name":"app"}]}`), notInjectedMsg},
		{"mirror Pod", pod(nil, map[string]string{"kubernetes.io/config.mirror": "x"}, app), ""},
		{"selects no templates", pod(nil, map[string]string{"graft.dev/templates": " , "}, app), ""},
		{"selects a template", pod(nil, map[string]string{"graft.dev/templates": "mesh-proxy"}, app), notInjectedMsg},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := policy.evaluate(t, c.pod, map[string]string{injectLabel: "enabled"})
			switch {
			case c.want == "skip":
				if got.matched {
					t.Fatalf("%+v, want the policy not to apply", got)
				}
			case !got.matched:
				t.Fatalf("the policy does not apply, want it evaluated")
			case c.want == "" && got.denied != "":
				t.Fatalf("refused: %s", got.denied)
			case !strings.HasPrefix(got.denied, c.want):
				t.Fatalf("%+v, want a refusal starting %q", got, c.want)
			}
		})
	}
	got := policy.evaluate(t, pod(nil, nil, app), map[string]string{injectLabel: "mesh-proxy"})
	for _, s := range []string{"namespace apps", "label graft.dev/inject=mesh-proxy"} {
		if !strings.Contains(got.denied, s) {
			t.Errorf("message %q does not say %q", got.denied, s)
		}
	}
}

// TestPolicyAgreesWithEngineSkips: every Pod the real engine admits, the
// policy admits: those graft injects carry the label and are not even
// evaluated; those it leaves alone without the label (an empty template
// selection, a mirror Pod, a hostNetwork Pod, a Pod whose every template
// conflicts under onConflict: keep) pass the validation.
func TestPolicyAgreesWithEngineSkips(t *testing.T) {
	policy := shippedPolicy(t)
	engine, cfg := shippedEngine(t)
	set, err := templates.LoadDir("base/templates")
	if err != nil {
		t.Fatal(err)
	}
	keeper, err := inject.New(withConflictKeep(cfg), set)
	if err != nil {
		t.Fatal(err)
	}
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
		{"every template conflicts, kept", podWith(nil, `{"initContainers":[{"name":"graft-proxy","image":"mine:1"}],"containers":[{"name":"app","image":"app:1"}]}`), keeper},
		{"every template conflicts, denied", podWith(nil, `{"initContainers":[{"name":"graft-proxy","image":"mine:1"}],"containers":[{"name":"app","image":"app:1"}]}`), engine},
	}
	for _, value := range []string{"", " ", ",", " , ,", "\t,\n", "mesh-proxy", " mesh-proxy ,", "mesh-proxy,mesh-proxy", ", secrets-agent"} {
		cases = append(cases, pod{"graft.dev/templates=" + value, podWith(map[string]string{"graft.dev/templates": value}, app), engine})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			patched, res := admitPod(t, c.engine, "", c.pod)
			if res.Decision == inject.DecisionDeny {
				return // graft refuses it itself: the policy never sees it
			}
			var p corev1.Pod
			if err := json.Unmarshal(patched, &p); err != nil {
				t.Fatal(err)
			}
			got := policy.evaluate(t, string(patched), map[string]string{injectLabel: "enabled"})
			if got.denied != "" {
				t.Errorf("graft admits the Pod (%v/%v), yet the policy refuses it: %s", res.Decision, res.Reason, got.denied)
			}
			// A Pod graft added a container to carries the label, and
			// costs the policy nothing.
			if len(p.Spec.InitContainers)+len(p.Spec.Containers) > strings.Count(c.pod, `"image"`) && got.matched {
				t.Errorf("graft injected the Pod, yet the policy applies (labels %v)", p.Labels)
			}
		})
	}
}
