package inject

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/graftdev/graft/bench/corpus"
)

func TestAdmitRejectsMalformed(t *testing.T) {
	e := newTestEngine(t, goldenConfig())
	small := string(corpus.Review(corpus.Small))
	tests := []struct {
		name, body, want string
	}{
		{"empty", ``, "not a JSON object"},
		{"array", `[]`, "not a JSON object"},
		{"truncated", small[:len(small)/2], "invalid JSON"},
		{"no request", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, "request is missing"},
		{"wrong version", strings.Replace(small, "admission.k8s.io/v1", "admission.k8s.io/v2", 1), "apiVersion must be"},
		{"wrong kind", strings.Replace(small, `"kind":"AdmissionReview"`, `"kind":"Review"`, 1), "kind must be AdmissionReview"},
		{"no uid", strings.Replace(small, `"uid":"7c5e2b1a`, `"xuid":"7c5e2b1a`, 1), "uid is missing or invalid"},
		{"uid with quote escape", strings.Replace(small, `"uid":"7c5e2b1a`, `"uid":"\"7c5e2b1a`, 1), "uid is missing or invalid"},
		{"null object", strings.Replace(small, `"object":{`, `"object":null,"x":{`, 1), "object is missing"},
		{"spec not an object", string(corpus.Marshal("", "u1", "CREATE", "shop", map[string]any{"metadata": map[string]any{}, "spec": 1})), "not a readable Pod"},
		{"null metadata", string(corpus.Marshal("", "u1", "CREATE", "shop", map[string]any{"metadata": nil, "spec": map[string]any{}})), "not a readable Pod"},
		{"no spec", string(corpus.Marshal("", "u1", "CREATE", "shop", map[string]any{"metadata": map[string]any{}})), "not a readable Pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := e.Admit([]byte("keep"), []byte(tt.body), Options{})
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrMalformed mentioning %q", err, tt.want)
			}
			if string(out) != "keep" {
				t.Fatalf("dst changed on error: %q", out)
			}
		})
	}
}

func TestAdmitUnknownProfile(t *testing.T) {
	e := newTestEngine(t, goldenConfig())
	if _, _, err := e.Admit(nil, corpus.Review(corpus.Small), Options{Profile: "nope"}); !errors.Is(err, ErrUnknownProfile) {
		t.Fatalf("err = %v, want ErrUnknownProfile", err)
	}
}

func TestNewValidatesConfig(t *testing.T) {
	set := testTemplates(t)
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no profiles", Config{}, "no profiles"},
		{"missing default", Config{DefaultProfile: "x", Profiles: map[string]Profile{"y": {Templates: []string{"agent"}}}}, `default profile "x"`},
		{"unknown template", Config{Profiles: map[string]Profile{"enabled": {Templates: []string{"nope"}}}}, `unknown template "nope"`},
		{"unknown allowed template", Config{Profiles: map[string]Profile{"enabled": {Templates: []string{"agent"}, AllowedTemplates: []string{"agent", "nope"}}}}, `unknown template "nope"`},
		{"no templates", Config{Profiles: map[string]Profile{"enabled": {}}}, "no templates"},
		{"duplicate template", Config{Profiles: map[string]Profile{"enabled": {Templates: []string{"agent", "agent"}}}}, "listed twice"},
		{"bad failure mode", Config{Profiles: map[string]Profile{"enabled": {Templates: []string{"agent"}, FailureMode: "maybe"}}}, "failureMode"},
		{"bad param value", Config{Profiles: map[string]Profile{"enabled": {Templates: []string{"agent"}, Params: map[string]map[string]string{"agent": {"cpu": "lots"}}}}}, "agent.cpu"},
		{"unknown param", Config{Profiles: map[string]Profile{"enabled": {Templates: []string{"agent"}, Params: map[string]map[string]string{"agent": {"colour": "red"}}}}}, "agent.colour"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg, set)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrConfig mentioning %q", err, tt.want)
			}
		})
	}
}

// steppingClock advances by step on every reading, so a deadline one step
// away passes during the request without any sleep.
type steppingClock struct {
	t    time.Time
	step time.Duration
}

func (c *steppingClock) now() time.Time {
	c.t = c.t.Add(c.step)
	return c.t
}

func TestBudgetExceededFollowsFailureMode(t *testing.T) {
	cfg := goldenConfig()
	cfg.Profiles["strict"] = Profile{Templates: []string{"agent"}, FailureMode: FailDeny}
	clock := &steppingClock{t: time.Unix(1e9, 0), step: time.Millisecond}
	e := newTestEngine(t, cfg, WithClock(clock.now))
	body := corpus.Review(corpus.Small)
	for _, tt := range []struct {
		profile  string
		decision Decision
		allowed  bool
		text     string
	}{
		{"agent", DecisionFailOpen, true, "sidecars not injected (budget-exceeded)"},
		{"strict", DecisionDeny, false, "could not inject sidecars (budget-exceeded)"},
	} {
		out, res, err := e.Admit(nil, body, Options{Profile: tt.profile, Deadline: clock.t.Add(time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Decision != tt.decision || res.Reason != ReasonBudgetExceeded {
			t.Errorf("%s: result %v/%v, want %v/budget-exceeded", tt.profile, res.Decision, res.Reason, tt.decision)
		}
		var r struct {
			Response struct {
				Allowed  bool     `json:"allowed"`
				Patch    []byte   `json:"patch"`
				Warnings []string `json:"warnings"`
				Status   struct {
					Message string `json:"message"`
				} `json:"status"`
			} `json:"response"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		msg := r.Response.Status.Message + strings.Join(r.Response.Warnings, " ")
		if r.Response.Allowed != tt.allowed || r.Response.Patch != nil || !strings.Contains(msg, tt.text) {
			t.Errorf("%s: response %s", tt.profile, out)
		}
	}
	// With a distant deadline the same engine injects.
	if _, res, _ := e.Admit(nil, body, Options{Deadline: clock.t.Add(time.Hour)}); res.Decision != DecisionInject {
		t.Errorf("with time left: %v/%v, want inject", res.Decision, res.Reason)
	}
}

func TestFailAnswersOverload(t *testing.T) {
	e := newTestEngine(t, goldenConfig())
	out, res, err := e.Fail(nil, corpus.Review(corpus.V1beta1), Options{}, ReasonOverload)
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision != DecisionFailOpen || res.Reason != ReasonOverload || res.Warnings != 1 {
		t.Errorf("result %+v", res)
	}
	if !strings.HasPrefix(string(out), `{"apiVersion":"admission.k8s.io/v1beta1"`) || !strings.Contains(string(out), `"allowed":true`) {
		t.Errorf("response %s", out)
	}
	if _, _, err := e.Fail(nil, []byte("{"), Options{}, ReasonOverload); !errors.Is(err, ErrMalformed) {
		t.Errorf("malformed: %v", err)
	}
}

func TestExplainReportsParamSources(t *testing.T) {
	cfg := goldenConfig()
	cfg.Profiles["tuned"] = Profile{Templates: []string{"agent"}, Params: map[string]map[string]string{"agent": {"memory": "128Mi"}}}
	e := newTestEngine(t, cfg)
	var rv map[string]any
	if err := json.Unmarshal(corpus.Review(corpus.Small), &rv); err != nil {
		t.Fatal(err)
	}
	meta := rv["request"].(map[string]any)["object"].(map[string]any)["metadata"].(map[string]any)
	meta["annotations"].(map[string]any)["graft.dev/agent.cpu"] = "0.5"
	body, _ := json.Marshal(rv)
	ex, err := e.Explain(body, Options{Profile: "tuned"})
	if err != nil {
		t.Fatal(err)
	}
	src := map[string]string{}
	for _, p := range ex.Params {
		src[p.Param] = p.Source + "=" + p.Value
	}
	want := map[string]string{"cpu": "annotation=0.5", "memory": "profile=128Mi", "port": "default=9901"}
	for k, v := range want {
		if src[k] != v {
			t.Errorf("param %s: %q, want %q", k, src[k], v)
		}
	}
	if ex.Result.Decision != DecisionInject || len(ex.Patch) == 0 || ex.Templates[0] != "agent" {
		t.Errorf("explanation %+v", ex)
	}
}

// TestPlanCacheServesRepeatedOverrides checks that a second Pod with the
// same annotations reuses the rendered plan.
func TestPlanCacheServesRepeatedOverrides(t *testing.T) {
	e := newTestEngine(t, goldenConfig())
	var rv map[string]any
	_ = json.Unmarshal(corpus.Review(corpus.Small), &rv)
	meta := rv["request"].(map[string]any)["object"].(map[string]any)["metadata"].(map[string]any)
	meta["annotations"].(map[string]any)["graft.dev/agent.port"] = "9950"
	body, _ := json.Marshal(rv)
	e.Admit(nil, body, Options{})
	before := len(e.impl.plans.m)
	dst := make([]byte, 0, 64<<10)
	allocs := testing.AllocsPerRun(50, func() { dst, _, _ = e.Admit(dst[:0], body, Options{}) })
	if len(e.impl.plans.m) != before || before != 1 {
		t.Errorf("plan cache has %d entries, want 1", len(e.impl.plans.m))
	}
	if allocs != 0 {
		t.Errorf("cached override path: %v allocations, want 0", allocs)
	}
}

// TestCachedPlanOutlivesTheBody: the server reuses a request's buffer once
// the call returns, so what a cached plan reports (template names, the
// parameter values behind it) must not be read from the body it was
// built from.
func TestCachedPlanOutlivesTheBody(t *testing.T) {
	e := newTestEngine(t, DefaultConfig())
	var rv map[string]any
	if err := json.Unmarshal(corpus.Review(corpus.Small), &rv); err != nil {
		t.Fatal(err)
	}
	meta := rv["request"].(map[string]any)["object"].(map[string]any)["metadata"].(map[string]any)
	meta["annotations"].(map[string]any)["graft.dev/templates"] = "mesh-proxy,otel-agent"
	meta["annotations"].(map[string]any)["graft.dev/otel-agent.serviceNameLabel"] = "app.example.com/name"
	body, _ := json.Marshal(rv)
	first := bytes.Clone(body)
	if _, _, err := e.Admit(nil, first, Options{}); err != nil {
		t.Fatal(err)
	}
	for i := range first {
		first[i] = 'X'
	}
	ex, err := e.Explain(body, Options{}) // served from the plan cache
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ex.Result.Templates, ","); got != "mesh-proxy,otel-agent" {
		t.Errorf("templates %q, want mesh-proxy,otel-agent", got)
	}
	found := false
	for _, p := range ex.Params {
		if p.Template == "otel-agent" && p.Param == "serviceNameLabel" {
			found = true
			if p.Value != "app.example.com/name" || p.Source != "annotation" {
				t.Errorf("otel-agent.serviceNameLabel = %q from %s, want app.example.com/name from annotation", p.Value, p.Source)
			}
		}
	}
	if !found {
		t.Errorf("no otel-agent.serviceNameLabel in %+v", ex.Params)
	}
}

// TestShapeIgnoresListLengths: Pods that differ only in how many env vars,
// mounts or containers-worth of elements they hold share their patch
// shapes, so a huge Pod never costs a fresh diff over its whole list.
func TestShapeIgnoresListLengths(t *testing.T) {
	e := newTestEngine(t, goldenConfig())
	admit := func(s corpus.Spec) int {
		review := corpus.Build(s)
		applyResponse(t, review, mustAdmit(t, e, review, Options{}))
		return len(e.impl.shapes.m)
	}
	base := admit(corpus.Spec{Containers: 1, EnvPerContain: 3, Volumes: 2, Seed: 1})
	for i, n := range []int{50, 5000, 4999} {
		if got := admit(corpus.Spec{Containers: 1, EnvPerContain: n, Volumes: 2, Seed: uint64(i + 2)}); got != base {
			t.Errorf("%d env vars: %d shapes cached, want %d", n, got, base)
		}
	}
	// No env at all writes env: null: one more shape, for that list only.
	if got := admit(corpus.Spec{Containers: 1, EnvPerContain: 0, Volumes: 2, Seed: 5}); got != base+1 {
		t.Errorf("no env: %d shapes cached, want %d", got, base+1)
	}
}

// TestShapeIgnoresContainerCount: how many app containers a Pod has adds
// no shape (each container's lists are shaped alone), so the shape cache
// holds keys and recipes the size of the plan, never of the Pod.
func TestShapeIgnoresContainerCount(t *testing.T) {
	e := newTestEngine(t, DefaultConfig())
	var want int
	for i, n := range []int{1, 10, 1000, 999} {
		review := manyContainersReview(n)
		applyResponse(t, review, mustAdmit(t, e, review, Options{}))
		got := len(e.impl.shapes.m)
		if i == 0 {
			want = got
		} else if got != want {
			t.Errorf("%d containers: %d shapes cached, want %d", n, got, want)
		}
		for k := range e.impl.shapes.m {
			if len(k) > 64 {
				t.Errorf("%d containers: a shape key of %d bytes", n, len(k))
			}
		}
	}
}
