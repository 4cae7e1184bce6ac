package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/webhook"
)

func newServeCmd() *cobra.Command {
	var (
		configPath string
		flags      config.Server
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the admission webhook over TLS",
		Long: `Serve the mutating admission webhook on --addr (TLS) and /metrics, /healthz
and /readyz on --admin-addr (plain HTTP). Without --tls-cert/--tls-key a
self-signed certificate is generated and its CA bundle logged. Settings come
from --config and are overridden by flags. SIGTERM drains in-flight requests
and exits 0.`,
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
				set("tls-cert", &s.TLSCert, flags.TLSCert)
				set("tls-key", &s.TLSKey, flags.TLSKey)
				set("client-ca", &s.ClientCA, flags.ClientCA)
				set("templates-dir", &s.TemplatesDir, flags.TemplatesDir)
				set("log-level", &s.LogLevel, flags.LogLevel)
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
				ConfigPath: configPath,
				Override:   override,
				Logger:     log,
				Level:      &atomicLevel,
				Registry:   reg,
			})
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return srv.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&configPath, "config", "", "YAML config file (engine profiles and a server: section); watched for changes")
	f.StringVar(&flags.Addr, "addr", config.DefaultAddr, "TLS listen address of the webhook")
	f.StringVar(&flags.AdminAddr, "admin-addr", config.DefaultAdminAddr, "plain-HTTP address for /metrics, /healthz and /readyz")
	f.StringVar(&flags.TLSCert, "tls-cert", "", "serving certificate (PEM); reloaded when it changes")
	f.StringVar(&flags.TLSKey, "tls-key", "", "serving key (PEM); reloaded when it changes")
	f.StringVar(&flags.ClientCA, "client-ca", "", "require client certificates signed by these CAs (PEM)")
	f.StringVar(&flags.TemplatesDir, "templates-dir", "", "directory of templates overlaying the built-in ones; watched for changes")
	f.StringVar(&flags.LogLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}
