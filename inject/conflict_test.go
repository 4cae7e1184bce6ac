package inject

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/internal/names"
)

// twoContainerPod is a Pod with app containers web and worker and a
// config volume; edit changes it before it is admitted.
func twoContainerPod(edit func(pod map[string]any)) map[string]any {
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web-0", "namespace": "shop", "annotations": map[string]any{"team.example.com/owner": "payments"}},
		"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": "web:1"}, map[string]any{"name": "worker", "image": "worker:1"}},
			"volumes":    []any{map[string]any{"name": "config", "emptyDir": map[string]any{}}},
		}}
	if edit != nil {
		edit(pod)
	}
	return pod
}

func appendTo(pod map[string]any, key string, v any) {
	spec := pod["spec"].(map[string]any)
	l, _ := spec[key].([]any)
	spec[key] = append(l, v)
}

func setStatusAnnotation(value string) func(map[string]any) {
	return func(pod map[string]any) {
		pod["metadata"].(map[string]any)["annotations"].(map[string]any)[names.Status] = value
	}
}

// TestConflicts: an object named like one of graft's is graft's own only
// if the status names it; otherwise the profile denies the Pod naming the
// object, the template and the option, or keeps the Pod's object and
// leaves the whole template out, recording nothing of it.
func TestConflicts(t *testing.T) {
	e := newTestEngine(t, goldenConfig())
	userContainer := func(p map[string]any) {
		appendTo(p, "containers", map[string]any{"name": "graft-agent", "image": "mine:1"})
	}
	userInit := func(p map[string]any) {
		appendTo(p, "initContainers", map[string]any{"name": "graft-agent", "image": "mine:1"})
	}
	userVolume := func(p map[string]any) {
		appendTo(p, "volumes", map[string]any{"name": "graft-agent-run", "emptyDir": map[string]any{}})
	}
	tests := []struct {
		name    string
		profile string
		pod     func(map[string]any)
		// want is the denial's message or the warning, "" for neither.
		decision Decision
		want     string
		// recorded is the templates the status records afterwards.
		recorded []string
	}{
		{"user container, deny", "agent", userContainer, DecisionDeny,
			`Pod already has container "graft-agent", which graft did not inject: template agent renders it as an init container with restartPolicy: Always (a native sidecar); rename it, or set onConflict: keep in profile "agent" to admit such Pods without agent`, nil},
		{"user init container, deny", "agent", userInit, DecisionDeny, `Pod already has init container "graft-agent"`, nil},
		{"user volume, deny", "agent", userVolume, DecisionDeny, `Pod already has volume "graft-agent-run"`, nil},
		{"user container, keep", "keep", userContainer, DecisionInject,
			`graft: template agent not injected: the Pod already has container "graft-agent", which graft did not inject`, nil},
		{"user volume, keep", "keep", userVolume, DecisionInject, `the Pod already has volume "graft-agent-run"`, nil},
		// A record is no evidence: the container is not graft's render.
		{"named by a status, not graft's", "agent", func(p map[string]any) {
			userInit(p)
			setStatusAnnotation(`{"version":2,"templates":[{"name":"other","revision":"default","digest":"x","initContainers":["graft-agent"]}]}`)(p)
		}, DecisionDeny, `Pod already has init container "graft-agent", which graft did not inject: its image differs from template agent's`, nil},
		{"a version 1 status names it: upgraded", "agent", func(p map[string]any) {
			userVolume(p)
			setStatusAnnotation(`{"templates":["agent"],"volumes":["graft-agent-run"]}`)(p)
		}, DecisionInject, "graft: upgraded template agent from a version 1 graft.dev/status", []string{"agent"}},
		{"a status graft cannot read names nothing", "agent", func(p map[string]any) {
			userVolume(p)
			setStatusAnnotation(`{"version":2,"templates":[{"name":"agent","volumes":["graft-agent-run"]`)(p)
		}, DecisionDeny, `Pod already has volume "graft-agent-run"`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			review := podReview(twoContainerPod(tt.pod), "conflict")
			resp, res, err := e.Admit(nil, review, Options{Profile: tt.profile})
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Response struct {
					Warnings []string `json:"warnings"`
					Status   struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"status"`
				} `json:"response"`
			}
			if err := json.Unmarshal(resp, &r); err != nil {
				t.Fatal(err)
			}
			if res.Decision != tt.decision {
				t.Fatalf("decision %v (%v), want %v: %s", res.Decision, res.Reason, tt.decision, resp)
			}
			got := strings.Join(append(r.Response.Warnings, r.Response.Status.Message), "\n")
			if !strings.Contains(got, tt.want) || (tt.want == "") != (got == "") {
				t.Fatalf("message and warnings %q, want %q", got, tt.want)
			}
			if tt.decision == DecisionDeny {
				if res.Reason != ReasonConflict || r.Response.Status.Code != 400 {
					t.Fatalf("denied with %v, code %d; want conflict, 400", res.Reason, r.Response.Status.Code)
				}
				return
			}
			pod := decodeGeneric(t, applyResponse(t, review, resp))
			st, err := ParseStatus(pod["metadata"].(map[string]any)["annotations"].(map[string]any)[names.Status].(string))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, ts := range st.Templates {
				names = append(names, ts.Name)
			}
			if !slices.Equal(names, tt.recorded) {
				t.Fatalf("status records %v, want %v: %s", names, tt.recorded, st.Value())
			}
			if tt.profile == "keep" && (len(st.Injected) != 0 || findNamed(pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["env"], "GRAFT_AGENT_ADDR") != nil) {
				t.Fatalf("keep injected part of the template: %v", pod)
			}
		})
	}
}

// TestStatusRecordsOnlyWhatGraftAdded: an env var an app container may
// set itself, or a mount of graft's volume at graft's path, that the Pod
// already had is not recorded, and what another mutator's container gets
// on reinvocation is added to the record.
func TestStatusRecordsOnlyWhatGraftAdded(t *testing.T) {
	cfg := goldenConfig()
	cfg.Profiles["otel-agent-log-shipper"] = Profile{Templates: []string{"otel-agent", "log-shipper"}}
	e := newTestEngine(t, cfg)
	pod := twoContainerPod(func(p map[string]any) {
		web := p["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		web["env"] = []any{map[string]any{"name": "OTEL_SERVICE_NAME", "value": "mine"}}
		web["volumeMounts"] = []any{map[string]any{"name": "graft-logs", "mountPath": "/var/log/app"}}
	})
	o := Options{Profile: "otel-agent-log-shipper"}
	first := admitGeneric(t, e, o, pod)
	appendTo(first, "containers", map[string]any{"name": "foreign", "image": "f:1"})
	second := admitGeneric(t, e, o, first)
	st, err := ParseStatus(second["metadata"].(map[string]any)["annotations"].(map[string]any)[names.Status].(string))
	if err != nil {
		t.Fatal(err)
	}
	otel, shipper := st.Template("otel-agent"), st.Template("log-shipper")
	if otel == nil || shipper == nil {
		t.Fatalf("status %s: want both templates", st.Value())
	}
	if env := otel.AppContainers["web"].Env; slices.Contains(env, "OTEL_SERVICE_NAME") || !slices.Contains(env, "OTEL_TRACES_SAMPLER") {
		t.Errorf("web's recorded env %v: want graft's without the app's own OTEL_SERVICE_NAME", env)
	}
	if !slices.Contains(otel.AppContainers["foreign"].Env, "OTEL_SERVICE_NAME") || !slices.Contains(otel.AppContainers["worker"].Env, "OTEL_SERVICE_NAME") {
		t.Errorf("otel-agent's record %v: want worker's and foreign's OTEL_SERVICE_NAME", otel.AppContainers)
	}
	want := map[string]AppEdits{"worker": {VolumeMounts: []string{"graft-logs"}}, "foreign": {VolumeMounts: []string{"graft-logs"}}}
	if len(shipper.AppContainers) != 2 || !slicesEqualEdits(shipper.AppContainers, want) {
		t.Errorf("log-shipper's record %v: want only worker's and foreign's mounts", shipper.AppContainers)
	}
	if !slices.Equal(st.Injected, []string{"graft-otel-agent", "graft-log-shipper"}) {
		t.Fatalf("injected %v", st.Injected)
	}
}

func slicesEqualEdits(a, b map[string]AppEdits) bool {
	for k, v := range b {
		if !slices.Equal(a[k].Env, v.Env) || !slices.Equal(a[k].VolumeMounts, v.VolumeMounts) {
			return false
		}
	}
	return len(a) == len(b)
}

// TestExplainComparesStatusWithPlan: explain reports the status as read
// and, per template of the plan, whether the Pod holds it current, stale,
// missing or in conflict, and the containers the status names that the
// Pod lacks.
func TestExplainComparesStatusWithPlan(t *testing.T) {
	e := newTestEngine(t, goldenConfig())
	injected := admitGeneric(t, e, Options{Profile: "agent"}, twoContainerPod(nil))
	stale := decodeGeneric(t, mustJSON(t, injected))
	setStatusAnnotation(strings.Replace(injected["metadata"].(map[string]any)["annotations"].(map[string]any)[names.Status].(string),
		e.impl.profiles["agent"].def.plan.tmpls[0].digest, "0000000000000000", 1))(stale)
	spoofed := twoContainerPod(setStatusAnnotation(`{"version":2,"injected":["graft-agent"],"templates":[{"name":"agent","revision":"default","digest":"x","initContainers":["graft-agent"]}]}`))
	tests := []struct {
		name            string
		pod             map[string]any
		state, conflict string
		absent          []string
		statusErr       bool
	}{
		{"fresh", twoContainerPod(nil), StateMissing, "", nil, false},
		{"injected", injected, StateCurrent, "", nil, false},
		{"older digest", stale, StateStale, "", nil, false},
		{"conflict", twoContainerPod(func(p map[string]any) {
			appendTo(p, "volumes", map[string]any{"name": "graft-agent-run", "emptyDir": map[string]any{}})
		}), StateConflict, `volume "graft-agent-run"`, nil, false},
		{"spoofed", spoofed, StateStale, "", []string{"graft-agent"}, false},
		{"unreadable", twoContainerPod(setStatusAnnotation("{")), StateMissing, "", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex, err := e.Explain(podReview(tt.pod, "explain"), Options{Profile: "agent"})
			if err != nil {
				t.Fatal(err)
			}
			if len(ex.Plan) != 1 || ex.Plan[0].Name != "agent" || ex.Plan[0].Revision != DefaultRevision || len(ex.Plan[0].Digest) != 16 {
				t.Fatalf("plan %+v", ex.Plan)
			}
			if p := ex.Plan[0]; p.State != tt.state || p.Conflict != tt.conflict {
				t.Fatalf("state %s (%q), want %s (%q)", p.State, p.Conflict, tt.state, tt.conflict)
			}
			if (ex.Plan[0].Recorded != nil) != (tt.state == StateCurrent || tt.state == StateStale) {
				t.Fatalf("recorded %+v with state %s", ex.Plan[0].Recorded, tt.state)
			}
			if !slices.Equal(ex.Absent, tt.absent) || (ex.StatusError != "") != tt.statusErr || (ex.Status == nil) == (tt.pod["metadata"].(map[string]any)["annotations"].(map[string]any)[names.Status] != nil && !tt.statusErr) {
				t.Fatalf("absent %v, status %+v, error %q", ex.Absent, ex.Status, ex.StatusError)
			}
		})
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestUninject: what the status names goes, with the status; nothing
// else; and a Pod without a status, or with one graft cannot read, is
// left alone.
func TestUninject(t *testing.T) {
	e := newTestEngine(t, DefaultConfig())
	small := reviewObject(t, corpus.Review(corpus.Small))
	injected := applyResponse(t, corpus.Review(corpus.Small), mustAdmit(t, e, corpus.Review(corpus.Small), Options{}))
	u, err := Uninject(injected)
	if err != nil {
		t.Fatal(err)
	}
	want, got := decodeGeneric(t, small), decodeGeneric(t, u.Pod)
	dropEmpty(want)
	dropEmpty(got)
	if !jsonEqualValues(want, got) || u.Status.Template("mesh-proxy") == nil {
		t.Fatalf("uninject of the injected small Pod:\n%s\nwant\n%s", u.Pod, small)
	}

	if u, err := Uninject(small); err != nil || string(u.Patch) != "[]" || string(u.Pod) != string(small) {
		t.Fatalf("a Pod without status: %s, %v", u.Patch, err)
	}
	if _, err := Uninject(mustJSON(t, twoContainerPod(setStatusAnnotation("{")))); err == nil {
		t.Fatal("a status graft cannot read: no error")
	}
	for _, bad := range []string{`[]`, `{}`, `{"metadata":{},"spec":[]}`, `not json`} {
		if _, err := Uninject([]byte(bad)); err == nil {
			t.Errorf("Uninject(%s): no error", bad)
		}
	}

	// Version 1 names containers and volumes only; a mount of a removed
	// volume goes with it, an env var it did not name stays.
	v1 := twoContainerPod(func(p map[string]any) {
		appendTo(p, "initContainers", map[string]any{"name": "graft-agent", "image": "a:1"})
		appendTo(p, "volumes", map[string]any{"name": "graft-agent-run", "emptyDir": map[string]any{}})
		web := p["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		web["env"] = []any{map[string]any{"name": "GRAFT_AGENT_ADDR", "value": "x"}}
		web["volumeMounts"] = []any{map[string]any{"name": "graft-agent-run", "mountPath": "/run/a"}}
		setStatusAnnotation(`{"templates":["agent"],"initContainers":["graft-agent"],"volumes":["graft-agent-run"]}`)(p)
	})
	u, err = Uninject(mustJSON(t, v1))
	if err != nil {
		t.Fatal(err)
	}
	left := twoContainerPod(func(p map[string]any) {
		p["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["env"] = []any{map[string]any{"name": "GRAFT_AGENT_ADDR", "value": "x"}}
	})
	if got := decodeGeneric(t, u.Pod); !jsonEqualValues(got, decodeGeneric(t, mustJSON(t, left))) {
		t.Fatalf("uninject of a version 1 Pod:\n%s", u.Pod)
	}
}

func jsonEqualValues(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestStatusCacheSharedAcrossRequests: Pods carrying the same status share
// one cached reading; concurrent requests (run with -race) get the answers
// a fresh engine gives, and a status read once answers the same as read
// for the first time.
func TestStatusCacheSharedAcrossRequests(t *testing.T) {
	injected := admitGeneric(t, newTestEngine(t, goldenConfig()), Options{Profile: "agent"}, twoContainerPod(nil))
	reinvoked := decodeGeneric(t, mustJSON(t, injected))
	appendTo(reinvoked, "containers", map[string]any{"name": "foreign", "image": "f:1"})
	stale := decodeGeneric(t, mustJSON(t, injected))
	setStatusAnnotation(`{"templates":["agent"],"initContainers":["graft-agent"],"volumes":["graft-agent-run"]}`)(stale)
	reviews := [][]byte{podReview(injected, "a"), podReview(reinvoked, "b"), podReview(stale, "c"), podReview(twoContainerPod(nil), "d")}
	want := make([][]byte, len(reviews))
	for i, rv := range reviews {
		want[i] = mustAdmit(t, newTestEngine(t, goldenConfig()), rv, Options{Profile: "agent"})
	}
	e := newTestEngine(t, goldenConfig())
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(reviews))
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 20 {
				i := round % len(reviews)
				got, _, err := e.Admit(nil, reviews[i], Options{Profile: "agent"})
				if err != nil || !bytes.Equal(got, want[i]) {
					errs <- fmt.Sprintf("review %d: %v\n%s\nwant\n%s", i, err, got, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	// injected and reinvoked carry the same status; stale another.
	if n := len(e.impl.records.m); n != 2 {
		t.Fatalf("%d statuses cached, want 2 (one per distinct value)", n)
	}
}
