package inject

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/templates"
)

// osEngine serves the agent (linux, the default) and a template that
// declares both systems.
func osEngine(t *testing.T) *Engine {
	t.Helper()
	both, err := templates.LoadFS(fstest.MapFS{"both.yaml": {Data: []byte(`name: both
description: runs on linux and windows.
os: [linux, windows]
podSecurity: baseline
fragment: |
  initContainers:
    - {name: graft-both, image: example.com/both:1, restartPolicy: Always}
`)}})
	if err != nil {
		t.Fatal(err)
	}
	set := testTemplates(t).With(both)
	e, err := New(Config{DefaultProfile: "agent", Profiles: map[string]Profile{
		"agent": {Templates: []string{"agent"}},
		"both":  {Templates: []string{"both"}, PodSecurity: PodSecurity{MaxLevel: templates.LevelBaseline}},
	}}, set)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestOSDetection(t *testing.T) {
	e := osEngine(t)
	term := func(exprs ...map[string]any) map[string]any {
		l := make([]any, len(exprs))
		for i, x := range exprs {
			l[i] = x
		}
		return map[string]any{"matchExpressions": l}
	}
	expr := func(key, op string, vals ...string) map[string]any {
		x := map[string]any{"key": key, "operator": op}
		if vals != nil {
			l := make([]any, len(vals))
			for i, v := range vals {
				l[i] = v
			}
			x["values"] = l
		}
		return x
	}
	required := func(terms ...map[string]any) map[string]any {
		l := make([]any, len(terms))
		for i, x := range terms {
			l[i] = x
		}
		return map[string]any{"nodeAffinity": map[string]any{
			"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": l}}}
	}
	const osKey = "kubernetes.io/os"
	tests := []struct {
		name    string
		profile string
		spec    map[string]any
		skip    bool
		// why is the field explain names, when skipped.
		why string
	}{
		{"no word about it", "agent", nil, false, ""},
		{"os windows", "agent", map[string]any{"os": map[string]any{"name": "windows"}}, true, "spec.os.name"},
		{"os linux", "agent", map[string]any{"os": map[string]any{"name": "linux"}}, false, ""},
		{"os null", "agent", map[string]any{"os": nil}, false, ""},
		{"node selector windows", "agent", map[string]any{"nodeSelector": map[string]any{osKey: "windows", "zone": "a"}}, true, "spec.nodeSelector kubernetes.io/os"},
		{"node selector linux", "agent", map[string]any{"nodeSelector": map[string]any{osKey: "linux"}}, false, ""},
		{"node selector on another label", "agent", map[string]any{"nodeSelector": map[string]any{"kubernetes.io/arch": "arm64"}}, false, ""},
		{"required affinity In windows", "agent", map[string]any{"affinity": required(term(expr(osKey, "In", "windows")))}, true, "spec.affinity.nodeAffinity"},
		{"required affinity NotIn linux", "agent", map[string]any{"affinity": required(term(expr("zone", "In", "a"), expr(osKey, "NotIn", "linux")))}, true, "spec.affinity"},
		{"one term of two allows linux", "agent", map[string]any{"affinity": required(term(expr(osKey, "In", "windows")), term(expr(osKey, "In", "linux")))}, false, ""},
		{"a term without an os expression", "agent", map[string]any{"affinity": required(term(expr(osKey, "In", "windows")), term(expr("zone", "In", "a")))}, false, ""},
		{"In linux and windows", "agent", map[string]any{"affinity": required(term(expr(osKey, "In", "linux", "windows")))}, false, ""},
		{"DoesNotExist", "agent", map[string]any{"affinity": required(term(expr(osKey, "DoesNotExist")))}, true, "spec.affinity"},
		{"Exists", "agent", map[string]any{"affinity": required(term(expr(osKey, "Exists")))}, false, ""},
		{"preferred affinity only", "agent", map[string]any{"affinity": map[string]any{"nodeAffinity": map[string]any{
			"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"weight": 1, "preference": term(expr(osKey, "In", "windows"))}}}}}, false, ""},
		{"pod affinity alone", "agent", map[string]any{"affinity": map[string]any{"podAffinity": map[string]any{}}}, false, ""},
		{"a template for both systems", "both", map[string]any{"os": map[string]any{"name": "windows"}}, false, ""},
		{"a template for both, another system", "both", map[string]any{"nodeSelector": map[string]any{osKey: "plan9"}}, true, "spec.nodeSelector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := map[string]any{
				"metadata": map[string]any{"name": "web"},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "app:1"}}},
			}
			for k, v := range tt.spec {
				pod["spec"].(map[string]any)[k] = v
			}
			review := corpus.Marshal("", "u-os", "CREATE", "shop", pod)
			_, res, err := e.Admit(nil, review, Options{Profile: tt.profile})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Decision == DecisionSkip && res.Reason == ReasonOS; got != tt.skip {
				t.Fatalf("%v (%v), skipped for os: %v, want %v", res.Decision, res.Reason, got, tt.skip)
			}
			if !tt.skip && res.Decision != DecisionInject {
				t.Fatalf("%v (%v), want inject", res.Decision, res.Reason)
			}
			if tt.skip {
				ex, err := e.Explain(review, Options{Profile: tt.profile})
				if err != nil || !strings.Contains(ex.Message, tt.why) {
					t.Fatalf("explain says %q (%v), want it to name %s", ex.Message, err, tt.why)
				}
			}
		})
	}
}

// TestOSEscapedValue: a value written with escapes decides as a JSON
// decoder reads it.
func TestOSEscapedValue(t *testing.T) {
	e := osEngine(t)
	review := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},` +
		`"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"shop","operation":"CREATE",` +
		`"object":{"metadata":{"name":"web"},"spec":{"os":{"name":"\u0077indows"},"containers":[{"name":"app","image":"app:1"}]}}}}`)
	_, res, err := e.Admit(nil, review, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != ReasonOS {
		t.Fatalf("%v (%v), want skipped for os", res.Decision, res.Reason)
	}
}
