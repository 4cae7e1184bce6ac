package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/graftdev/graft/e2e/internal/standin/firstlog"
	"github.com/graftdev/graft/internal/redirect/redirecttest"
)

// tcpChain is one filter chain of a tcp_proxy listener.
type tcpChain struct {
	// port is the chain's destination_port match; 0 matches any.
	port       uint16
	statPrefix string
	// proxy passes the chain's connections on; nil refuses them (a
	// cluster without endpoints).
	proxy *redirecttest.Proxy
}

// tcpListener serves a listener of tcp_proxy filters as Envoy does with
// the original_dst listener filter: each accepted connection's original
// destination (the address it was sent to before the kernel redirected
// it; the listener's own address if it was not) picks the filter chain,
// whose ORIGINAL_DST cluster connects to that destination. The stand-in
// runs as the proxy container's uid, which the redirection exempts, so
// those connections go out directly.
func tcpListener(l listener, clusters map[string]cluster, st *stats) (firstlog.Server, error) {
	if len(l.ListenerFilters) != 1 || l.ListenerFilters[0].Name != originalDst {
		return firstlog.Server{}, fmt.Errorf("tcp_proxy listeners need exactly the listener filter %s in the stand-in", originalDst)
	}
	var chains []tcpChain
	for _, fc := range l.FilterChains {
		var ch tcpChain
		for k, v := range fc.FilterChainMatch {
			if k != "destination_port" {
				return firstlog.Server{}, fmt.Errorf("filter_chain_match %s: the stand-in matches destination_port only", k)
			}
			p, ok := v.(float64)
			if !ok || p < 1 || p > 65535 || p != float64(int(p)) {
				return firstlog.Server{}, fmt.Errorf("filter_chain_match destination_port %v: want a port", v)
			}
			ch.port = uint16(p)
		}
		if len(fc.Filters) != 1 {
			return firstlog.Server{}, fmt.Errorf("a filter chain of %d tcp_proxy filters: want one", len(fc.Filters))
		}
		tc := fc.Filters[0].TypedConfig
		cl, ok := clusters[tc.Cluster]
		switch {
		case !ok:
			return firstlog.Server{}, fmt.Errorf("tcp_proxy to unknown cluster %q", tc.Cluster)
		case tc.StatPrefix == "":
			return firstlog.Server{}, errors.New("tcp_proxy without stat_prefix")
		case cl.passthrough:
			d := net.Dialer{Timeout: cl.timeout}
			ch.proxy = &redirecttest.Proxy{Dial: d.Dial}
		case cl.endpoint != nil:
			return firstlog.Server{}, fmt.Errorf("tcp_proxy to STATIC cluster %q with endpoints: not implemented by the stand-in", tc.Cluster)
		}
		if slices.ContainsFunc(chains, func(c tcpChain) bool { return c.port == ch.port }) {
			return firstlog.Server{}, fmt.Errorf("two filter chains match destination port %d", ch.port)
		}
		ch.statPrefix = tc.StatPrefix
		st.declare(ch.statPrefix)
		chains = append(chains, ch)
	}
	serve := func(ln net.Listener) error {
		for {
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return nil
				}
				return err
			}
			go handle(l.Name, chains, st, c.(*net.TCPConn))
		}
	}
	return firstlog.Server{Addr: l.Address.hostPort(), TCP: serve}, nil
}

func handle(listener string, chains []tcpChain, st *stats, c *net.TCPConn) {
	dst, err := redirecttest.OriginalDst(c)
	if err != nil {
		// Not redirected: addressed to the listener itself.
		dst = c.LocalAddr().(*net.TCPAddr).AddrPort()
	}
	ch, ok := match(chains, dst.Port())
	if !ok {
		fmt.Printf("%s: listener %s: no filter chain for %s, closed\n", name, listener, dst)
		c.Close()
		return
	}
	st.add(ch.statPrefix)
	if ch.proxy == nil {
		fmt.Printf("%s: %s %s -> %s refused\n", name, ch.statPrefix, c.RemoteAddr(), dst)
		c.Close()
		return
	}
	fmt.Printf("%s: %s %s -> %s\n", name, ch.statPrefix, c.RemoteAddr(), netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port()))
	ch.proxy.Pass(ch.statPrefix, c)
}

// match is the chain matching the port exactly, else the one without a
// match.
func match(chains []tcpChain, port uint16) (tcpChain, bool) {
	var any tcpChain
	found := false
	for _, ch := range chains {
		switch ch.port {
		case port:
			return ch, true
		case 0:
			any, found = ch, true
		}
	}
	return any, found
}

// stats are the tcp_proxy filters' downstream connection counters, by
// stat prefix, as Envoy exposes them (tcp.<prefix>.downstream_cx_total).
type stats struct {
	mu       sync.Mutex
	counters map[string]uint64
}

func (s *stats) declare(prefix string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counters == nil {
		s.counters = map[string]uint64{}
	}
	s.counters[prefix] += 0
}

func (s *stats) add(prefix string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters[prefix]++
}

// writePrometheus writes the counters in Envoy's /stats/prometheus form.
func (s *stats) writePrometheus(w io.Writer) {
	s.mu.Lock()
	prefixes := make([]string, 0, len(s.counters))
	for p := range s.counters {
		prefixes = append(prefixes, p)
	}
	sort.Strings(prefixes)
	lines := make([]string, 0, len(prefixes))
	for _, p := range prefixes {
		lines = append(lines, "envoy_tcp_downstream_cx_total{envoy_tcp_prefix="+strconv.Quote(p)+"} "+strconv.FormatUint(s.counters[p], 10))
	}
	s.mu.Unlock()
	if len(lines) > 0 {
		fmt.Fprintln(w, "# TYPE envoy_tcp_downstream_cx_total counter")
	}
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
