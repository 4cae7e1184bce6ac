package webhook

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Open connections cost memory whatever they carry (config.Server's
// defaults give the figures), so each port bounds them, in all and per
// client address. A connection over a bound is closed as it is accepted,
// before the TLS handshake, which is the cheapest moment: a client
// opening connections in a loop costs an accept and a close each.
//
// The bounds are far above what API servers open (see
// config.DefaultMaxConns): they stop a client that opens connections
// without end, and the per-address bound keeps one such client from
// taking the whole port. Many clients from many addresses can still fill
// it; the shipped NetworkPolicy narrows who may connect at all.

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
	refusedAll, refusedOne prometheus.Counter
}

func newConnLimits(maxTotal, maxPerAddr int, m *metrics, port string) *connLimits {
	return &connLimits{
		maxTotal: maxTotal, maxPerAddr: maxPerAddr,
		perAddr:    map[netip.Addr]int{},
		open:       m.conns.WithLabelValues(port),
		refusedAll: m.connsRefused.WithLabelValues(port, refusedTotal),
		refusedOne: m.connsRefused.WithLabelValues(port, refusedPerAddress),
	}
}

// acquire counts a connection from addr, or refuses it (false) when a
// bound is reached.
func (l *connLimits) acquire(addr netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.maxTotal > 0 && l.total >= l.maxTotal:
		l.refusedAll.Inc()
		return false
	case l.maxPerAddr > 0 && l.perAddr[addr] >= l.maxPerAddr:
		l.refusedOne.Inc()
		return false
	}
	l.total++
	l.perAddr[addr]++
	l.open.Inc()
	return true
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
func acceptLimited(ln net.Listener, limits *connLimits) (net.Conn, netip.Addr, error) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return nil, netip.Addr{}, err
		}
		addr := remoteAddr(c)
		if limits.acquire(addr) {
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
	c, addr, err := acceptLimited(l.Listener, l.limits)
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
