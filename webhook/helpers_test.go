package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/internal/fixture"
	"github.com/graftdev/graft/webhook/certgen"
)

// testServer is a Server running on loopback with a net/http client that
// trusts its certificate.
type testServer struct {
	*Server
	reg     *prometheus.Registry
	logs    *syncBuffer
	client  *http.Client
	plain   *http.Client // for the admin port
	caPool  *x509.CertPool
	certDir string
	url     string // https://127.0.0.1:port
	admin   string // http://127.0.0.1:port
	cancel  context.CancelFunc
	done    chan error
	reloads chan error
	certEvs chan error
}

type serverSetup struct {
	configYAML string // written to a file and passed as --config when set
	override   func(*config.Server)
	clock      func() time.Time
	// noWaitReady skips waiting for /readyz.
	noWaitReady bool
	// tokenReviewer is Options.TokenReviewer.
	tokenReviewer func() (TokenReviewer, error)
}

func startServer(t *testing.T, setup serverSetup) *testServer {
	t.Helper()
	dir := t.TempDir()
	certDir := filepath.Join(dir, "certs")
	bundle := writeBundle(t, certDir)
	ts := &testServer{
		reg:     prometheus.NewRegistry(),
		logs:    &syncBuffer{},
		caPool:  x509.NewCertPool(),
		certDir: certDir,
		done:    make(chan error, 1),
		reloads: make(chan error, 16),
		certEvs: make(chan error, 16),
	}
	ts.caPool.AppendCertsFromPEM(bundle.CACert)
	var configPath string
	if setup.configYAML == "" {
		// The built-in profiles and the engine fixture's (agent), which
		// most tests post to.
		y, err := yaml.Marshal(fixture.Config())
		if err != nil {
			t.Fatal(err)
		}
		setup.configYAML = string(y)
	}
	if setup.configYAML != "" {
		configPath = filepath.Join(dir, "config", "graft.yaml")
		writeFile(t, configPath, setup.configYAML)
	}
	log, lvl, err := NewLogger(ts.logs, "debug")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{
		ConfigPath: configPath,
		Override: func(s *config.Server) {
			s.Addr, s.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
			s.TLSCert, s.TLSKey = filepath.Join(certDir, certgen.CertFile), filepath.Join(certDir, certgen.KeyFile)
			// Tests that are not about the drain should not wait for it.
			s.DrainDelay = config.Duration{Duration: time.Millisecond}
			// The engine's fixture templates beside the built-in ones.
			s.TemplatesDir = fixture.Dir()
			if setup.override != nil {
				setup.override(s)
			}
		},
		Logger:        log,
		Level:         &lvl,
		Registry:      ts.reg,
		Clock:         setup.clock,
		OnReload:      func(err error) { ts.reloads <- err },
		OnCertReload:  func(err error) { ts.certEvs <- err },
		TokenReviewer: setup.tokenReviewer,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts.Server = srv
	ts.url = "https://" + srv.Addr().String()
	ts.admin = "http://" + srv.AdminAddr().String()
	ts.client = newClient(ts.caPool, nil)
	ts.plain = &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	ts.cancel = cancel
	go func() { ts.done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		ts.stop(t)
		ts.client.CloseIdleConnections()
		ts.plain.CloseIdleConnections()
	})
	if !setup.noWaitReady {
		ts.waitReady(t)
	}
	return ts
}

// stop shuts the server down (once) and returns Run's error.
func (ts *testServer) stop(t *testing.T) error {
	t.Helper()
	ts.cancel()
	select {
	case err, ok := <-ts.done:
		if ok {
			close(ts.done)
			return err
		}
		return nil
	case <-time.After(30 * time.Second):
		t.Fatal("server did not stop")
		return nil
	}
}

// waitReady polls /readyz: readiness follows a warm-up whose length the
// test does not control. The minute only bounds a hang (the warm-up
// takes well under a second on an idle machine, many times that under
// -race on a loaded one).
func (ts *testServer) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		resp, err := ts.plain.Get(ts.admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("not ready; logs:\n%s", ts.logs.String())
}

func newClient(roots *x509.CertPool, cert *tls.Certificate) *http.Client {
	tc := &tls.Config{RootCAs: roots, ServerName: "localhost"}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{
		Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: false},
		Timeout:   30 * time.Second,
	}
}

// post sends body to path as the API server would.
func (ts *testServer) post(t *testing.T, path string, body []byte) (int, []byte) {
	t.Helper()
	return doPost(t, ts.client, ts.url+path, "application/json", body)
}

func doPost(t *testing.T, c *http.Client, url, contentType string, body []byte) (int, []byte) {
	t.Helper()
	resp, err := c.Post(url, contentType, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// writeBundle issues a serving certificate for localhost into dir.
func writeBundle(t *testing.T, dir string) *certgen.Bundle {
	t.Helper()
	b, err := certgen.Generate(certgen.Options{DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Write(dir); err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// Write then rename, so a watcher never reads a half-written file.
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// waitEvent waits for a reload report from ch.
func waitEvent(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s reload reported", what)
		return nil
	}
}

// metric returns the value of the series name{labels} from reg (0 if
// absent); a histogram gives its sample count.
func metric(t *testing.T, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !labelsMatch(m.GetLabel(), want) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

func labelsMatch(got []*dto.LabelPair, want map[string]string) bool {
	n := 0
	for _, l := range got {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// syncBuffer collects log output written from server goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lines returns the JSON log lines whose msg is msg.
func (s *syncBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			continue
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}
