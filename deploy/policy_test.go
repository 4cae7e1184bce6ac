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

// The shipped policy's two messages, by what each starts with.
const (
	notInjectedMsg = "graft did not inject this Pod"
	lacksMsg       = "this Pod lacks containers graft injected"
)

// shortcut is the matchCondition that spares the API server the
// validations for a Pod they would admit.
const shortcut = "not-verifiably-injected"

// shipped is the shipped ValidatingAdmissionPolicy, compiled twice: as
// shipped, and without the shortcut condition.
type shipped struct{ full, noShortcut *policyEvaluator }

func shippedPolicy(t *testing.T) shipped {
	t.Helper()
	vap := one[admissionv1.ValidatingAdmissionPolicy](t, kustomize(t, "base"), "ValidatingAdmissionPolicy", "graft-injection-required")
	without := *vap.DeepCopy()
	without.Spec.MatchConditions = slices.DeleteFunc(without.Spec.MatchConditions, func(c admissionv1.MatchCondition) bool { return c.Name == shortcut })
	if len(without.Spec.MatchConditions) == len(vap.Spec.MatchConditions) {
		t.Fatalf("the policy has no matchCondition %s", shortcut)
	}
	return shipped{newPolicyEvaluator(t, vap), newPolicyEvaluator(t, without)}
}

// evaluate is the shipped policy's verdict on pod, after checking that the
// shortcut changes no decision and no message: a Pod it lets the policy
// skip is one the validations admit.
func (s shipped) evaluate(t *testing.T, pod string, nsLabels map[string]string) verdict {
	t.Helper()
	got, slow := s.full.evaluate(t, pod, nsLabels), s.noShortcut.evaluate(t, pod, nsLabels)
	if got.denied != slow.denied || (!slow.matched && got.matched) {
		t.Fatalf("the %s condition changes the verdict: %+v, without it %+v\npod: %s", shortcut, got, slow, pod)
	}
	return got
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

// TestPolicyReadsGraftStatus: for a Pod the real engine injected with each
// shipped profile, the policy admits it with graft.dev/status as graft
// writes it (version 2) and as graft wrote it before (version 1), and
// refuses it, with the
// message naming the cause, once any container graft added is missing. So
// a change to the annotation's format cannot silently make the policy
// refuse every injected Pod (or accept any).
func TestPolicyReadsGraftStatus(t *testing.T) {
	policy := shippedPolicy(t)
	engine, cfg := shippedEngine(t)
	for name := range cfg.Profiles {
		patched, res := admitPod(t, engine, name, appPod)
		if res.Decision != inject.DecisionInject {
			t.Fatalf("%s: decision %v (%v), want inject", name, res.Decision, res.Reason)
		}
		var injected corev1.Pod
		if err := json.Unmarshal(patched, &injected); err != nil {
			t.Fatal(err)
		}
		v1 := injected.DeepCopy()
		statusV1(t, v1)
		for form, pod := range map[string]*corev1.Pod{"v1": v1, "v2": &injected} {
			t.Run(name+"/"+form, func(t *testing.T) {
				ns := map[string]string{injectLabel: name}
				got := policy.evaluate(t, mustJSON(t, pod), ns)
				if got.denied != "" {
					t.Fatalf("the policy refuses the injected Pod: %+v\nstatus: %s", got, pod.Annotations["graft.dev/status"])
				}
				if got.matched {
					t.Errorf("the %s condition does not spare the API server the validations of a Pod graft injected", shortcut)
				}
				var added []string
				for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
					if c.Name != "app" {
						added = append(added, c.Name)
					}
				}
				if len(added) == 0 {
					t.Fatal("the engine added no container")
				}
				for _, gone := range added {
					p := pod.DeepCopy()
					p.Spec.InitContainers = slices.DeleteFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == gone })
					p.Spec.Containers = slices.DeleteFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == gone })
					got := policy.evaluate(t, mustJSON(t, p), ns)
					if !strings.HasPrefix(got.denied, lacksMsg) || !strings.Contains(got.denied, p.Annotations["graft.dev/status"]) {
						t.Errorf("without %s: %+v, want the message %q... quoting the status", gone, got, lacksMsg)
					}
				}
			})
		}
	}
}

// TestPolicyVerdicts pins the policy's answer for the Pods it must tell
// apart, graft.dev/status in both forms.
func TestPolicyVerdicts(t *testing.T) {
	policy := shippedPolicy(t)
	pod := func(annotations map[string]string, spec string) string {
		meta := map[string]any{"name": "p", "namespace": "apps"}
		if annotations != nil {
			meta["annotations"] = annotations
		}
		return `{"apiVersion":"v1","kind":"Pod","metadata":` + mustJSON(t, meta) + `,"spec":` + spec + `}`
	}
	const (
		app      = `{"containers":[{"name":"app"}]}`
		withInit = `{"initContainers":[{"name":"graft-proxy"}],"containers":[{"name":"app"}]}`
		withBoth = `{"initContainers":[{"name":"graft-proxy"}],"containers":[{"name":"app"},{"name":"graft-log"}]}`
	)
	status := func(s string) map[string]string { return map[string]string{"graft.dev/status": s} }
	cases := []struct {
		name string
		pod  string
		want string // "" admitted, "skip" not matched even without the shortcut, else the message's start
	}{
		{"no status", pod(nil, app), notInjectedMsg},
		{"foreign annotations only", pod(map[string]string{"a": "b"}, app), notInjectedMsg},
		{"v1 init container present", pod(status(`{"templates":["mesh-proxy"],"initContainers":["graft-proxy"]}`), withInit), ""},
		{"v1 init container missing", pod(status(`{"templates":["mesh-proxy"],"initContainers":["graft-proxy"]}`), app), lacksMsg},
		{"v1 both lists present", pod(status(`{"templates":["a","b"],"containers":["graft-log"],"initContainers":["graft-proxy"],"volumes":["v"]}`), withBoth), ""},
		{"v1 container missing", pod(status(`{"templates":["a","b"],"containers":["graft-log"],"initContainers":["graft-proxy"],"volumes":["v"]}`), withInit), lacksMsg},
		{"v1 volumes only", pod(status(`{"templates":["a"],"volumes":["v"]}`), app), ""},
		{"v1 sidecar name on a user container", pod(status(`{"templates":["mesh-proxy"],"initContainers":["graft-proxy"]}`), `{"containers":[{"name":"app"},{"name":"graft-proxy"}]}`), ""},
		{"v2 present", pod(status(`{"version":2,"injected":["graft-proxy","graft-log"],"templates":[{"name":"mesh-proxy","revision":"default","digest":"9f86d081884c7d65","initContainers":["graft-proxy"]},{"name":"log-shipper","revision":"default","digest":"0123456789abcdef","containers":["graft-log"]}]}`), withBoth), ""},
		{"v2 one missing", pod(status(`{"version":2,"injected":["graft-proxy","graft-log"],"templates":[{"name":"mesh-proxy","revision":"default","digest":"9f86d081884c7d65","initContainers":["graft-proxy"]},{"name":"log-shipper","revision":"default","digest":"0123456789abcdef","containers":["graft-log"]}]}`), withInit), lacksMsg},
		{"v2 reads the flat list, not the first template's", pod(status(`{"version":2,"injected":["graft-proxy","graft-log"],"templates":[{"name":"mesh-proxy","revision":"default","digest":"9f86d081884c7d65","initContainers":["graft-proxy"]}]}`), withInit), lacksMsg},
		{"v2 nothing injected", pod(status(`{"version":2,"templates":[{"name":"otel-agent","revision":"default","digest":"9f86d081884c7d65","appContainers":{"app":{"env":["OTEL_SERVICE_NAME"]}}}]}`), app), ""},
		{"hostNetwork, profile skips it", pod(nil, `{"hostNetwork":true,"containers":[{"name":"app"}]}`), ""},
		{"hostNetwork false", pod(nil, `{"hostNetwork":false,"containers":[{"name":"app"}]}`), notInjectedMsg},
		{"mirror Pod", pod(map[string]string{"kubernetes.io/config.mirror": "x"}, app), "skip"},
		{"selects no templates", pod(map[string]string{"graft.dev/templates": " , "}, app), "skip"},
		{"selects a template", pod(map[string]string{"graft.dev/templates": "mesh-proxy"}, app), notInjectedMsg},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := policy.evaluate(t, c.pod, map[string]string{injectLabel: "enabled"})
			switch {
			case c.want == "skip":
				if slow := policy.noShortcut.evaluate(t, c.pod, map[string]string{injectLabel: "enabled"}); slow.matched {
					t.Fatalf("%+v, want the policy not to apply", slow)
				}
			case c.want == "" && got.denied != "":
				t.Fatalf("refused: %s", got.denied)
			case !strings.HasPrefix(got.denied, c.want):
				t.Fatalf("%+v, want a refusal starting %q", got, c.want)
			}
		})
	}
	got := policy.evaluate(t, pod(nil, app), map[string]string{injectLabel: "mesh-proxy"})
	for _, s := range []string{"namespace apps", "label graft.dev/inject=mesh-proxy"} {
		if !strings.Contains(got.denied, s) {
			t.Errorf("message %q does not say %q", got.denied, s)
		}
	}
}

// TestPolicyAgreesOnEmptyTemplateSelection: a Pod whose graft.dev/templates
// selects nothing is skipped by the engine, and only such a Pod is left
// alone by the policy.
func TestPolicyAgreesOnEmptyTemplateSelection(t *testing.T) {
	policy := shippedPolicy(t)
	engine, _ := shippedEngine(t)
	for _, value := range []string{"", " ", ",", " , ,", "\t,\n", "agent", " agent ,", "agent,agent", ", mesh-proxy"} {
		annotations := mustJSON(t, map[string]string{"graft.dev/templates": value})
		pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"apps","annotations":` + annotations +
			`},"spec":{"containers":[{"name":"app","image":"app:1"}]}}`
		_, res := admitPod(t, engine, "", pod)
		skipped := res.Decision == inject.DecisionSkip && res.Reason == inject.ReasonNoTemplates
		if excused := !policy.noShortcut.evaluate(t, pod, map[string]string{injectLabel: "enabled"}).matched; excused != skipped {
			t.Errorf("graft.dev/templates=%q: engine skips for no templates = %v, policy leaves it alone = %v", value, skipped, excused)
		}
	}
}
