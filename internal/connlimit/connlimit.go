// Package connlimit bounds a listener's open connections, in all and per
// client address: open connections cost memory whatever they carry, so
// every port graft serves bounds them. A connection over the per-address
// bound is closed as it is accepted, before anything is read from it (for
// TLS, before the handshake), which is the cheapest moment: a client
// opening connections in a loop costs an accept and a close each.
//
// At the total bound a server may offer to end an idle connection of
// another client to make room (the webhook port does; see Limits.Acquire).
// Clients from several addresses can together fill a port; then a new
// connection from an address holding n takes the place of a connection
// from an address holding twice as many and two more at least (2n, n+2),
// so that an API server, which holds a few, still gets in while others
// hold many. Addresses holding about as many as each other (within a
// factor of two) do not take each other's places, which would only trade
// one handshake for another: clients that each hold many, reconnecting as
// their connections time out, do not evict each other.
package connlimit

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// Counter and Gauge are what Limits counts with; prometheus.Counter and
// prometheus.Gauge are both.
type (
	Counter interface{ Inc() }
	Gauge   interface {
		Inc()
		Dec()
	}
)

// Counters are where Limits reports; a nil field counts nothing.
type Counters struct {
	// Open is the number of connections held.
	Open Gauge
	// RefusedTotal and RefusedPerAddress count connections closed as they
	// were accepted, over the total or the per-address bound.
	RefusedTotal, RefusedPerAddress Counter
	// Evicted counts idle connections ended to make room at the total
	// bound.
	Evicted Counter
}

type nop struct{}

func (nop) Inc() {}
func (nop) Dec() {}

// Limits counts one port's open connections and refuses those over its
// bounds. Its methods are safe for concurrent use.
type Limits struct {
	maxTotal, maxPerAddr int

	mu      sync.Mutex
	total   int
	perAddr map[netip.Addr]int

	open                         Gauge
	refusedTotal, refusedPerAddr Counter
	evicted                      Counter
}

// New bounds a port at maxTotal connections, maxPerAddr from one client
// address; zero or less is no bound.
func New(maxTotal, maxPerAddr int, c Counters) *Limits {
	l := &Limits{maxTotal: maxTotal, maxPerAddr: maxPerAddr, perAddr: map[netip.Addr]int{},
		open: c.Open, refusedTotal: c.RefusedTotal, refusedPerAddr: c.RefusedPerAddress, evicted: c.Evicted}
	if l.open == nil {
		l.open = nop{}
	}
	for _, p := range []*Counter{&l.refusedTotal, &l.refusedPerAddr, &l.evicted} {
		if *p == nil {
			*p = nop{}
		}
	}
	return l
}

// Evict is a server's offer to end an idle connection from an address
// from accepts, to make room at the total bound; it reports whether it
// ended one. Nil: the port evicts nothing.
type Evict func(from func(netip.Addr) bool) bool

// Acquire counts a connection from addr, or refuses it (false) when a
// bound is reached. At the total bound, evict may end an idle connection
// from an address its argument accepts, those holding at least
// EvictFrom of what addr does, to make room; the new one is then counted
// at once, its victim when it has closed.
func (l *Limits) Acquire(addr netip.Addr, evict Evict) bool {
	l.mu.Lock()
	if l.maxPerAddr > 0 && l.perAddr[addr] >= l.maxPerAddr {
		l.refusedPerAddr.Inc()
		l.mu.Unlock()
		return false
	}
	if l.maxTotal > 0 && l.total >= l.maxTotal {
		richer := l.holdingAtLeast(EvictFrom(l.perAddr[addr]))
		l.mu.Unlock()
		if evict == nil || richer == nil || !evict(richer.has) {
			l.refusedTotal.Inc()
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

// EvictFrom is how many connections an address must hold for a newcomer
// from an address holding n to take one's place.
func EvictFrom(n int) int { return max(2*n, n+2) }

// addrSet is a set of client addresses.
type addrSet map[netip.Addr]struct{}

func (s addrSet) has(a netip.Addr) bool {
	_, ok := s[a]
	return ok
}

// holdingAtLeast is the addresses holding n connections or more, nil if
// none: with addresses at about equal counts, as under a flood refused at
// the bound, it allocates nothing.
func (l *Limits) holdingAtLeast(n int) addrSet {
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

// Release uncounts a connection from addr that has closed.
func (l *Limits) Release(addr netip.Addr) {
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

// Accept accepts from ln until a connection is within limits; the others
// are closed at once. The caller releases the address returned when the
// connection closes.
func (l *Limits) Accept(ln net.Listener, evict Evict) (net.Conn, netip.Addr, error) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return nil, netip.Addr{}, err
		}
		addr := RemoteAddr(c)
		if l.Acquire(addr, evict) {
			return c, addr, nil
		}
		_ = c.Close()
	}
}

// RemoteAddr is the client's IP address (IPv4 in IPv6 unmapped), or the
// zero Addr for a connection that has none (all of them count as one).
func RemoteAddr(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return ta.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// Listener is ln within l: it evicts nothing, and a connection it hands
// out is released when it first closes.
func (l *Limits) Listener(ln net.Listener) net.Listener {
	return &listener{Listener: ln, limits: l}
}

type listener struct {
	net.Listener
	limits *Limits
}

func (l *listener) Accept() (net.Conn, error) {
	c, addr, err := l.limits.Accept(l.Listener, nil)
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, addr: addr, limits: l.limits}, nil
}

// conn releases its count when it first closes.
type conn struct {
	net.Conn
	addr   netip.Addr
	limits *Limits
	closed atomic.Bool
}

func (c *conn) Close() error {
	if !c.closed.Swap(true) {
		c.limits.Release(c.addr)
	}
	return c.Conn.Close()
}
