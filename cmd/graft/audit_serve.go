package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/protobuf/proto"

	"github.com/graftdev/graft/audit"
)

// defaultAuditInterval is how often `graft audit --serve` audits: often
// enough for the audit alerts (docs/runbooks.md) to follow a rollout
// within minutes, cheap at 10,000 Pods (about 1.5 s, see README: Fleet
// audit). GraftAuditNotReporting fires past an hour without a report.
const defaultAuditInterval = 5 * time.Minute

func (f *auditFlags) registerServe(fl *pflag.FlagSet) {
	fl.StringVar(&f.serve, "serve", "", "keep running: audit every --interval and serve the newest report as Prometheus metrics on this address (/metrics, /healthz, /readyz)")
	fl.DurationVar(&f.interval, "interval", defaultAuditInterval, "with --serve, the time between the end of one audit and the start of the next")
}

// runAuditServe is `graft audit --serve`: the Prometheus exporter of the
// audit, for the audit alerts and dashboard panels. It rereads the
// configuration and templates before each run, so it follows the
// ConfigMaps graft itself reloads.
func runAuditServe(cmd *cobra.Command, f *auditFlags) error {
	if cmd.Flags().Changed("output") && f.output != "prometheus" {
		return errors.New("--serve serves -o prometheus; give no other -o")
	}
	if f.workloads || f.failOn != "" {
		return errors.New("--serve runs until stopped: --workloads and --fail-on are for one run")
	}
	if f.allNamespaces && f.namespace != "" {
		return errors.New("give either -n NAMESPACE or -A, not both")
	}
	if f.interval <= 0 {
		return fmt.Errorf("--interval %s: want a positive duration", f.interval)
	}
	if f.chunkSize < 1 {
		return fmt.Errorf("--chunk-size %d: want at least 1", f.chunkSize)
	}
	// Fail at start on a configuration that would fail every run.
	if _, err := newOfflineEngine(f.config, f.templatesDir, "", ""); err != nil {
		return err
	}
	c, err := f.cluster.client()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := &auditExporter{interval: f.interval, log: cmd.ErrOrStderr(), run: func(ctx context.Context) (*audit.Report, error) {
		engine, err := newOfflineEngine(f.config, f.templatesDir, "", "")
		if err != nil {
			return nil, err
		}
		return auditCluster(ctx, c, audit.New(engine), f.namespace, f.chunkSize)
	}}
	return e.serve(ctx, f.serve)
}

// auditExporter runs an audit every interval and serves the newest
// successful report; a failed run keeps the previous one, whose
// graft_audit_last_run_timestamp_seconds then ages.
type auditExporter struct {
	run      func(context.Context) (*audit.Report, error)
	interval time.Duration
	log      io.Writer

	latest    atomic.Pointer[[]byte] // the newest report as text; nil before the first
	succeeded atomic.Uint64
	failed    atomic.Uint64
}

// serve listens on addr and audits until ctx ends, then stops the server.
func (e *auditExporter) serve(ctx context.Context, addr string) error {
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
	fmt.Fprintf(e.log, "graft audit: serving http://%s/metrics, an audit every %s\n", ln.Addr(), e.interval)
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
func (e *auditExporter) loop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		e.once(ctx)
		timer.Reset(e.interval)
	}
}

func (e *auditExporter) once(ctx context.Context) {
	rep, err := e.run(ctx)
	var text bytes.Buffer
	if err == nil {
		err = rep.WritePrometheus(&text)
	}
	if err != nil {
		if ctx.Err() != nil {
			return // stopping: not a failure of the audit
		}
		e.failed.Add(1)
		fmt.Fprintf(e.log, "graft audit: run failed, serving the previous report: %v\n", err)
		return
	}
	b := text.Bytes()
	e.latest.Store(&b)
	e.succeeded.Add(1)
	fmt.Fprintf(e.log, "graft audit: %d Pods in %s\n", len(rep.Pods), rep.Duration.Round(time.Millisecond))
}

// ServeHTTP answers /metrics (the newest report and the run counters),
// /healthz (the process is up) and /readyz (a report exists).
func (e *auditExporter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
func (e *auditExporter) writeRuns(w io.Writer) error {
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
