package webhook

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Open connections cost memory whatever they carry (config.Server's
// defaults give the figures), so each port bounds them, in all and per
// client address. A connection over the per-address bound is closed as
// it is accepted, before the TLS handshake, which is the cheapest moment:
// a client opening connections in a loop costs an accept and a close
// each.
//
// The bounds are far above what API servers open (see
// config.DefaultMaxConns): they stop a client that opens connections
// without end, and the per-address bound keeps one such client from
// taking the whole port. Clients from several addresses can together fill
// the port; then a new connection from an address holding n takes the
// place of a connection idle a while (at least evictMinIdle) from an
// address holding twice as many and two more at least (2n, n+2), so that
// an API server, which holds a few, still gets in while others hold many.
// Which address's connections are busy does not matter: one client
// holding the most in slow requests cannot shield the idle ones of
// another. Among those, a connection that has never carried a request
// goes first (a client opens a connection to send one; the API server's
// pooled connections have all been used), then the one idle longest. Otherwise the new connection is refused:
// addresses holding about as many as each other (within a factor of
// two) do not take each other's places, which would only trade one
// handshake for another: clients that each hold many, reconnecting as
// their connections time out, do not evict each other.

// evictMinIdle is how long a connection must have been idle to be
// evicted for a new one: a connection just answered may be about to carry
// its client's next request.
const evictMinIdle = time.Second

// Refusal reasons, the reason label of graft_connections_refused_total.
const (
	refusedTotal      = "total"
	refusedPerAddress = "per_address"
)

// connLimits counts one port's open connections and refuses those over
// its bounds.
type connLimits struct {
	maxTotal, maxPerAddr int

	mu      sync.Mutex
	total   int
	perAddr map[netip.Addr]int

	open                   prometheus.Gauge
	refusedAll, refusedOne counter
	evicted                counter
}

func newConnLimits(maxTotal, maxPerAddr int, m *metrics, port string) *connLimits {
	return &connLimits{
		maxTotal: maxTotal, maxPerAddr: maxPerAddr,
		perAddr:    map[netip.Addr]int{},
		open:       m.conns.WithLabelValues(port),
		refusedAll: newCounter(m.connsRefused, "graft_connections_refused_total", port, refusedTotal),
		refusedOne: newCounter(m.connsRefused, "graft_connections_refused_total", port, refusedPerAddress),
		evicted:    newCounter(m.connsEvicted, "graft_connections_evicted_total", port),
	}
}

// acquire counts a connection from addr, or refuses it (false) when a
// bound is reached. At the total bound, evict (nil: none) may end an idle
// connection from an address its argument accepts, those holding at
// least evictFrom of what addr does, to make room; the new one is then
// counted at once, its victim when it has closed.
func (l *connLimits) acquire(addr netip.Addr, evict func(from func(netip.Addr) bool) bool) bool {
	l.mu.Lock()
	if l.maxPerAddr > 0 && l.perAddr[addr] >= l.maxPerAddr {
		l.refusedOne.Inc()
		l.mu.Unlock()
		return false
	}
	if l.maxTotal > 0 && l.total >= l.maxTotal {
		richer := l.holdingAtLeast(evictFrom(l.perAddr[addr]))
		l.mu.Unlock()
		if evict == nil || richer == nil || !evict(richer.has) {
			l.refusedAll.Inc()
			return false
		}
		l.evicted.Inc()
		l.mu.Lock()
	}
	l.total++
	l.perAddr[addr]++
	l.open.Inc()
	l.mu.Unlock()
	return true
}

// evictFrom is how many connections an address must hold for a newcomer
// from an address holding n to take one's place.
func evictFrom(n int) int { return max(2*n, n+2) }

// addrSet is a set of client addresses.
type addrSet map[netip.Addr]struct{}

func (s addrSet) has(a netip.Addr) bool {
	_, ok := s[a]
	return ok
}

// holdingAtLeast is the addresses holding n connections or more, nil if
// none: with addresses at about equal counts, as under a flood refused at
// the bound, it allocates nothing.
func (l *connLimits) holdingAtLeast(n int) addrSet {
	var s addrSet
	for a, k := range l.perAddr {
		if k < n {
			continue
		}
		if s == nil {
			s = addrSet{}
		}
		s[a] = struct{}{}
	}
	return s
}

func (l *connLimits) release(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if n := l.perAddr[addr] - 1; n > 0 {
		l.perAddr[addr] = n
	} else {
		delete(l.perAddr, addr)
	}
	l.open.Dec()
}

// acceptLimited accepts from ln until a connection is within limits; the
// others are closed at once. The caller releases the address returned
// when the connection closes.
func acceptLimited(ln net.Listener, limits *connLimits, evict func(from func(netip.Addr) bool) bool) (net.Conn, netip.Addr, error) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return nil, netip.Addr{}, err
		}
		addr := remoteAddr(c)
		if limits.acquire(addr, evict) {
			return c, addr, nil
		}
		_ = c.Close()
	}
}

// remoteAddr is the client's IP address (IPv4 in IPv6 unmapped), or the
// zero Addr for a connection that has none (all of them count as one).
func remoteAddr(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return ta.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// limitListener bounds the admin port's connections (the webhook port's
// connListener does so itself).
type limitListener struct {
	net.Listener
	limits *connLimits
}

func (l *limitListener) Accept() (net.Conn, error) {
	c, addr, err := acceptLimited(l.Listener, l.limits, nil)
	if err != nil {
		return nil, err
	}
	return &limitedConn{Conn: c, addr: addr, limits: l.limits}, nil
}

// limitedConn releases its count when it first closes.
type limitedConn struct {
	net.Conn
	addr   netip.Addr
	limits *connLimits
	closed atomic.Bool
	head   headScan
}

func (c *limitedConn) Read(p []byte) (int, error) {
	if c.head.bareLF {
		return 0, errBareLF
	}
	n, err := c.Conn.Read(p)
	c.head.scan(p[:n])
	return n, err
}

func (c *limitedConn) Close() error {
	if !c.closed.Swap(true) {
		c.limits.release(c.addr)
	}
	return c.Conn.Close()
}
