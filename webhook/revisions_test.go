package webhook

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/inject"
)

// nextImage is the agent image of revision next in revisionsConfig.
const nextImage = "registry.local/agent:2.0.0"

// revisionsConfig serves the agent profile in two revisions, default and
// next (another agent image), with tags stable and canary; canary points
// at canaryTarget (a revision, or a split).
func revisionsConfig(canaryTarget string) string {
	return `
defaultProfile: agent
profiles:
  agent: {templates: [agent]}
revisions:
  next:
    profiles:
      agent: {templates: [agent], params: {agent: {image: "` + nextImage + `"}}}
tags:
  stable: {revision: default}
  canary: ` + canaryTarget + `
`
}

// servedRevision posts the small review to path and says which revision
// injected it, by the agent image in the patch.
func servedRevision(t *testing.T, ts *testServer, path string) string {
	t.Helper()
	code, out := ts.post(t, path, corpus.Review(corpus.Small))
	if code != http.StatusOK {
		t.Fatalf("POST %s: %d %.300s", path, code, out)
	}
	patch := string(decodePatch(t, out))
	switch {
	case strings.Contains(patch, nextImage):
		return "next"
	case strings.Contains(patch, "ghcr.io/graftdev/agent:"):
		return "default"
	}
	t.Fatalf("POST %s: no agent in the patch %s", path, patch)
	return ""
}

func TestRevisionRoutes(t *testing.T) {
	ts := startServer(t, serverSetup{configYAML: revisionsConfig("{revision: next}")})
	for _, tt := range []struct{ path, want string }{
		{"/inject", "default"}, {"/inject/agent", "default"}, {"/inject/agent/default", "default"},
		{"/inject/agent/next", "next"}, {"/inject/agent/stable", "default"}, {"/inject/agent/canary", "next"},
	} {
		if got := servedRevision(t, ts, tt.path); got != tt.want {
			t.Errorf("POST %s: served by %s, want %s", tt.path, got, tt.want)
		}
	}
	for _, tt := range []struct {
		path string
		want string
	}{
		{"/inject/agent/nope", `unknown revision or tag "nope"`},
		{"/inject/nope/next", `unknown profile "nope"`},
		{"/inject/agent/", "not found"},
		{"/inject//next", `unknown profile "next"`}, // fasthttp collapses the slashes
		{"/inject/agent/next/more", "not found"},
	} {
		code, out := ts.post(t, tt.path, corpus.Review(corpus.Small))
		if code != http.StatusNotFound || !strings.Contains(string(out), tt.want) {
			t.Errorf("POST %s: %d %q, want 404 %q", tt.path, code, out, tt.want)
		}
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		// canary and next both count as revision next: labels name revisions, never tags.
		{"graft_admission_requests_total", []string{"profile", "agent", "revision", "next", "operation", "CREATE", "result", "inject"}, 2},
		{"graft_admission_requests_total", []string{"profile", "agent", "revision", "default", "operation", "CREATE", "result", "inject"}, 4},
		{"graft_admission_requests_total", []string{"profile", "agent", "revision", "unknown", "operation", "UNKNOWN", "result", "error"}, 1},
		{"graft_injections_total", []string{"template", "agent", "revision", "next"}, 2},
		{"graft_injections_total", []string{"template", "agent", "revision", "default"}, 4},
	} {
		if got := metric(t, ts.reg, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	revs := map[string]int{}
	for _, l := range ts.logs.lines(t, "admission") {
		rev, _ := l["revision"].(string)
		revs[rev]++
	}
	if revs["next"] != 2 || revs["default"] != 4 || len(revs) != 2 {
		t.Errorf("admission log lines by revision: %v", revs)
	}
}

// TestMovingATag: rewriting the config file moves the tag for the very
// next request, with no restart and no failed request between.
func TestMovingATag(t *testing.T) {
	ts := startServer(t, serverSetup{configYAML: revisionsConfig("{revision: default}")})
	if got := servedRevision(t, ts, "/inject/agent/canary"); got != "default" {
		t.Fatalf("canary served by %s before the move", got)
	}
	writeFile(t, ts.opts.ConfigPath, revisionsConfig("{split: [{revision: next, percent: 100}, {revision: default, percent: 0}]}"))
	if err := waitEvent(t, ts.reloads, "config"); err != nil {
		t.Fatalf("the moved tag was rejected: %v", err)
	}
	if got := servedRevision(t, ts, "/inject/agent/canary"); got != "next" {
		t.Errorf("canary served by %s after the move, want next", got)
	}
	if got := servedRevision(t, ts, "/inject/agent/stable"); got != "default" {
		t.Errorf("stable served by %s after canary moved", got)
	}
	// A tag moved to a revision that does not exist is rejected; the
	// tag stays where it was.
	writeFile(t, ts.opts.ConfigPath, revisionsConfig("{revision: gone}"))
	if err := waitEvent(t, ts.reloads, "config"); err == nil || !strings.Contains(err.Error(), `no revision "gone"`) {
		t.Fatalf("a tag of an unknown revision: %v", err)
	}
	if got := servedRevision(t, ts, "/inject/agent/canary"); got != "next" {
		t.Errorf("canary served by %s after a rejected move, want next", got)
	}
}

// TestHandlerAllocationsOnSplit is TestHandlerAllocations on a route
// whose tag splits: revision selection adds nothing to the handler.
func TestHandlerAllocationsOnSplit(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	ts := startServer(t, serverSetup{configYAML: revisionsConfig("{split: [{revision: next, percent: 50}, {revision: default, percent: 50}]}")})
	review := corpus.Review(corpus.Small)
	revs := ts.state.Load().revs
	var dst []byte
	opts := inject.Options{Profile: "agent", Revision: "canary", Deadline: time.Now().Add(time.Second)}
	engine := testing.AllocsPerRun(50, func() { dst, _, _ = revs.Admit(dst[:0], review, opts) })
	handler := handlerAllocs(t, ts.Server, "/inject/agent/canary?timeout=10s", review)
	t.Logf("engine %v allocs/op, handler %v allocs/op", engine, handler)
	if engine != 0 || handler > engine+2 {
		t.Errorf("handler %v allocations per request, engine %v: want 0 and at most 2 more", handler, engine)
	}
}
