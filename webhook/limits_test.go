package webhook

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/internal/admin"
)

// TestDeclaredBodiesCostNothing: connections that declare the largest
// body and send one byte of it hold no more than their buffers, whatever
// they declare (fasthttp reading bodies itself allocated the declared
// length at once: 8 MiB each).
func TestDeclaredBodiesCostNothing(t *testing.T) {
	// No connection times out while the others are opened.
	ts := startServer(t, serverSetup{override: func(s *config.Server) { s.ReadTimeout = config.Duration{Duration: time.Minute} }})
	const conns = 40
	before := heapInUse()
	for range conns {
		c := dialTLS(t, ts.Addr().String(), "127.0.0.1")
		if _, err := c.Write([]byte(declaredHead)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the heads to be read", func() bool { return metric(t, ts.reg, "graft_connections", "port", "webhook") >= conns })
	time.Sleep(200 * time.Millisecond) // the server reads what was sent
	if grew := heapInUse() - before; grew > 16<<20 {
		t.Errorf("heap grew by %d MiB for %d connections declaring %d MiB each", grew>>20, conns, config.DefaultMaxBodyBytes>>20)
	}
}

// declaredHead declares the largest body and sends one byte of it.
var declaredHead = fmt.Sprintf("POST /inject HTTP/1.1\r\nHost: graft\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{",
	config.DefaultMaxBodyBytes)

// TestStalledBodyAnswered: a body that stops coming is answered 408 at
// the read timeout, and the connection closed; the client can read the
// answer although the write deadline the handshake left is long past.
func TestStalledBodyAnswered(t *testing.T) {
	ts := startServer(t, serverSetup{override: func(s *config.Server) {
		// The handshake's deadline passes before the read timeout's; both
		// long enough for a handshake on a loaded machine.
		s.HandshakeTimeout = config.Duration{Duration: 3 * time.Second}
		s.ReadTimeout = config.Duration{Duration: 5 * time.Second}
	}})
	c := dialTLS(t, ts.Addr().String(), "127.0.0.1")
	if _, err := c.Write([]byte(declaredHead)); err != nil {
		t.Fatal(err)
	}
	status, _, closed := readAnswer(t, c, 20*time.Second)
	if status != http.StatusRequestTimeout || !closed {
		t.Fatalf("a stalled body: %d (closed %v), want 408 and the connection closed", status, closed)
	}
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// TestBodyBudget: bodies take their bytes from maxBodyBytesInFlight as
// they arrive. While a stalled body holds the budget, a review that needs
// more is refused with 503 within its ?timeout=, not later; once the
// stalled one is gone the same review is served, and the budget is whole
// again.
func TestBodyBudget(t *testing.T) {
	const budget = 1 << 20
	ts := startServer(t, serverSetup{override: func(s *config.Server) {
		s.MaxBodyBytes, s.MaxBodyBytesInFlight = budget, budget
		s.TimeoutMargin = config.Duration{Duration: 100 * time.Millisecond}
		// Far past the test client's 30 s: were the wait for the budget
		// bounded by the read timeout rather than the request's
		// ?timeout=1s, the client would give up first and the test fail,
		// whatever the machine's load.
		s.ReadTimeout = config.Duration{Duration: 10 * time.Minute}
	}})
	big := paddedReview(t, 600<<10)

	// A client sends most of a body of the largest size and stops.
	stalled := dialTLS(t, ts.Addr().String(), "127.0.0.2")
	fmt.Fprintf(stalled, "POST /inject HTTP/1.1\r\nHost: graft\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", budget)
	if _, err := stalled.Write(bytes.Repeat([]byte(" "), 700<<10)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stalled body to hold the budget", func() bool {
		return metric(t, ts.reg, "graft_request_body_bytes") > budget/2
	})

	code, out := ts.post(t, "/inject?timeout=1s", big)
	if code != http.StatusServiceUnavailable || !strings.Contains(string(out), "maxBodyBytesInFlight") {
		t.Fatalf("review while the budget is held: %d %q, want 503 naming maxBodyBytesInFlight", code, out)
	}
	if got := metric(t, ts.reg, "graft_http_refusals_total", "reason", refusedBodyBudget); got != 1 {
		t.Errorf("refusals{body_bytes_in_flight} = %v, want 1", got)
	}

	stalled.Close()
	waitFor(t, "the stalled body to give its bytes back", func() bool { return metric(t, ts.reg, "graft_request_body_bytes") == 0 })
	code, out = ts.post(t, "/inject?timeout=1s", big)
	if code != http.StatusOK || !bytes.Contains(out, []byte(`"patchType":"JSONPatch"`)) {
		t.Fatalf("review after the budget came back: %d %.200q", code, out)
	}
	if got := metric(t, ts.reg, "graft_request_body_bytes"); got != 0 {
		t.Errorf("budget held after the review: %v bytes", got)
	}
}

// TestLargeBodies: bodies of every size class (read with the headers,
// one pooled buffer, grown from it) are read whole and answered, on one
// kept-alive connection; a body over maxBodyBytes gets 413 unread, and
// its connection is closed.
func TestLargeBodies(t *testing.T) {
	ts := startServer(t, serverSetup{})
	for _, size := range []int{0, 6 << 10, 60 << 10, 300 << 10, 5 << 20} {
		review := corpus.Review(corpus.Small)
		if size > len(review) {
			review = paddedReview(t, size)
		}
		code, out := ts.post(t, "/inject", review)
		if code != http.StatusOK || !bytes.Contains(out, []byte(`"allowed":true`)) {
			t.Fatalf("%d-byte review: %d %.200q", len(review), code, out)
		}
	}
	if got := metric(t, ts.reg, "graft_request_body_bytes"); got != 0 {
		t.Errorf("budget held after the reviews: %v bytes", got)
	}
	c := dialTLS(t, ts.Addr().String(), "127.0.0.1")
	fmt.Fprintf(c, "POST /inject HTTP/1.1\r\nHost: graft\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", config.DefaultMaxBodyBytes+1)
	status, body, closed := readAnswer(t, c, 5*time.Second)
	if status != http.StatusRequestEntityTooLarge || !closed || !strings.Contains(body, "larger than") {
		t.Fatalf("oversized body: %d %q (closed %v), want 413 and the connection closed", status, body, closed)
	}
}

// TestConnectionLimits: past maxConnsPerAddress a client's new
// connections are closed as they are accepted, before any handshake,
// while other addresses still connect. At maxConns a new connection from
// an address holding n takes the place of a connection idle a second or
// more from an address holding at least 2n and n+2, and is refused when
// the addresses hold about as many.
func TestConnectionLimits(t *testing.T) {
	ts := startServer(t, serverSetup{override: func(s *config.Server) { s.MaxConns, s.MaxConnsPerAddress = 6, 4 }})
	addr := ts.Addr().String()
	handshake := func(src string) (*tls.Conn, error) {
		c, err := dialFrom(addr, src)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true})
		if err := tc.Handshake(); err != nil {
			c.Close()
			return nil, err
		}
		return tc, nil
	}
	var held []*tls.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	hold := func(src string) *tls.Conn {
		t.Helper()
		c, err := handshake(src)
		if err != nil {
			t.Fatalf("connection from %s refused within the limits: %v", src, err)
		}
		held = append(held, c)
		return c
	}
	counter := func(name string, labels ...string) float64 {
		return metric(t, ts.reg, name, append([]string{"port", "webhook"}, labels...)...)
	}
	refused := func(src, reason string, want float64) {
		t.Helper()
		if c, err := handshake(src); err == nil {
			c.Close()
			t.Fatalf("connection from %s accepted over the limits", src)
		}
		if got := counter("graft_connections_refused_total", "reason", reason); got != want {
			t.Errorf("refused{%s} = %v, want %v", reason, got, want)
		}
	}
	ended := func(c *tls.Conn, what string) {
		t.Helper()
		if _, err := readWithin(t, c, 5*time.Second); !errors.Is(err, io.EOF) && !isReset(err) {
			t.Errorf("%s: read %v, want it ended", what, err)
		}
	}
	evicted := func(want float64, open float64) {
		t.Helper()
		if got := counter("graft_connections_evicted_total"); got != want {
			t.Errorf("evicted = %v, want %v", got, want)
		}
		waitFor(t, "the evicted connection to leave", func() bool { return counter("graft_connections") == open })
	}
	var second []*tls.Conn // from 127.0.0.2, oldest first
	for range 4 {
		second = append(second, hold("127.0.0.2"))
	}
	refused("127.0.0.2", refusedPerAddress, 1)
	hold("127.0.0.3")
	hold("127.0.0.3")
	// Full. (That a connection idle for less than evictMinIdle is not
	// evicted is TestEvictIdle's: here every one has been idle longer.)
	time.Sleep(evictMinIdle + 100*time.Millisecond)
	hold("127.0.0.3")
	ended(second[0], "the connection idle longest of an address holding twice as many")
	evicted(1, 6)
	// 127.0.0.2 and 127.0.0.3 hold three each: neither takes the other's
	// places.
	refused("127.0.0.3", refusedTotal, 1)
	refused("127.0.0.2", refusedTotal, 2)

	// A newcomer from an address holding none takes the place of the
	// connection idle longest of either. (That busy connections are
	// passed over, whatever their address holds, is TestEvictIdle's and
	// internal/connlimit's.)
	newcomer := hold("127.0.0.4")
	ended(second[1], "the connection idle longest of the addresses holding two or more")
	evicted(2, 6)
	status, _, _ := exchange(t, newcomer, rawReview(corpus.Review(corpus.Small)), 10*time.Second)
	if status != http.StatusOK {
		t.Errorf("review on the connection that took the evicted one's place: %d", status)
	}
}

// TestEvictIdle: only a connection from an address accepted, idle for
// evictMinIdle or more, is evicted: one that never carried a request
// first, then the one idle longest; a busy one never is.
func TestEvictIdle(t *testing.T) {
	set := newConnSet()
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	fromA := func(x netip.Addr) bool { return x == a }
	conn := func(addr netip.Addr, phase connPhase, idleFor time.Duration, used bool) *serverConn {
		server, client := net.Pipe()
		t.Cleanup(func() {
			server.Close()
			client.Close()
		})
		c := &serverConn{raw: &rawConn{Conn: server}, addr: addr}
		c.raw.phase.Store(phase)
		c.raw.idleSince.Store(time.Now().Add(-idleFor).UnixNano())
		c.raw.used.Store(used)
		set.add(c)
		return c
	}
	recent := conn(a, connIdle, evictMinIdle/2, false)
	busy := conn(a, connActive, time.Hour, false)
	other := conn(b, connIdle, time.Hour, false)
	if set.evictIdle(fromA) {
		t.Fatal("evicted a connection idle for less than evictMinIdle, a busy one, or one from another address")
	}
	usedOldest := conn(a, connIdleSeen, 4*evictMinIdle, true)
	older := conn(a, connIdleSeen, 2*evictMinIdle, false)
	oldest := conn(a, connIdle, 3*evictMinIdle, false)
	for i, want := range []*serverConn{oldest, older, usedOldest} {
		if !set.evictIdle(fromA) || want.raw.phase.Load() != connRetiring {
			t.Fatalf("eviction %d: not the unused connection idle longest, then the used one", i+1)
		}
	}
	for _, c := range []*serverConn{recent, busy, other} {
		if c.raw.phase.Load() == connRetiring {
			t.Errorf("%v evicted", c.addr)
		}
	}
	// Offered both addresses, with a's left busy or recent, b's goes.
	if !set.evictIdle(func(netip.Addr) bool { return true }) || other.raw.phase.Load() != connRetiring {
		t.Error("the idle connection of the second address offered was not evicted beside the first's busy ones")
	}
}

// TestAdminConnectionLimits: the admin port bounds connections per
// address too; probes from another address still get through.
func TestAdminConnectionLimits(t *testing.T) {
	ts := startServer(t, serverSetup{})
	addr := ts.AdminAddr().String()
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range admin.MaxConnsPerAddress {
		c, err := dialFrom(addr, "127.0.0.2")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	waitFor(t, "the connections to be counted", func() bool {
		return metric(t, ts.reg, "graft_connections", "port", "admin") == admin.MaxConnsPerAddress
	})
	over, err := dialFrom(addr, "127.0.0.2")
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	if _, err := readWithin(t, over, 5*time.Second); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Errorf("connection over the per-address bound: read %v, want it closed", err)
	}
	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}}).DialContext}}
	if code := getStatus(t, probe, ts.admin+"/healthz"); code != http.StatusOK {
		t.Errorf("probe from another address: %d", code)
	}
}

func isReset(err error) bool { return err != nil && strings.Contains(err.Error(), "connection reset") }

// TestSilentConnections: a connection that does not finish its TLS
// handshake is closed after handshakeTimeout, one that sends no request
// after its handshake after firstRequestTimeout; one that has served a
// request waits idleTimeout for the next.
func TestSilentConnections(t *testing.T) {
	// Timeouts of seconds, not the shipped ones: a handshake under -race
	// on a busy machine took longer than 300 ms and was cut before the
	// test could start.
	ts := startServer(t, serverSetup{override: func(s *config.Server) {
		s.HandshakeTimeout = config.Duration{Duration: 1500 * time.Millisecond}
		s.FirstRequestTimeout = config.Duration{Duration: 3 * time.Second}
		s.IdleTimeout = config.Duration{Duration: time.Hour}
	}})
	addr := ts.Addr().String()

	// closedAfter reads c until graft closes it, which must be between
	// min and max after start. The lower bound is graft's timeout, which
	// no load can shorten; the upper one only tells these timeouts from
	// the hour-long idle timeout, with minutes of slack for a loaded
	// machine.
	var wg sync.WaitGroup
	closedAfter := func(name string, c net.Conn, start time.Time, min, max time.Duration) {
		defer wg.Done()
		_ = c.SetReadDeadline(start.Add(max))
		_, err := c.Read(make([]byte, 1))
		took := time.Since(start)
		if isTimeout(err) {
			t.Errorf("%s: still open after %s", name, max)
			return
		}
		if took < min || took > max {
			t.Errorf("%s: closed after %s, want between %s and %s", name, took, min, max)
		}
	}
	tcpStart := time.Now()
	tcp, err := dialFrom(addr, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	silent := dialTLS(t, addr, "127.0.0.1")
	silentStart := time.Now()
	wg.Add(2)
	go closedAfter("no handshake", tcp, tcpStart, 1500*time.Millisecond, 5*time.Minute)
	// The server's wait starts after its side of the handshake, before
	// the client's ends.
	go closedAfter("no request after the handshake", silent, silentStart, 2500*time.Millisecond, 5*time.Minute)

	used := dialTLS(t, addr, "127.0.0.1")
	if status, _, _ := exchange(t, used, rawReview(corpus.Review(corpus.Small)), 10*time.Second); status != http.StatusOK {
		t.Fatalf("first review: %d", status)
	}
	wg.Wait()
	// Past the first-request timeout, the used connection is still
	// open: it waits the idle timeout.
	if status, _, _ := exchange(t, used, rawReview(corpus.Review(corpus.Small)), 10*time.Second); status != http.StatusOK {
		t.Fatalf("second review on the kept-alive connection: %d", status)
	}
}

// rawReview is review as the API server posts it.
func rawReview(review []byte) []byte {
	return append([]byte(fmt.Sprintf("POST /inject?timeout=10s HTTP/1.1\r\nHost: graft\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(review))), review...)
}

// readAnswer reads one response already on its way.
func readAnswer(t *testing.T, c net.Conn, d time.Duration) (int, string, bool) {
	t.Helper()
	return exchange(t, c, nil, d)
}
