package webhook

import (
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/connlimit"
)

// resultError labels requests answered with an HTTP error instead of a
// review (malformed, unknown profile, recovered panic). The other result
// values are the engine's decisions.
const resultError = "error"

// unknownProfile labels requests for a profile that does not exist, so a
// client cannot grow the label set; unknownRevision labels requests
// answered before a revision was chosen (HTTP errors).
const (
	unknownProfile  = "unknown"
	unknownRevision = "unknown"
)

// metrics are graft's Prometheus series. Every label value is bound once
// (at start, or when a reload brings new profiles or templates) so that
// the request path only increments ready-made counters. A counter's
// series appears on /metrics when it first counts, except those the
// alerts of deploy/components/monitoring read with rate() or increase(),
// which need a zero sample before the first event (alertSeries): so
// /metrics shows what happened and what the alerts watch, not every
// combination of labels graft could count.
type metrics struct {
	requests   *prometheus.CounterVec
	injections *prometheus.CounterVec
	duration   prometheus.Histogram
	patchBytes prometheus.Histogram
	inflight   prometheus.Gauge
	certExpiry prometheus.Gauge
	reloadOK   counter
	reloadErr  counter
	// tlsReloadOK and tlsReloadErr count reloads of the serving
	// certificate and of the client CAs.
	tlsReloadOK  counter
	tlsReloadErr counter
	// skips and failures are indexed by inject.Reason; nil where a reason
	// does not belong to the series.
	skips    []counter
	failures []counter
	// conns and connsRefused are by port (webhook, admin); refusals are
	// requests refused before the engine, bound by reason.
	conns        *prometheus.GaugeVec
	connsRefused *prometheus.CounterVec
	connsEvicted *prometheus.CounterVec
	bodyBytes    prometheus.Gauge
	refusals     map[string]counter
}

// counter is a counter the request path increments.
type counter interface{ Inc() }

// lazyCounter is a series of vec created when it first counts. The
// request path pays an atomic load; the first count, the series.
type lazyCounter struct {
	vec    *prometheus.CounterVec
	labels []string
	c      atomic.Pointer[prometheus.Counter]
}

func (l *lazyCounter) Inc() {
	c := l.c.Load()
	if c == nil {
		// Two first counts at once get the same series from the vector.
		s := l.vec.WithLabelValues(l.labels...)
		l.c.Store(&s)
		c = &s
	}
	(*c).Inc()
}

// newCounter is vec's series with labels: created now when the alerts
// read it (alertSeries), else on its first count.
func newCounter(vec *prometheus.CounterVec, name string, labels ...string) counter {
	if alertSeries(name, labels...) {
		return vec.WithLabelValues(labels...)
	}
	return &lazyCounter{vec: vec, labels: labels}
}

// Label values the alerts select: GraftFailingOpen (result fail-open),
// GraftDenyingOnFailure (deny; failures invalid-params,
// template-selection, conflict), GraftInternalErrors (error;
// internal-error), GraftBudgetExceeded, GraftOverloaded,
// GraftConfigReloadFailed and GraftCertReloadFailed (result error).
// TestAlertSeriesInitialised holds this list and the rules to each
// other.
var (
	alertResults  = []string{inject.DecisionFailOpen.String(), inject.DecisionDeny.String()}
	alertFailures = []string{inject.ReasonInvalidParams.String(), inject.ReasonTemplateSelection.String(), inject.ReasonConflict.String(),
		inject.ReasonBudgetExceeded.String(), inject.ReasonOverload.String(), inject.ReasonInternal.String()}
)

// alertSeries reports whether the series of metric name with labels is
// one an alert reads: created, at zero, before anything happens.
func alertSeries(name string, labels ...string) bool {
	switch name {
	case "graft_admission_requests_total": // profile, revision, operation, result
		op, result := labels[2], labels[3]
		if labels[1] == unknownRevision { // HTTP errors, before a revision is chosen
			return op == inject.OpUnknown.String() && result == resultError
		}
		return op == inject.OpCreate.String() && slices.Contains(alertResults, result)
	case "graft_admission_failures_total":
		return slices.Contains(alertFailures, labels[0])
	case "graft_config_reloads_total", "graft_tls_reloads_total":
		return labels[0] == "error"
	}
	return false
}

// durationLadder are the duration histogram's fixed bounds, from the
// engine's microseconds to a second; durationBuckets adds the budget's.
var durationLadder = [...]float64{50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1}

// durationBuckets are the bounds of graft_admission_duration_seconds: the
// ladder, plus bounds at 80% of the budget (GraftLatencyNearBudget's
// threshold, which the chart derives the same way), at the budget, and a
// quarter past it, where answers given at the deadline land. With a bound
// at the threshold, a p99 from histogram_quantile passes the threshold
// exactly when more than 1% of requests took longer, instead of by
// interpolating between bounds far apart (0.1 and 0.25 s before). The
// budget is the one graft starts with: a reload that changes it keeps
// these bounds until the next restart, as a histogram's bounds cannot
// change under its series.
func durationBuckets(budget time.Duration) []float64 {
	b := append([]float64(nil), durationLadder[:]...)
	if budget > 0 {
		s := budget.Seconds()
		b = append(b, 0.8*s, s, 1.25*s)
	}
	for i, v := range b {
		// Whole microseconds: 0.8*0.2 is 0.16000000000000003 in floating
		// point, which would be the le label users see.
		b[i] = math.Round(v*1e6) / 1e6
	}
	slices.Sort(b)
	return slices.Compact(b)
}

func newMetrics(reg prometheus.Registerer, budget time.Duration) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "graft_admission_requests_total",
			Help: "Admission requests by profile, revision, operation and result (a decision, or error for an HTTP error reply, whose revision is unknown).",
		}, []string{"profile", "revision", "operation", "result"}),
		injections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "graft_injections_total",
			Help: "Templates injected, by template and revision.",
		}, []string{"template", "revision"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "graft_admission_duration_seconds",
			Help:    "Time from the request reaching the handler to the response being ready.",
			Buckets: durationBuckets(budget),
		}),
		patchBytes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "graft_patch_bytes",
			Help:    "Size of the JSON patch (before base64) of mutating responses.",
			Buckets: prometheus.ExponentialBuckets(64, 4, 9),
		}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "graft_inflight_requests",
			Help: "Admission requests being handled now.",
		}),
		certExpiry: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "graft_tls_certificate_expiry_timestamp_seconds",
			Help: "Expiry (Unix time) of the serving certificate in use.",
		}),
	}
	reloads := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "graft_config_reloads_total",
		Help: "Template and configuration reloads by result (success, error).",
	}, []string{"result"})
	tlsReloads := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "graft_tls_reloads_total",
		Help: "Reloads of the serving certificate and of the client CAs by result (success, error).",
	}, []string{"result"})
	skips := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "graft_skips_total",
		Help: "Requests left alone, by reason.",
	}, []string{"reason"})
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "graft_admission_failures_total",
		Help: "Requests denied or answered by the failure mode, by reason.",
	}, []string{"reason"})

	m.conns = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "graft_connections",
		Help: "Open connections by port (webhook, admin).",
	}, []string{"port"})
	m.connsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "graft_connections_refused_total",
		Help: "Connections closed as they were accepted, by port and the bound they were over (total, per_address).",
	}, []string{"port", "reason"})
	m.connsEvicted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "graft_connections_evicted_total",
		Help: "Idle connections ended to make room for a new one at the total bound, by port.",
	}, []string{"port"})
	m.bodyBytes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "graft_request_body_bytes",
		Help: "Bytes request bodies hold now, out of server.maxBodyBytesInFlight.",
	})
	refusals := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "graft_http_refusals_total",
		Help: "Requests refused before the engine by reason: HTTP no API server sends, a body over a limit, or no token of the API server's.",
	}, []string{"reason"})
	m.refusals = map[string]counter{}
	for _, r := range []string{refusedBareLF, refusedHTTPVersion, refusedConflictingFrame, refusedChunked,
		refusedBodyTooLarge, refusedBodyBudget, refusedBodyRead, refusedToken} {
		m.refusals[r] = newCounter(refusals, "graft_http_refusals_total", r)
	}
	// Open connections are a state, zero until one opens.
	for _, port := range []string{portWebhook, portAdmin} {
		m.conns.WithLabelValues(port)
	}

	for _, c := range []prometheus.Collector{
		m.requests, m.injections, m.duration, m.patchBytes, m.inflight, m.certExpiry,
		reloads, tlsReloads, skips, failures, m.conns, m.connsRefused, m.connsEvicted, m.bodyBytes, refusals,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.reloadOK = newCounter(reloads, "graft_config_reloads_total", "success")
	m.reloadErr = newCounter(reloads, "graft_config_reloads_total", "error")
	m.tlsReloadOK = newCounter(tlsReloads, "graft_tls_reloads_total", "success")
	m.tlsReloadErr = newCounter(tlsReloads, "graft_tls_reloads_total", "error")
	reasons := inject.Reasons()
	m.skips = make([]counter, len(reasons))
	m.failures = make([]counter, len(reasons))
	for _, r := range reasons {
		switch {
		case r == inject.ReasonNone:
		case r.IsSkip():
			m.skips[r] = newCounter(skips, "graft_skips_total", r.String())
		default:
			m.failures[r] = newCounter(failures, "graft_admission_failures_total", r.String())
		}
	}
	return m, nil
}

// Ports, the port label of the connection series.
const (
	portWebhook = "webhook"
	portAdmin   = "admin"
)

// Refusal reasons, the reason label of graft_connections_refused_total.
const (
	refusedTotal      = "total"
	refusedPerAddress = "per_address"
)

// connCounters are port's connection series.
func (m *metrics) connCounters(port string) connlimit.Counters {
	return connlimit.Counters{
		Open:              m.conns.WithLabelValues(port),
		RefusedTotal:      newCounter(m.connsRefused, "graft_connections_refused_total", port, refusedTotal),
		RefusedPerAddress: newCounter(m.connsRefused, "graft_connections_refused_total", port, refusedPerAddress),
		Evicted:           newCounter(m.connsEvicted, "graft_connections_evicted_total", port),
	}
}

// refusal is the counter of requests refused for reason, one of the
// refused* constants.
func (m *metrics) refusal(reason string) counter { return m.refusals[reason] }

// profileCounters are one profile's request counters by operation and
// result; the last result column is resultError.
type profileCounters [][]counter

// bindings are the label values that depend on the configuration: bound
// when the engines are built, swapped in with them. Counters are looked
// up by revision, then profile or template.
type bindings struct {
	requests   map[string]map[string]profileCounters
	unknown    profileCounters // unknown profile or revision
	injections map[string]map[string]counter
}

func (m *metrics) bind(revisions, profiles, templateNames []string) *bindings {
	b := &bindings{
		requests:   make(map[string]map[string]profileCounters, len(revisions)+1),
		injections: make(map[string]map[string]counter, len(revisions)),
	}
	// HTTP errors come before a revision is chosen: they are counted
	// under the revision "unknown", for a known profile or not.
	for _, rev := range append(slices.Clone(revisions), unknownRevision) {
		pcs := make(map[string]profileCounters, len(profiles))
		for _, p := range profiles {
			pcs[p] = m.profileCounters(p, rev)
		}
		b.requests[rev] = pcs
	}
	b.unknown = m.profileCounters(unknownProfile, unknownRevision)
	for _, rev := range revisions {
		tcs := make(map[string]counter, len(templateNames))
		for _, t := range templateNames {
			tcs[t] = newCounter(m.injections, "graft_injections_total", t, rev)
		}
		b.injections[rev] = tcs
	}
	return b
}

func (m *metrics) profileCounters(profile, revision string) profileCounters {
	ops := inject.Operations()
	decisions := inject.Decisions()
	pc := make(profileCounters, len(ops))
	for _, op := range ops {
		row := make([]counter, len(decisions)+1)
		for _, d := range decisions {
			row[d] = newCounter(m.requests, "graft_admission_requests_total", profile, revision, op.String(), d.String())
		}
		row[len(decisions)] = newCounter(m.requests, "graft_admission_requests_total", profile, revision, op.String(), resultError)
		pc[op] = row
	}
	return pc
}

func (b *bindings) counters(profile, revision string) profileCounters {
	if pc, ok := b.requests[revision][profile]; ok {
		return pc
	}
	return b.unknown
}

// observe counts one answered review.
func (m *metrics) observe(b *bindings, res *inject.Result, seconds float64) {
	pc := b.counters(res.Profile, res.Revision)
	if int(res.Operation) < len(pc) && int(res.Decision) < len(pc[res.Operation])-1 {
		pc[res.Operation][res.Decision].Inc()
	}
	m.duration.Observe(seconds)
	if int(res.Reason) < len(m.skips) {
		if c := m.skips[res.Reason]; c != nil {
			c.Inc()
		} else if c := m.failures[res.Reason]; c != nil {
			c.Inc()
		}
	}
	if res.Decision == inject.DecisionInject {
		m.patchBytes.Observe(float64(res.PatchBytes))
		tcs := b.injections[res.Revision]
		for _, t := range res.Templates {
			if c, ok := tcs[t]; ok {
				c.Inc()
			}
		}
	}
}

// countError counts a request answered with an HTTP error: no revision
// was chosen for it.
func (m *metrics) countError(b *bindings, profile string) {
	row := b.counters(profile, unknownRevision)[inject.OpUnknown]
	row[len(row)-1].Inc()
}
