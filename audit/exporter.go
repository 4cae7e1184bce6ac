package audit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// Exporter is `graft audit --serve`, how the audit metrics are scraped:
// it audits every Interval and keeps the newest successful report in the
// Prometheus text format for the admin port (internal/admin) to serve; a
// failed run keeps the previous report, whose
// graft_audit_last_run_timestamp_seconds then ages.
type Exporter struct {
	// Run audits once, streaming every Pod into out (a Prometheus
	// writer: it keeps nothing per Pod), and returns the run's report.
	Run      func(ctx context.Context, out Writer, start time.Time) (*Report, error)
	Interval time.Duration
	Log      io.Writer
	// Now is the clock that stamps a run's start.
	Now func() time.Time

	latest    atomic.Pointer[[]byte] // the newest report as text; nil before the first
	succeeded atomic.Uint64
	failed    atomic.Uint64
}

// Loop audits at once, then Interval after each run ends, until ctx
// ends.
func (e *Exporter) Loop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		e.Once(ctx)
		timer.Reset(e.Interval)
	}
}

// Once runs one audit and, if it succeeds, serves its report from then on.
func (e *Exporter) Once(ctx context.Context) {
	var text bytes.Buffer
	out := &promWriter{w: &text}
	rep, err := e.Run(ctx, out, e.Now())
	if err == nil {
		err = out.Close(rep)
	}
	if err != nil {
		if ctx.Err() != nil {
			return // stopping: not a failure of the audit
		}
		e.failed.Add(1)
		fmt.Fprintf(e.Log, "graft audit: run failed, serving the previous report: %v\n", err)
		return
	}
	b := text.Bytes()
	e.latest.Store(&b)
	e.succeeded.Add(1)
	fmt.Fprintf(e.Log, "graft audit: %d Pods in %s\n", rep.Pods(), rep.Duration.Round(time.Millisecond))
}

// WriteMetrics writes what the exporter serves on /metrics, as
// exposition text: the newest report and the run counters.
func (e *Exporter) WriteMetrics(w io.Writer) error {
	if latest := e.latest.Load(); latest != nil {
		if _, err := w.Write(*latest); err != nil {
			return err
		}
	}
	return e.writeRuns(w)
}

// NotReady says why the exporter is not ready to be scraped, "" once a
// report exists.
func (e *Exporter) NotReady() string {
	if e.latest.Load() == nil {
		return "no audit has completed yet"
	}
	return ""
}

// writeRuns writes graft_audit_runs_total, which a failing exporter keeps
// counting while its report ages.
func (e *Exporter) writeRuns(w io.Writer) error {
	counter := func(v uint64, result string) *dto.Metric {
		return &dto.Metric{
			Label:   []*dto.LabelPair{{Name: proto.String("result"), Value: proto.String(result)}},
			Counter: &dto.Counter{Value: proto.Float64(float64(v))},
		}
	}
	_, err := expfmt.MetricFamilyToText(w, &dto.MetricFamily{
		Name:   proto.String("graft_audit_runs_total"),
		Help:   proto.String("Audit runs since the exporter started, by result (success, error)."),
		Type:   dto.MetricType_COUNTER.Enum(),
		Metric: []*dto.Metric{counter(e.succeeded.Load(), "success"), counter(e.failed.Load(), "error")},
	})
	return err
}
