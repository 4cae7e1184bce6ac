package webhook

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/config"
)

const failureConfig = `
profiles:
  enabled: {templates: [agent], failureMode: allow}
  strict: {templates: [agent], failureMode: deny}
`

// TestBudgetExceeded: when the engine's clock runs past the deadline, the
// profile's failure mode decides: allow unchanged with a warning, or deny.
func TestBudgetExceeded(t *testing.T) {
	clock := newGateClock()
	ts := startServer(t, serverSetup{configYAML: failureConfig, clock: clock.Now})
	clock.setJump(time.Second) // every reading is a second later than the last
	cases := []struct {
		path        string
		wantAllowed bool
		wantResult  string
	}{
		{"/inject", true, "fail-open"},
		{"/inject/strict", false, "deny"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			code, out := ts.post(t, tc.path, corpus.Review(corpus.Small))
			if code != http.StatusOK {
				t.Fatalf("status %d: %.300s", code, out)
			}
			r := decodeReply(t, out).Response
			if r.Allowed != tc.wantAllowed {
				t.Fatalf("allowed=%v, want %v: %.300s", r.Allowed, tc.wantAllowed, out)
			}
			if len(r.Patch) != 0 {
				t.Errorf("a failed request carries a patch: %s", r.Patch)
			}
			if tc.wantAllowed && len(r.Warnings) == 0 {
				t.Error("fail-open without a warning")
			}
			if !tc.wantAllowed && (r.Result == nil || r.Result.Message == "") {
				t.Error("denied without a message")
			}
			profile := strings.TrimPrefix(strings.TrimPrefix(tc.path, "/inject"), "/")
			if profile == "" {
				profile = "enabled"
			}
			if got := metric(t, ts.reg, "graft_admission_requests_total", "profile", profile, "operation", "CREATE", "result", tc.wantResult); got != 1 {
				t.Errorf("requests{%s,%s} = %v, want 1", profile, tc.wantResult, got)
			}
		})
	}
	if got := metric(t, ts.reg, "graft_admission_failures_total", "reason", "budget-exceeded"); got != 2 {
		t.Errorf("failures{budget-exceeded} = %v, want 2", got)
	}
}

// TestOverload: beyond maxInFlight, requests are answered by the failure
// mode at once; the one in flight completes normally.
func TestOverload(t *testing.T) {
	clock := newGateClock()
	ts := startServer(t, serverSetup{configYAML: failureConfig, clock: clock.Now,
		override: func(s *config.Server) { s.MaxInFlight = 1 }})
	review := corpus.Review(corpus.Small)

	clock.hold(1)
	var wg sync.WaitGroup
	var heldCode int
	var heldOut []byte
	wg.Go(func() { heldCode, heldOut = doPost(t, ts.client, ts.url+"/inject", "application/json", review) })
	<-clock.entered // the first request is inside the handler

	for _, tc := range []struct {
		path        string
		wantAllowed bool
	}{{"/inject", true}, {"/inject/strict", false}} {
		code, out := ts.post(t, tc.path, review)
		if code != http.StatusOK {
			t.Fatalf("%s: status %d: %.300s", tc.path, code, out)
		}
		r := decodeReply(t, out).Response
		if r.Allowed != tc.wantAllowed || len(r.Patch) != 0 {
			t.Errorf("%s overloaded: allowed=%v patch=%q, want allowed=%v and no patch", tc.path, r.Allowed, r.Patch, tc.wantAllowed)
		}
	}
	if got := metric(t, ts.reg, "graft_inflight_requests"); got != 1 {
		t.Errorf("inflight gauge %v, want 1 while one is held", got)
	}
	clock.release()
	wg.Wait()
	if heldCode != http.StatusOK || len(decodePatch(t, heldOut)) == 0 {
		t.Fatalf("held request: %d %.300s", heldCode, heldOut)
	}
	if got := metric(t, ts.reg, "graft_admission_failures_total", "reason", "overload"); got != 2 {
		t.Errorf("failures{overload} = %v, want 2", got)
	}
	if got := metric(t, ts.reg, "graft_inflight_requests"); got != 0 {
		t.Errorf("inflight gauge %v after all answered", got)
	}
}

// TestPanicRecovered: a panic inside a request is answered 500 and
// counted, and the server keeps serving on the same port.
func TestPanicRecovered(t *testing.T) {
	clock := newGateClock()
	ts := startServer(t, serverSetup{clock: clock.Now})
	review := corpus.Review(corpus.Small)
	clock.panics.Store(true)
	if code, out := ts.post(t, "/inject", review); code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500: %.200s", code, out)
	}
	if got := metric(t, ts.reg, "graft_admission_failures_total", "reason", "internal-error"); got != 1 {
		t.Errorf("failures{internal-error} = %v, want 1", got)
	}
	if !strings.Contains(ts.logs.String(), "panic in request") {
		t.Error("panic not logged")
	}
	if code, out := ts.post(t, "/inject", review); code != http.StatusOK {
		t.Fatalf("after a panic: %d %.200s", code, out)
	}
	if got := metric(t, ts.reg, "graft_inflight_requests"); got != 0 {
		t.Errorf("inflight gauge %v after a panic", got)
	}
}
