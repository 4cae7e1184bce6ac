package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graftdev/graft/webhook"
	"github.com/graftdev/graft/webhook/certgen"
)

// TestVersionServer: graft version --server prints this binary's version
// and what graft's real server answers on its admin port's /version, and
// fails, saying why, where no graft answers.
func TestVersionServer(t *testing.T) {
	const served = "graft v9.9.9\n  revision: 0123456789abcdef\n"
	srv, _ := startServer(t, webhook.Options{Version: served}, "localhost")
	admin := "http://" + srv.AdminAddr().String()
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string // in stdout (code 0) or stderr
	}{
		{"client only", []string{"version"}, 0, []string{buildInfo().String()}},
		{"client and server", []string{"version", "--server", admin}, 0,
			[]string{"client: " + buildInfo().String(), "server: " + served}},
		{"trailing slash", []string{"version", "--server", admin + "/"}, 0, []string{"server: " + served}},
		{"not a URL", []string{"version", "--server", "localhost:8080"}, 1, []string{"want graft's admin address as http://host:port"}},
		{"not graft's admin port", []string{"version", "--server", admin + "/metrics"}, 1, []string{"/version answered 404"}},
		{"nothing listening", []string{"version", "--server", "http://127.0.0.1:1"}, 1, []string{"--server http://127.0.0.1:1", "refused"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(c.args, strings.NewReader(""), &stdout, &stderr)
			got := stdout.String()
			if c.code != 0 {
				got = stderr.String()
			}
			if code != c.code {
				t.Fatalf("exit %d, want %d; stdout %q, stderr %q", code, c.code, stdout.String(), stderr.String())
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("output %q lacks %q", got, w)
				}
			}
		})
	}
}

// TestVersionNotOnWebhookPort: the webhook port, open to whatever can
// reach the API server's webhooks, does not say which build serves.
func TestVersionNotOnWebhookPort(t *testing.T) {
	srv, certs := startServer(t, webhook.Options{Version: "graft v9.9.9\n"}, "localhost")
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(filepath.Join(certs, certgen.CAFile))
	if err != nil || !pool.AppendCertsFromPEM(ca) {
		t.Fatalf("CA: %v", err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
	resp, err := client.Get("https://" + srv.Addr().String() + "/version")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || strings.Contains(string(body), "v9.9.9") {
		t.Errorf("webhook port /version: %s %q, want 404 without the version", resp.Status, body)
	}
}
