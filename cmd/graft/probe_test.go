package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/webhook"
	"github.com/graftdev/graft/webhook/certgen"
)

// startWebhook runs graft's real webhook server on loopback with a
// certificate for dnsNames, signed by a CA written to the returned
// directory as ca.crt; it returns the port and that directory.
func startWebhook(t *testing.T, dnsNames ...string) (port, certs string) {
	t.Helper()
	srv, certs := startServer(t, webhook.Options{}, dnsNames...)
	_, port, err := net.SplitHostPort(srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port, certs
}

// startServer is startWebhook with opts (its Override, Logger and
// Registry set here) and the running server returned.
func startServer(t *testing.T, opts webhook.Options, dnsNames ...string) (srv *webhook.Server, certs string) {
	t.Helper()
	b, err := certgen.Generate(certgen.Options{DNSNames: dnsNames})
	if err != nil {
		t.Fatal(err)
	}
	certs = t.TempDir()
	if err := b.Write(certs); err != nil {
		t.Fatal(err)
	}
	opts.Override = func(s *config.Server) {
		s.Addr, s.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
		s.TLSCert, s.TLSKey = filepath.Join(certs, certgen.CertFile), filepath.Join(certs, certgen.KeyFile)
		s.DrainDelay, s.ShutdownGrace = config.Duration{Duration: time.Millisecond}, config.Duration{Duration: time.Second}
	}
	opts.Logger, opts.Registry = zap.NewNop(), prometheus.NewRegistry()
	srv, err = webhook.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("webhook server: %v", err)
		}
	})
	return srv, certs
}

// TestProbe: graft probe passes against graft's real server reached by a
// name its certificate carries, and fails, saying why, for a name it does
// not carry, another CA, a path graft does not serve, and plain HTTP.
func TestProbe(t *testing.T) {
	port, certs := startWebhook(t, "localhost")
	_, otherCA := startWebhook(t, "localhost")
	ca := filepath.Join(certs, certgen.CAFile)
	for _, c := range []struct {
		name string
		args []string
		code int
		want string // in stdout (code 0) or stderr
	}{
		{"answers", []string{"https://localhost:" + port + "/inject", "--ca-file", ca}, 0, "allowed"},
		{"a profile", []string{"https://localhost:" + port + "/inject/mesh-proxy", "--ca-file", ca}, 0, "templates mesh-proxy"},
		{"name not in the certificate", []string{"https://127.0.0.1:" + port + "/inject", "--ca-file", ca}, 1, "<service>.<namespace>.svc"},
		{"another CA", []string{"https://localhost:" + port + "/inject", "--ca-file", filepath.Join(otherCA, certgen.CAFile)}, 1, "is --ca-file the CA"},
		{"unknown profile", []string{"https://localhost:" + port + "/inject/nope", "--ca-file", ca}, 1, "404"},
		{"plain HTTP", []string{"http://localhost:" + port + "/inject"}, 1, "want an https:// URL"},
		{"CA file not PEM", []string{"https://localhost:" + port + "/inject", "--ca-file", filepath.Join(certs, "nope.crt")}, 1, "--ca-file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"probe"}, c.args...), nil, &stdout, &stderr)
			out := stdout.String()
			if c.code != 0 {
				out = stderr.String()
			}
			if code != c.code || !strings.Contains(out, c.want) {
				t.Errorf("exit %d, stdout %q, stderr %q: want exit %d and %q", code, stdout.String(), stderr.String(), c.code, c.want)
			}
		})
	}
}
