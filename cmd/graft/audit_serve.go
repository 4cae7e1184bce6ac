package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/internal/admin"
	"github.com/graftdev/graft/internal/live"
	"github.com/graftdev/graft/internal/names"
)

// defaultAuditInterval is how often `graft audit --serve` audits: often
// enough for the audit alerts (docs/runbooks.md) to follow a rollout
// within minutes, cheap at 10,000 Pods (about 1.5 s, see README: Fleet
// audit). GraftAuditNotReporting fires past an hour without a report.
const defaultAuditInterval = 5 * time.Minute

func (f *auditFlags) registerServe(fl *pflag.FlagSet) {
	fl.StringVar(&f.serve, "serve", "", "keep running: audit every --interval and serve the newest report as Prometheus metrics on this address (/metrics, /healthz, /readyz, /version)")
	fl.DurationVar(&f.interval, "interval", defaultAuditInterval, "with --serve, the time between the end of one audit and the start of the next")
}

// runAuditServe is `graft audit --serve`: the Prometheus exporter of the
// audit, for the audit alerts and dashboard panels. It rereads the
// configuration and templates (files, or the ConfigMaps graft's
// Deployment mounts) before each run, so it follows the ConfigMaps graft
// itself reloads.
func runAuditServe(cmd *cobra.Command, f *auditFlags) error {
	if cmd.Flags().Changed(names.FlagOutput) && f.output != "prometheus" {
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
	// Fail at start on files that would fail every run. The cluster's
	// configuration is read at each run, whose errors the exporter
	// reports and counts.
	if _, _, err := fileEngine(f.config, f.templatesDir); err != nil {
		return err
	}
	cluster, err := live.Connect(f.cluster.config(f.namespace))
	if err != nil {
		return err
	}
	scope := auditScope(cluster, f.allNamespaces)
	ctx, stop := signal.NotifyContext(commandContext(cmd), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var source string // the last run's, said again when it changes
	e := &audit.Exporter{Interval: f.interval, Log: cmd.ErrOrStderr(), Now: time.Now,
		Run: func(ctx context.Context, out audit.Writer, start time.Time) (*audit.Report, error) {
			engine, now, err := f.cluster.liveEngine(ctx, cluster, f.config, f.templatesDir)
			if err != nil {
				return nil, err
			}
			if now != source {
				source = now
				fmt.Fprintln(cmd.ErrOrStderr(), "graft: configuration:", source)
			}
			return cluster.Audit(ctx, audit.New(engine), scope, f.chunkSize, out, start)
		}}
	srv, err := adminPort("serve", f.serve, admin.Options{Metrics: admin.Text(e.WriteMetrics), NotReady: e.NotReady,
		ErrorLog: log.New(cmd.ErrOrStderr(), "graft audit: ", 0)})
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "graft audit: serving http://%s/metrics, an audit every %s\n", srv.Addr(), f.interval)
	return srv.While(ctx, func(ctx context.Context) error {
		e.Loop(ctx)
		return nil
	})
}
