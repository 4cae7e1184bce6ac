package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/internal/admin"
	"github.com/graftdev/graft/internal/live"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/offline"
	"github.com/graftdev/graft/rollout"
	"github.com/graftdev/graft/webhook"
)

type watchdogFlags struct {
	cluster        clusterFlags
	config         string
	templatesDir   string
	grace          time.Duration
	maxRestarts    int
	retry          time.Duration
	rolloutTimeout time.Duration
	metricsAddr    string
	leaseNamespace string
	leaseName      string
	identity       string
	logLevel       string
}

func newWatchdogCmd() *cobra.Command {
	var f watchdogFlags
	cmd := &cobra.Command{
		Use:     "watchdog [flags]",
		Short:   "Restart the owners of Pods admitted without graft, in opted-in namespaces",
		Example: watchdogExample,
		Long: `watchdog is a controller for Pods that slipped through: in namespaces
labelled graft.dev/watchdog=enabled it watches Pods (informers), classifies
each as graft audit does, with the configuration graft serve runs, and for
a Pod classed missing (admitted while graft could not answer, or before
its namespace was labelled graft.dev/inject) restarts its Deployment,
StatefulSet or DaemonSet as kubectl rollout restart does, once --grace
has passed since the Pod was created. It restarts only when a dry-run
create of the owner's Pod comes back injected (graft answers again), no
PodDisruptionBudget selecting its Pods allows zero disruptions, and
--max-restarts-per-minute allows; otherwise it looks again --retry later.
Pods of Jobs and bare Pods get a Warning Event, never a restart. Each
restart gets an Event on its owner.

Replicas elect a leader with a coordination.k8s.io Lease: only the leader
acts. Metrics (graft_watchdog_*), /healthz, /readyz and /version are
served on --metrics-addr. docs/tasks/rollout.md lists the RBAC it needs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWatchdog(cmd, &f)
		},
	}
	fl := cmd.Flags()
	f.cluster.register(cmd)
	fl.StringVar(&f.config, names.FlagConfig, "", "engine configuration file (YAML), as given to graft serve")
	fl.StringVar(&f.templatesDir, names.FlagTemplatesDir, "", "directory of templates overlaying the built-in ones")
	fl.DurationVar(&f.grace, "grace", 2*time.Minute, "how long after its creation a Pod admitted without graft is left before its owner is restarted")
	fl.IntVar(&f.maxRestarts, "max-restarts-per-minute", 30, "restarts allowed per minute, across the cluster")
	fl.DurationVar(&f.retry, "retry", 10*time.Second, "how soon a Pod whose owner could not be restarted is looked at again")
	fl.DurationVar(&f.rolloutTimeout, "rollout-timeout", 10*time.Minute, "how long a restarted owner's Pods are left to be replaced before it is restarted again")
	fl.StringVar(&f.metricsAddr, "metrics-addr", ":9092", "plain-HTTP address for /metrics, /healthz, /readyz and /version")
	fl.StringVar(&f.leaseNamespace, "lease-namespace", "", "namespace of the leader-election Lease (default: the namespace the watchdog runs in)")
	fl.StringVar(&f.leaseName, "lease-name", "graft-watchdog", "name of the leader-election Lease")
	fl.StringVar(&f.identity, "identity", "", "this replica's name in the Lease (default: $POD_NAME, else the host name)")
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

func runWatchdog(cmd *cobra.Command, f *watchdogFlags) error {
	if f.grace < 0 || f.retry <= 0 || f.rolloutTimeout <= 0 || f.maxRestarts < 1 {
		return errors.New("--grace must not be negative; --retry, --rollout-timeout and --max-restarts-per-minute must be positive")
	}
	log, _, err := webhook.NewLogger(cmd.ErrOrStderr(), f.logLevel)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	defer func() { _ = log.Sync() }()
	engine, err := offline.NewEngine(f.config, f.templatesDir, "", "")
	if err != nil {
		return err
	}
	cluster, err := live.Connect(f.cluster.config(f.leaseNamespace))
	if err != nil {
		return err
	}
	id := f.identity
	if id == "" {
		id = os.Getenv("POD_NAME")
	}
	if id == "" {
		if id, err = os.Hostname(); err != nil {
			return fmt.Errorf("--identity: %w", err)
		}
	}
	reg := prometheus.NewRegistry()
	metrics, err := rollout.NewWatchdogMetrics(reg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(commandContext(cmd), os.Interrupt, syscall.SIGTERM)
	defer stop()

	srv, err := adminPort("metrics-addr", f.metricsAddr, admin.Options{Metrics: admin.Gathered(reg), ErrorLog: zap.NewStdLog(log.Named("admin"))})
	if err != nil {
		return err
	}

	wd := cluster.NewWatchdog(audit.New(engine), metrics, live.WatchdogOptions{Grace: f.grace, MaxRestartsPerMinute: f.maxRestarts,
		Retry: f.retry, RolloutTimeout: f.rolloutTimeout, Now: time.Now, Log: log})
	log.Info("watchdog starting", zap.String("identity", id), zap.String("lease", cluster.Namespace()+"/"+f.leaseName),
		zap.Stringer("metrics", srv.Addr()))
	return srv.While(ctx, func(ctx context.Context) error {
		return cluster.LeaderElect(ctx, f.leaseName, id, func(ctx context.Context) {
			metrics.Leader.Set(1)
			log.Info("leading: watching namespaces")
			if err := wd.Run(ctx); err != nil {
				log.Error("watchdog", zap.Error(err))
			}
		}, func() {
			metrics.Leader.Set(0)
			log.Info("not leading")
		})
	})
}
