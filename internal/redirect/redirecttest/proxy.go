// Package redirecttest is a stand-in for the mesh proxy where Envoy cannot
// run: a TCP proxy that passes each redirected connection on to its
// original destination, as the mesh-proxy template's Envoy bootstrap does
// (original_dst listener filter, ORIGINAL_DST cluster, tcp_proxy), and
// records what it passed. The redirect package's namespace test and the
// real-node tests' stand-in proxy image use it.
package redirecttest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"

	"golang.org/x/sys/unix"
)

// Passed is one connection the proxy passed on.
type Passed struct {
	// Listener is the name of the listener that took the connection
	// ("outbound", "inbound").
	Listener string
	// OriginalDst is where the connection was addressed before the
	// redirection.
	OriginalDst netip.AddrPort
}

func (p Passed) String() string { return p.Listener + " " + p.OriginalDst.String() }

// Proxy passes connections to their original destination.
type Proxy struct {
	// Dial opens the upstream connection. It must not be redirected again:
	// in a Pod the proxy runs as the uid the rules exempt.
	Dial func(network, address string) (net.Conn, error)
	// OnPass, if set, is called for each connection before it is passed.
	OnPass func(Passed)

	mu     sync.Mutex
	passed []Passed
}

// Passed returns the connections passed so far, in order.
func (p *Proxy) Passed() []Passed {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Passed(nil), p.passed...)
}

// Serve accepts connections on l until it is closed, passing each on.
func (p *Proxy) Serve(name string, l net.Listener) error {
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go p.Pass(name, c)
	}
}

// Pass passes one accepted connection on to its original destination,
// recording it under the listener's name, and closes it when both ways
// are done.
func (p *Proxy) Pass(name string, c net.Conn) {
	defer c.Close()
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	dst, err := OriginalDst(tc)
	if err != nil {
		return
	}
	rec := Passed{Listener: name, OriginalDst: dst}
	p.mu.Lock()
	p.passed = append(p.passed, rec)
	p.mu.Unlock()
	if p.OnPass != nil {
		p.OnPass(rec)
	}
	up, err := p.Dial("tcp", dst.String())
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, c)
		if cw, ok := up.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		close(done)
	}()
	_, _ = io.Copy(c, up)
	_ = tc.CloseWrite()
	<-done
}

// OriginalDst is the IPv4 address a redirected connection was sent to,
// which the kernel's NAT keeps (SO_ORIGINAL_DST).
func OriginalDst(c *net.TCPConn) (netip.AddrPort, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	var dst netip.AddrPort
	var serr error
	err = raw.Control(func(fd uintptr) {
		// getsockopt(SOL_IP, SO_ORIGINAL_DST) fills a sockaddr_in; the
		// 16 bytes of an IPv6Mreq hold it exactly.
		var m *unix.IPv6Mreq
		m, serr = unix.GetsockoptIPv6Mreq(int(fd), unix.SOL_IP, unix.SO_ORIGINAL_DST)
		if serr != nil {
			return
		}
		sa := m.Multiaddr
		port := binary.BigEndian.Uint16(sa[2:4])
		dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(sa[4:8])), port)
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("original destination: %w", err)
	}
	return dst, nil
}
