package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/graftdev/graft/audit"
)

// The watchdog acts on Pods graft would inject now that were admitted
// without it, and on nothing else the audit reports: stale Pods wait for
// graft rollout, Pods no restart would inject are left alone.
func TestWatchdogActs(t *testing.T) {
	tests := []struct {
		v    audit.Verdict
		acts bool
	}{
		{audit.Verdict{Class: audit.Missing, Cause: audit.CauseWithoutGraft}, true},
		{audit.Verdict{Class: audit.Missing, Cause: audit.CauseLabelledAfter}, true},
		{audit.Verdict{Class: audit.Missing, Cause: audit.CauseNotCalled}, false},
		{audit.Verdict{Class: audit.Missing, Cause: audit.CauseWouldBeDenied}, false},
		{audit.Verdict{Class: audit.Stale, Cause: audit.CauseRevision}, false},
		{audit.Verdict{Class: audit.Current}, false},
		{audit.Verdict{Class: audit.Conflict}, false},
		{audit.Verdict{Class: audit.Spoofed, Cause: audit.CauseAbsent}, false},
		{audit.Verdict{Class: audit.OptedOut}, false},
		{audit.Verdict{Class: audit.NotSelected}, false},
	}
	for _, tt := range tests {
		if got := WatchdogActs(tt.v); got != tt.acts {
			t.Errorf("%s/%s: acts %v, want %v", tt.v.Class, tt.v.Cause, got, tt.acts)
		}
	}
}

func TestGraceLeft(t *testing.T) {
	created := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		after, grace, want time.Duration
	}{
		{0, time.Minute, time.Minute},
		{20 * time.Second, time.Minute, 40 * time.Second},
		{time.Minute, time.Minute, 0},
		{time.Hour, time.Minute, 0},
		{-time.Second, 0, time.Second}, // a clock behind the API server's
	} {
		if got := GraceLeft(created, created.Add(tt.after), tt.grace); got != tt.want {
			t.Errorf("%s after creation, grace %s: %s left, want %s", tt.after, tt.grace, got, tt.want)
		}
	}
}

// Every metric is on the registry passed in, with each reason's and
// kind's series present from the start (an alert on a rate needs them).
func TestWatchdogMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewWatchdogMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Restarts.WithLabelValues("Deployment").Inc()
	want := `
# HELP graft_watchdog_restarts_total Owners restarted because Pods of theirs were admitted without graft, by kind.
# TYPE graft_watchdog_restarts_total counter
graft_watchdog_restarts_total{kind="DaemonSet"} 0
graft_watchdog_restarts_total{kind="Deployment"} 1
graft_watchdog_restarts_total{kind="StatefulSet"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "graft_watchdog_restarts_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.Skips); n != 4 {
		t.Errorf("%d skip reasons exported, want 4", n)
	}
	if _, err := NewWatchdogMetrics(reg); err == nil {
		t.Error("registering twice on one registry succeeded")
	}
}
