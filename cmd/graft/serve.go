package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/internal/live"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/webhook"
)

func newServeCmd() *cobra.Command {
	var (
		configPath string
		flags      config.Server
		drainDelay time.Duration
	)
	cmd := &cobra.Command{
		Use:     "serve",
		Short:   "Serve the admission webhook over TLS",
		Example: serveExample,
		Long: `Serve the mutating admission webhook on --addr (TLS) and /metrics, /healthz
and /readyz on --admin-addr (plain HTTP). Without --tls-cert/--tls-key a
self-signed certificate is generated and its CA bundle logged. Settings come
from --config and are overridden by flags.

SIGTERM (or SIGINT) turns /readyz not-ready at once; graft keeps serving for
--drain-delay, closing each connection after its answer, so that the
endpoint's removal reaches the API servers; then it closes the listener,
finishes the requests in flight and exits 0. A second signal ends the drain
delay at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs := cmd.Flags()
			override := func(s *config.Server) {
				set := func(name string, dst *string, v string) {
					if fs.Changed(name) {
						*dst = v
					}
				}
				set("addr", &s.Addr, flags.Addr)
				set("admin-addr", &s.AdminAddr, flags.AdminAddr)
				set(names.FlagTLSCert, &s.TLSCert, flags.TLSCert)
				set(names.FlagTLSKey, &s.TLSKey, flags.TLSKey)
				set("client-ca", &s.ClientCA, flags.ClientCA)
				set(names.FlagTemplatesDir, &s.TemplatesDir, flags.TemplatesDir)
				set("log-level", &s.LogLevel, flags.LogLevel)
				if fs.Changed("drain-delay") {
					s.DrainDelay = config.Duration{Duration: drainDelay}
				}
			}
			if fs.Changed("drain-delay") && drainDelay <= 0 {
				return fmt.Errorf("--drain-delay %s: want a positive duration (1ms stops at once)", drainDelay)
			}
			// The logger starts at the flag's level (or info) and follows
			// the config file's logLevel once it is read.
			level := flags.LogLevel
			if level == "" {
				level = "info"
			}
			log, atomicLevel, err := webhook.NewLogger(cmd.ErrOrStderr(), level)
			if err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			defer func() { _ = log.Sync() }()

			reg := prometheus.NewRegistry()
			srv, err := webhook.New(webhook.Options{
				ConfigPath:    configPath,
				Override:      override,
				Logger:        log,
				Level:         &atomicLevel,
				Registry:      reg,
				Version:       buildInfo().String(),
				TokenReviewer: tokenReviewer,
			})
			if err != nil {
				return err
			}
			ctx, stop := drainOnSignal(cmd.Context(), srv.EndDrain)
			defer stop()
			return srv.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&configPath, names.FlagConfig, "", "YAML config file (engine profiles and a server: section); watched for changes")
	f.StringVar(&flags.Addr, "addr", config.DefaultAddr, "TLS listen address of the webhook")
	f.StringVar(&flags.AdminAddr, "admin-addr", config.DefaultAdminAddr, "plain-HTTP address for /metrics, /healthz, /readyz and /version")
	f.StringVar(&flags.TLSCert, names.FlagTLSCert, "", "serving certificate (PEM); reloaded when it changes")
	f.StringVar(&flags.TLSKey, names.FlagTLSKey, "", "serving key (PEM); reloaded when it changes")
	f.StringVar(&flags.ClientCA, "client-ca", "", "require client certificates signed by these CAs (PEM)")
	f.StringVar(&flags.TemplatesDir, names.FlagTemplatesDir, "", "directory of templates overlaying the built-in ones; watched for changes")
	f.StringVar(&flags.LogLevel, "log-level", "info", "debug, info, warn or error")
	f.DurationVar(&drainDelay, "drain-delay", config.DefaultDrainDelay,
		"after SIGTERM, keep serving this long (not ready, closing each connection after its answer) before closing the listener")
	return cmd
}

// drainOnSignal returns a context that ends at the first SIGTERM or
// SIGINT, which starts the server's drain; a second signal calls endDrain.
// stop releases the signals.
func drainOnSignal(parent context.Context, endDrain func()) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-sigs:
			cancel()
		case <-done:
			return
		}
		select {
		case <-sigs:
			endDrain()
		case <-done:
		}
	})
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		wg.Wait()
		cancel()
	}
}

// tokenReviewer reaches the API server as graft's ServiceAccount (or a
// kubeconfig's user, outside a cluster) to review the tokens the API
// server presents (server.apiServerToken).
func tokenReviewer() (webhook.TokenReviewer, error) {
	cl, err := live.Connect(live.Config{Timeout: 5 * time.Second, UserAgent: "graft-serve/" + buildInfo().Version})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, token, audience string) (webhook.TokenReview, error) {
		r, err := cl.ReviewToken(ctx, token, audience)
		return webhook.TokenReview(r), err
	}, nil
}
