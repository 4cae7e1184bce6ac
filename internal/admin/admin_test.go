package admin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/graftdev/graft/internal/connlimit"
)

// testLimits are short enough to wait out in a test.
var testLimits = limits{
	maxConns:           64,
	maxConnsPerAddress: 16,
	maxHeaderBytes:     1 << 10,
	readTimeout:        300 * time.Millisecond,
	writeTimeout:       time.Second,
	idleTimeout:        500 * time.Millisecond,
	shutdownGrace:      200 * time.Millisecond,
}

type served struct {
	*Server
	url  string
	stop func() error
}

// serve runs o on a loopback port until the test ends (or stop).
func serve(t *testing.T, o Options) *served {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(ln, o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var stopped atomic.Bool
	stop := func() error {
		if stopped.Swap(true) {
			return nil
		}
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute):
			return errors.New("Run did not return within a minute of its context ending")
		}
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	return &served{Server: s, url: "http://" + s.Addr().String(), stop: stop}
}

func registry(t *testing.T) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "graft_test_total", Help: "A test counter."})
	c.Add(3)
	reg.MustRegister(c)
	return reg
}

// roundTrip writes raw on a new connection and reads one response: its
// status and body, and with checkClosed whether the server then closed
// the connection.
func roundTrip(t *testing.T, addr, raw string, checkClosed bool) (int, string, bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%q: no response: %v", raw, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !checkClosed {
		return resp.StatusCode, string(body), false
	}
	_, err = br.ReadByte()
	return resp.StatusCode, string(body), errors.Is(err, io.EOF) || isReset(err)
}

func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// TestRoutes: each route's answer, by method and readiness; anything
// else is refused with the reason.
func TestRoutes(t *testing.T) {
	var why atomic.Pointer[string]
	notReady := "warming up"
	why.Store(&notReady)
	s := serve(t, Options{Metrics: Gathered(registry(t)), NotReady: func() string { return *why.Load() },
		Version: "graft v1.2.3\n", limits: testLimits})
	addr := s.Addr().String()
	get := func(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: graft\r\n\r\n" }
	for _, tc := range []struct {
		name, req string
		code      int
		body      string
		closed    bool
	}{
		{"healthz", get("/healthz"), 200, "ok\n", false},
		{"readyz, not ready", get("/readyz"), 503, "not ready: warming up\n", false},
		{"metrics", get("/metrics"), 200, "graft_test_total 3\n", false},
		{"version", get("/version"), 200, "graft v1.2.3\n", false},
		{"HEAD", "HEAD /healthz HTTP/1.1\r\nHost: graft\r\n\r\n", 200, "", false},
		{"unknown path", get("/debug/pprof/"), 404, "not found\n", false},
		{"POST", "POST /metrics HTTP/1.1\r\nHost: graft\r\nContent-Length: 0\r\n\r\n", 405, "method not allowed\n", false},
		{"a body", "GET /healthz HTTP/1.1\r\nHost: graft\r\nContent-Length: 5\r\n\r\nhello", 413, "no body", true},
		{"a chunked body", "GET /healthz HTTP/1.1\r\nHost: graft\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 413, "no body", true},
		{"HTTP/9.9", "GET /healthz HTTP/9.9\r\nHost: graft\r\n\r\n", 505, "", true},
		{"a head over the bound", "GET /healthz HTTP/1.1\r\nHost: graft\r\nX-Pad: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", 431, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, closed := roundTrip(t, addr, tc.req, tc.closed)
			if code != tc.code || !strings.Contains(body, tc.body) {
				t.Errorf("%d %q, want %d with %q", code, body, tc.code, tc.body)
			}
			if tc.closed && !closed {
				t.Error("connection kept open")
			}
		})
	}
	ready := ""
	why.Store(&ready)
	if code, body, _ := roundTrip(t, addr, get("/readyz"), false); code != 200 || body != "ok\n" {
		t.Errorf("readyz, ready: %d %q", code, body)
	}
	if code, _, _ := roundTrip(t, addr, "POST /metrics HTTP/1.1\r\nHost: graft\r\nContent-Length: 0\r\n\r\n", false); code != 405 {
		t.Errorf("POST: %d", code)
	}
}

// TestNoMetrics: without a metrics handler, /metrics is not found and
// the other routes still answer.
func TestNoMetrics(t *testing.T) {
	s := serve(t, Options{limits: testLimits})
	get := func(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: graft\r\n\r\n" }
	if code, _, _ := roundTrip(t, s.Addr().String(), get("/metrics"), false); code != http.StatusNotFound {
		t.Errorf("/metrics: %d, want 404", code)
	}
	if code, _, _ := roundTrip(t, s.Addr().String(), get("/healthz"), false); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
}

// TestText: a Text handler's bytes are /metrics, typed as exposition
// text.
func TestText(t *testing.T) {
	s := serve(t, Options{Metrics: Text(func(w io.Writer) error {
		_, err := io.WriteString(w, "graft_audit_pods 7\n")
		return err
	}), limits: testLimits})
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "graft_audit_pods 7\n" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Errorf("%q, %q", body, resp.Header.Get("Content-Type"))
	}
}

func dialFrom(t *testing.T, addr, src string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin reads c until the server closes it, at most d; it
// returns how long that took from start.
func closedWithin(t *testing.T, c net.Conn, start time.Time, d time.Duration) time.Duration {
	t.Helper()
	_ = c.SetReadDeadline(start.Add(d))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("still open after %s", d)
	}
	return time.Since(start)
}

// TestLimits: connections over the per-address bound are closed as they
// are accepted while another address still gets through; a client that
// sends its head slowly, or sends nothing after a request, is let go
// after the read or idle timeout, and never before.
func TestLimits(t *testing.T) {
	lim := testLimits
	lim.maxConnsPerAddress = 2
	s := serve(t, Options{Metrics: Gathered(registry(t)), limits: lim})
	addr := s.Addr().String()
	for range lim.maxConnsPerAddress {
		dialFrom(t, addr, "127.0.0.2")
	}
	over := dialFrom(t, addr, "127.0.0.2")
	closedWithin(t, over, time.Now(), time.Minute)
	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}}).DialContext}}
	resp, err := probe.Get(s.url + "/healthz")
	if err != nil {
		t.Fatalf("a probe from another address: %v", err)
	}
	resp.Body.Close()

	// Slow: half a head, then nothing.
	slow := dialFrom(t, addr, "127.0.0.4")
	start := time.Now()
	if _, err := io.WriteString(slow, "GET /healthz HTTP/1.1\r\nHost: gr"); err != nil {
		t.Fatal(err)
	}
	if took := closedWithin(t, slow, start, time.Minute); took < testLimits.readTimeout {
		t.Errorf("a slow head was cut after %s, before the read timeout %s", took, testLimits.readTimeout)
	}

	// Idle: one request answered, then nothing.
	idle := dialFrom(t, addr, "127.0.0.5")
	if _, err := io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: graft\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(idle)
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	start = time.Now()
	if took := closedWithin(t, idle, start, time.Minute); took < testLimits.idleTimeout-50*time.Millisecond {
		t.Errorf("an idle connection was closed after %s, before the idle timeout %s", took, testLimits.idleTimeout)
	}
}

// gauge counts into an int64.
type gauge struct{ n *atomic.Int64 }

func (g gauge) Inc() { g.n.Add(1) }
func (g gauge) Dec() { g.n.Add(-1) }

func connCounters(open *atomic.Int64) connlimit.Counters {
	return connlimit.Counters{Open: gauge{open}}
}

// TestRunLeavesNothing: stopping with connections idle, half-read and
// in flight ends every goroutine the server started, within the
// shutdown grace for the request in flight, and releases every
// connection's count.
func TestRunLeavesNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	release := make(chan struct{})
	defer close(release)
	slowMetrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // a scrape that outlives the grace
		case <-release:
		case <-r.Context().Done():
		}
	})
	var open atomic.Int64
	lim := testLimits
	lim.readTimeout, lim.idleTimeout = time.Hour, time.Hour
	s := serve(t, Options{Metrics: slowMetrics, limits: lim, Conns: connCounters(&open)})
	addr := s.Addr().String()

	idle := dialFrom(t, addr, "127.0.0.1")
	if _, err := io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: graft\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := http.ReadResponse(bufio.NewReader(idle), nil); err != nil {
		t.Fatal(err)
	}
	half := dialFrom(t, addr, "127.0.0.2")
	if _, err := io.WriteString(half, "GET /healthz HTTP/1.1\r\n"); err != nil {
		t.Fatal(err)
	}
	busy := dialFrom(t, addr, "127.0.0.3")
	if _, err := io.WriteString(busy, "GET /metrics HTTP/1.1\r\nHost: graft\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); open.Load() != 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections counted, want 3", open.Load())
		}
	}
	if err := s.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := open.Load(); n != 0 {
		t.Errorf("%d connections still counted after Run returned", n)
	}
	for _, c := range []net.Conn{idle, half, busy} {
		closedWithin(t, c, time.Now(), time.Minute)
	}
}

// TestWhile: the server serves while the work runs and stops when it
// returns; a server that fails ends the work's context and says why.
func TestWhile(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(ln, Options{Metrics: Gathered(registry(t)), limits: testLimits})
	url := "http://" + s.Addr().String() + "/healthz"
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	workErr := errors.New("work done")
	err = s.While(t.Context(), func(ctx context.Context) error {
		resp, err := client.Get(url)
		if err != nil {
			return fmt.Errorf("not served while the work runs: %w", err)
		}
		resp.Body.Close()
		return workErr
	})
	if !errors.Is(err, workErr) {
		t.Errorf("While: %v, want the work's error", err)
	}
	if _, err := client.Get(url); err == nil {
		t.Error("still served after the work returned")
	}

	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s = New(ln, Options{Metrics: Gathered(registry(t)), limits: testLimits})
	err = s.While(t.Context(), func(ctx context.Context) error {
		ln.Close() // the server's listener fails under it
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Minute):
			return errors.New("the work's context did not end when the server failed")
		}
	})
	if err == nil || !strings.Contains(err.Error(), "admin server") {
		t.Errorf("While after the server failed: %v, want the server's error", err)
	}
}
