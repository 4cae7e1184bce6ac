// Package peerkit is what the load-test peers share with each other and
// with graft's server: the same flags (--addr, --admin-addr, --tls-cert,
// --tls-key), the same TLS settings, and an admin port with /metrics (the
// Go runtime's collector, so the harness reads allocations the same way for
// every peer), /healthz and /readyz.
package peerkit

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Flags are the command line every peer takes.
type Flags struct {
	Addr, AdminAddr, TLSCert, TLSKey string
}

// Main runs a peer: run gets a context cancelled by SIGINT or SIGTERM, and
// an error exits 1 with the peer's name.
func Main(name string, run func(ctx context.Context, args []string, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		stop()
		os.Exit(1)
	}
}

// ParseFlags parses args (without the program name).
func ParseFlags(name string, args []string, stderr io.Writer) (Flags, error) {
	var f Flags
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.Addr, "addr", "127.0.0.1:8443", "HTTPS listen address")
	fs.StringVar(&f.AdminAddr, "admin-addr", "127.0.0.1:8080", "plain-HTTP address for /metrics, /healthz, /readyz")
	fs.StringVar(&f.TLSCert, "tls-cert", "", "serving certificate (PEM)")
	fs.StringVar(&f.TLSKey, "tls-key", "", "serving key (PEM)")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if f.TLSCert == "" || f.TLSKey == "" {
		return f, errors.New("--tls-cert and --tls-key are required")
	}
	return f, nil
}

// TLSConfig is the server TLS every peer uses: TLS 1.2 or newer, HTTP/1.1
// only (what the API server offers a Service-referenced webhook).
func TLSConfig(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load TLS key pair: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"http/1.1"},
	}, nil
}

// AdminHandler serves /metrics from a registry holding the Go runtime and
// process collectors, and /healthz and /readyz.
func AdminHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }
	mux.HandleFunc("GET /healthz", ok)
	mux.HandleFunc("GET /readyz", ok)
	return mux
}

// ServeAdmin serves AdminHandler on ln until ctx ends.
func ServeAdmin(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: AdminHandler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("admin server: %w", err)
	}
	return nil
}

// Listen opens the serving and admin listeners named by f.
func Listen(f Flags) (serve, admin net.Listener, err error) {
	serve, err = net.Listen("tcp", f.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen %s: %w", f.Addr, err)
	}
	admin, err = net.Listen("tcp", f.AdminAddr)
	if err != nil {
		serve.Close()
		return nil, nil, fmt.Errorf("listen %s: %w", f.AdminAddr, err)
	}
	return serve, admin, nil
}
