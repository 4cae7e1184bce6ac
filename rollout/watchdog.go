package rollout

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/graftdev/graft/audit"
)

// WatchdogActs reports whether graft watchdog restarts the owner of a Pod
// with verdict v: a Pod graft would inject now that was admitted without
// it (graft down under failurePolicy Ignore, or failing open) or before
// its namespace was labelled. Stale Pods are graft rollout's: a new
// revision is rolled out when the platform team decides, not by a
// controller.
func WatchdogActs(v audit.Verdict) bool {
	return v.Class == audit.Missing && (v.Cause == audit.CauseWithoutGraft || v.Cause == audit.CauseLabelledAfter)
}

// GraceLeft is how long the watchdog still waits before acting on a Pod
// created at created: grace after its creation, never negative.
func GraceLeft(created, now time.Time, grace time.Duration) time.Duration {
	return max(created.Add(grace).Sub(now), 0)
}

// Why the watchdog did not restart an owner, as the metric's reason label
// and the Event's.
const (
	// SkipBudget: a PodDisruptionBudget selecting its Pods allows no
	// disruption now; retried later.
	SkipBudget = "pdb"
	// SkipNotRestartable: a Job's, a bare Pod, a ReplicaSet without a
	// Deployment, or an owner replacing Pods only on delete: reported
	// with an Event, never deleted.
	SkipNotRestartable = "not-restartable"
	// SkipNotInjecting: a dry-run create of the owner's Pod comes back
	// without graft: a restart now would make more Pods without it;
	// retried later.
	SkipNotInjecting = "graft-not-injecting"
	// SkipRateLimited: over --max-restarts-per-minute; retried later.
	SkipRateLimited = "rate-limited"
)

// WatchdogMetrics are graft watchdog's metrics, graft_watchdog_*.
type WatchdogMetrics struct {
	// Missing is how many Pods of the watched namespaces the audit
	// classes missing (admitted without graft, or before the namespace
	// was labelled), as the watchdog last saw them.
	Missing prometheus.Gauge
	// Restarts counts owners restarted, by kind.
	Restarts *prometheus.CounterVec
	// Skips counts restarts not done, by reason (Skip*).
	Skips *prometheus.CounterVec
	// Errors counts failed operations, by operation.
	Errors *prometheus.CounterVec
	// Leader is 1 while this replica holds the lease.
	Leader prometheus.Gauge
	// Namespaces is how many namespaces are watched.
	Namespaces prometheus.Gauge
	// Latency is how long after its creation a missing Pod's owner was
	// restarted.
	Latency prometheus.Histogram
}

// NewWatchdogMetrics registers the watchdog's metrics on reg.
func NewWatchdogMetrics(reg prometheus.Registerer) (*WatchdogMetrics, error) {
	m := &WatchdogMetrics{
		Missing: prometheus.NewGauge(prometheus.GaugeOpts{Name: "graft_watchdog_missing_pods",
			Help: "Pods of the watched namespaces admitted without graft (audit class missing) that are not yet replaced."}),
		Restarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "graft_watchdog_restarts_total",
			Help: "Owners restarted because Pods of theirs were admitted without graft, by kind."}, []string{"kind"}),
		Skips: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "graft_watchdog_skipped_total",
			Help: "Restarts not done, by reason: pdb, not-restartable, graft-not-injecting, rate-limited."}, []string{"reason"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "graft_watchdog_errors_total",
			Help: "Failed operations against the API server, by operation."}, []string{"operation"}),
		Leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "graft_watchdog_leader",
			Help: "1 while this replica holds the watchdog's lease."}),
		Namespaces: prometheus.NewGauge(prometheus.GaugeOpts{Name: "graft_watchdog_namespaces",
			Help: "Namespaces watched (labelled graft.dev/watchdog=enabled)."}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "graft_watchdog_restart_delay_seconds",
			Help:    "From a missing Pod's creation to its owner's restart.",
			Buckets: []float64{5, 10, 30, 60, 120, 300, 600, 1800, 3600}}),
	}
	for _, c := range []prometheus.Collector{m.Missing, m.Restarts, m.Skips, m.Errors, m.Leader, m.Namespaces, m.Latency} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, r := range []string{SkipBudget, SkipNotRestartable, SkipNotInjecting, SkipRateLimited} {
		m.Skips.WithLabelValues(r)
	}
	for _, k := range []string{"Deployment", "StatefulSet", "DaemonSet"} {
		m.Restarts.WithLabelValues(k)
	}
	return m, nil
}
