package webhook

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/graftdev/graft/inject"
)

// TestLogAdmissionCopies: logged fields do not alias the request buffer,
// even for a core that keeps them after Write.
func TestLogAdmissionCopies(t *testing.T) {
	core, seen := observer.New(zap.DebugLevel)
	body := []byte("uid-1shoppod-a")
	res := inject.Result{Decision: inject.DecisionInject, Profile: "enabled", PatchOps: 3,
		UID: body[0:5], Namespace: body[5:9], Name: body[9:14]}
	logAdmission(zap.New(core), &res, 42*time.Microsecond)
	copy(body, strings.Repeat("X", len(body))) // fasthttp reuses the buffer
	got := seen.All()[0].ContextMap()
	for k, want := range map[string]any{"uid": "uid-1", "namespace": "shop", "pod": "pod-a", "patch_ops": int64(3)} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
}

// TestLogAdmissionAllocations: a written line costs at most two
// allocations (the copied strings and the fields); a line the level or
// the sampler drops costs none.
func TestLogAdmissionAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	var sink strings.Builder
	res := inject.Result{Decision: inject.DecisionInject, Reason: inject.ReasonNone, Profile: "enabled",
		UID: []byte("7c5e2b1a-0000-4000-8000-000000000001"), Namespace: []byte("shop"), Name: []byte("web-")}
	for _, tc := range []struct {
		level string
		max   float64
	}{{"info", 2}, {"warn", 0}} {
		log, _, err := NewLogger(&discard{&sink}, tc.level)
		if err != nil {
			t.Fatal(err)
		}
		// 50 runs stay within the sampler's first 100 per second: all written.
		if n := testing.AllocsPerRun(50, func() { logAdmission(log, &res, time.Millisecond) }); n > tc.max {
			t.Errorf("level %s: %v allocations per line, want <= %v", tc.level, n, tc.max)
		}
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(sink.String(), "\n", 2)[0]), &line); err != nil {
		t.Fatalf("not a JSON line: %v", err)
	}
	if line["uid"] != "7c5e2b1a-0000-4000-8000-000000000001" || line["pod"] != "web-" {
		t.Errorf("line %v", line)
	}
}

// discard keeps the first line written and drops the rest.
type discard struct{ first *strings.Builder }

func (d *discard) Write(p []byte) (int, error) {
	if d.first.Len() == 0 {
		d.first.Write(p)
	}
	return len(p), nil
}
