package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// Exporter is `graft audit --serve`, how the audit metrics are scraped:
// it audits every Interval and serves the newest successful report in
// the Prometheus text format; a failed run keeps the previous report,
// whose graft_audit_last_run_timestamp_seconds then ages.
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

// Serve listens on addr and audits until ctx ends, then stops the server.
func (e *Exporter) Serve(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--serve: %w", err)
	}
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		cancel()
		served <- err
	}()
	fmt.Fprintf(e.Log, "graft audit: serving http://%s/metrics, an audit every %s\n", ln.Addr(), e.Interval)
	e.loop(ctx)
	shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("stopping the metrics server: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics server: %w", err)
	}
	return nil
}

// loop audits at once, then interval after each run ends, until ctx ends.
func (e *Exporter) loop(ctx context.Context) {
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

// ServeHTTP answers /metrics (the newest report and the run counters),
// /healthz (the process is up) and /readyz (a report exists).
func (e *Exporter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	latest := e.latest.Load()
	switch r.URL.Path {
	case "/metrics":
		w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		if latest != nil {
			_, _ = w.Write(*latest)
		}
		_ = e.writeRuns(w)
	case "/healthz":
		_, _ = io.WriteString(w, "ok\n")
	case "/readyz":
		if latest == nil {
			http.Error(w, "no audit has completed yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	default:
		http.NotFound(w, r)
	}
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
