package webhook

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/graftdev/graft/internal/connlimit"
)

// Every webhook connection is tracked from accept to close, so that
// shutdown can end the idle keep-alive ones without losing a request.
//
// HTTP/1.1 has no way to tell a client "do not send on this connection"
// other than closing it, and a client that takes an idle connection from
// its pool and writes a request on it just as the server closes it loses
// that request: the API server does not retry a POST. The client only
// learns of the close when its reader sees it, which on a busy client can
// take many milliseconds. So graft ends connections by answering on them
// with Connection: close wherever it can (every response during the
// drain, and rotation), never times out an idle connection before the
// client would (see config.Server.IdleTimeout), and leaves idle ones open
// for the whole drain. Once the listener has closed, a client that wants
// a connection to graft has only its pooled ones left and takes them; one
// still idle at two sweeps an interval apart, with no request on any
// kept-alive connection in between, is one the client does not want (Go's
// client, the API server's, reuses its most recently used connection
// first, so it sits at the bottom of the pool), and only then is it
// retired. Even then graft does not close it from outside: it wakes the
// connection's own reader, which looks whether the client has sent
// anything; if so the request is served (with Connection: close),
// otherwise the reader ends the connection.

// The port's connections are bounded in all and per client address
// (internal/connlimit, config.Server.MaxConns): at the total bound a new
// connection may take the place of one idle at least evictMinIdle
// (evictIdle). Which address's connections are busy does not matter: one
// client holding the most in slow requests cannot shield the idle ones
// of another. Among those, a connection that has never carried a request
// goes first (a client opens a connection to send one; the API server's
// pooled connections have all been used), then the one idle longest.

// evictMinIdle is how long a connection must have been idle to be
// evicted for a new one: a connection just answered may be about to carry
// its client's next request.
const evictMinIdle = time.Second

// connPhase is where a connection is between requests.
type connPhase = int32

const (
	// connActive: new, or reading or answering a request.
	connActive connPhase = iota
	// connIdle: handshake done or response written, waiting for the first
	// byte of the next request.
	connIdle
	// connIdleSeen: idle, and already so at the last sweep.
	connIdleSeen
	// connRetiring: idle and woken to end; see rawConn.Read.
	connRetiring
)

// retireNow is a read deadline in the past: it wakes a blocked reader.
var retireNow = time.Unix(1, 0)

// connListener accepts TCP connections within limits and hands fasthttp
// TLS connections that set tracks until they close.
type connListener struct {
	net.Listener
	tls    *tls.Config
	set    *connSet
	limits *connlimit.Limits
	timeouts
}

// timeouts are the webhook connections' own (see config.Server); fasthttp
// applies the idle timeout between requests.
type timeouts struct {
	// handshake bounds the TLS handshake; firstRequest the wait for the
	// first request after it; read, reading a request.
	handshake, firstRequest, read time.Duration
}

func (l *connListener) Accept() (net.Conn, error) {
	c, addr, err := l.limits.Accept(l.Listener, l.set.evictIdle)
	if err != nil {
		return nil, err
	}
	raw := &rawConn{Conn: c, readTimeout: l.read}
	sc := &serverConn{Conn: tls.Server(raw, l.tls), raw: raw, set: l.set, limits: l.limits, addr: addr,
		timeouts: l.timeouts, opened: time.Now()}
	l.set.add(sc)
	return sc, nil
}

// serverConn is what fasthttp serves: a *tls.Conn (its methods stay
// visible, so fasthttp sees TLS) that leaves the set and its limits when
// it closes and can be marked to close gently (see linger.go). Only its
// own fasthttp goroutine reads it and sets its deadlines.
type serverConn struct {
	*tls.Conn
	raw    *rawConn
	set    *connSet
	limits *connlimit.Limits
	addr   netip.Addr
	opened time.Time
	timeouts
	linger atomic.Bool
	closed atomic.Bool
	// awaitFirst: handshake done, no request yet.
	awaitFirst bool
	head       headScan
	// bodyRead: the handler read the current request's body whole.
	bodyRead bool
}

// Handshake is called by fasthttp before the first request, within the
// handshake timeout. A client that has opened a connection keeps it in
// its pool until it needs it, so from here it is idle.
func (c *serverConn) Handshake() error {
	if c.handshake > 0 {
		if err := c.raw.SetDeadline(time.Now().Add(c.handshake)); err != nil {
			return err
		}
	}
	if err := c.Conn.Handshake(); err != nil {
		return err
	}
	c.awaitFirst = true
	c.raw.setIdle()
	return nil
}

// Read notes the first bytes of each request: the connection is active,
// reading the request is bounded by the read timeout, and a retire that
// came too late is undone. It also scans the request head (strict.go).
func (c *serverConn) Read(p []byte) (int, error) {
	if c.head.bareLF {
		return 0, errBareLF
	}
	n, err := c.Conn.Read(p)
	if n == 0 {
		return n, err
	}
	c.head.scan(p[:n])
	switch c.raw.phase.Swap(connActive) {
	case connActive:
		return n, err
	case connRetiring:
		// Let the sweep finish setting its wake-up, then replace it.
		c.raw.retireMu.Lock()
		defer c.raw.retireMu.Unlock()
	}
	if c.awaitFirst {
		c.awaitFirst = false
		c.raw.used.Store(true)
	}
	c.set.activity.Add(1)
	_ = c.raw.Conn.SetReadDeadline(time.Now().Add(c.raw.readTimeout))
	return n, err
}

// SetReadDeadline gives the wait for a connection's first request the
// first-request timeout (fasthttp would give it the read timeout): an
// unused new connection may be idle in the client's pool, and ending it
// there can race the client's next request, so it waits longer than a
// request takes to read (see config.Server.FirstRequestTimeout).
func (c *serverConn) SetReadDeadline(t time.Time) error {
	if c.awaitFirst && !t.IsZero() {
		t = time.Now().Add(c.firstRequest)
	}
	return c.raw.SetReadDeadline(t)
}

func (c *serverConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

func (c *serverConn) Close() error {
	if !c.closed.Swap(true) {
		c.set.remove(c)
		c.limits.Release(c.addr)
	}
	if c.linger.Load() {
		return c.closeGently()
	}
	return c.Conn.Close()
}

// markIdle is fasthttp's ConnState hook for the webhook server: a
// connection whose response is written waits for the next request.
func markIdle(c net.Conn, st fasthttp.ConnState) {
	if sc, ok := c.(*serverConn); ok && st == fasthttp.StateIdle {
		sc.raw.setIdle()
		sc.head.reset()
	}
}

// rawConn is the TCP connection under the TLS layer. It decides, in the
// reader's own goroutine, how a retired idle connection ends.
type rawConn struct {
	net.Conn
	phase atomic.Int32
	// idleSince is when the connection last turned idle (Unix ns).
	idleSince atomic.Int64
	// used: a request has begun on the connection.
	used        atomic.Bool
	readTimeout time.Duration
	// retireMu makes a retire's phase change and wake-up one step.
	retireMu sync.Mutex
}

// setIdle notes that the connection waits for a request.
func (c *rawConn) setIdle() {
	c.idleSince.Store(time.Now().UnixNano())
	c.phase.CompareAndSwap(connActive, connIdle)
}

// evict wakes the reader of an idle connection to end it, as retire
// does, whether or not a sweep has seen it idle.
func (c *rawConn) evict() bool {
	c.retireMu.Lock()
	defer c.retireMu.Unlock()
	if !c.phase.CompareAndSwap(connIdle, connRetiring) && !c.phase.CompareAndSwap(connIdleSeen, connRetiring) {
		return false
	}
	_ = c.Conn.SetReadDeadline(retireNow)
	return true
}

// retire wakes the reader of an idle connection to end it, if the
// connection was idle at the last sweep and has not been used since.
func (c *rawConn) retire() bool {
	c.retireMu.Lock()
	defer c.retireMu.Unlock()
	if !c.phase.CompareAndSwap(connIdleSeen, connRetiring) {
		return false
	}
	_ = c.Conn.SetReadDeadline(retireNow)
	return true
}

// Read ends a retired connection with io.EOF, which fasthttp takes for a
// client that went away (no error response), unless the client has sent
// something: a request written before the client could see the end is
// served.
func (c *rawConn) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		if n > 0 || c.phase.Load() != connRetiring || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		if !hasPending(c.Conn) {
			return 0, io.EOF
		}
		if err := c.Conn.SetReadDeadline(time.Now().Add(c.readTimeout)); err != nil {
			return 0, err
		}
	}
}

// SetReadDeadline sets t unless the connection is being retired, whose
// wake-up must not be pushed back by the server preparing to wait for the
// next request.
func (c *rawConn) SetReadDeadline(t time.Time) error {
	err := c.Conn.SetReadDeadline(t)
	// A retire that raced with the call above is applied again.
	if c.phase.Load() == connRetiring {
		return c.Conn.SetReadDeadline(retireNow)
	}
	return err
}

func (c *rawConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

// connSet is the webhook's open connections.
type connSet struct {
	mu sync.Mutex
	m  map[*serverConn]struct{}
	// activity counts requests begun on connections that were idle;
	// lastActivity is its value at the last sweep.
	activity     atomic.Uint64
	lastActivity uint64
}

func newConnSet() *connSet { return &connSet{m: map[*serverConn]struct{}{}} }

func (s *connSet) add(c *serverConn) {
	s.mu.Lock()
	s.m[c] = struct{}{}
	s.mu.Unlock()
}

func (s *connSet) remove(c *serverConn) {
	s.mu.Lock()
	delete(s.m, c)
	s.mu.Unlock()
}

func (s *connSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// sweep retires the connections that were idle at the last sweep and have
// not been used since, if no request began on an idle connection in
// between: the client has none of graft's left in its pool that it wants.
// Otherwise it notes the connections idle now. It returns how many it
// retired.
func (s *connSet) sweep() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	act := s.activity.Load()
	quiet := act == s.lastActivity
	s.lastActivity = act
	n := 0
	for c := range s.m {
		if quiet && c.raw.retire() {
			n++
			continue
		}
		c.raw.phase.CompareAndSwap(connIdle, connIdleSeen)
	}
	return n
}

// evictIdle ends an idle connection from an address that from accepts,
// idle at least evictMinIdle: one that never carried a request first,
// then the one idle longest. It reports whether it did. The connection's
// own reader ends it (see rawConn.Read): a request the client sent just
// before is still served.
func (s *connSet) evictIdle(from func(netip.Addr) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	limit := time.Now().Add(-evictMinIdle).UnixNano()
	var victim *serverConn
	for c := range s.m {
		if p := c.raw.phase.Load(); p != connIdle && p != connIdleSeen {
			continue
		}
		if c.raw.idleSince.Load() > limit || !from(c.addr) {
			continue
		}
		if victim == nil || evictBefore(c.raw, victim.raw) {
			victim = c
		}
	}
	return victim != nil && victim.raw.evict()
}

// evictBefore orders idle connections for eviction: unused ones first,
// then by how long they have been idle.
func evictBefore(a, b *rawConn) bool {
	if ua, ub := a.used.Load(), b.used.Load(); ua != ub {
		return !ua
	}
	return a.idleSince.Load() < b.idleSince.Load()
}

// closeAll closes every connection's socket, for when the shutdown grace
// is over; their readers and writers fail and fasthttp lets them go.
func (s *connSet) closeAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.m {
		_ = c.raw.Conn.Close()
	}
	return len(s.m)
}
