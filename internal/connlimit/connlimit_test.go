package connlimit

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// count is a Counter and a Gauge.
type count struct{ n atomic.Int64 }

func (c *count) Inc()       { c.n.Add(1) }
func (c *count) Dec()       { c.n.Add(-1) }
func (c *count) get() int64 { return c.n.Load() }

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

// TestAcquireEvictsFromRicherAddresses: at the total bound the addresses
// offered for eviction are those holding at least twice as many as the
// newcomer's and two more, and none are offered (nothing allocated) when
// all hold about as many.
func TestAcquireEvictsFromRicherAddresses(t *testing.T) {
	l := New(10, 10, Counters{})
	held := map[string]int{"10.0.0.1": 5, "10.0.0.2": 3, "10.0.0.3": 2}
	for a, n := range held {
		for range n {
			if !l.Acquire(ip(a), nil) {
				t.Fatalf("%s refused within the limits", a)
			}
		}
	}
	var offered []string
	offer := func(from func(netip.Addr) bool) bool {
		for _, a := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"} {
			if from(ip(a)) {
				offered = append(offered, a)
			}
		}
		return false
	}
	for _, tc := range []struct {
		from string
		want []string
	}{
		{"10.0.0.4", []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}}, // holds 0: 2 or more
		{"10.0.0.3", []string{"10.0.0.1"}},                         // holds 2: 4 or more
		{"10.0.0.2", nil},                                          // holds 3: 6 or more; 5 is two more, not twice
		{"10.0.0.1", nil},
	} {
		offered = nil
		if l.Acquire(ip(tc.from), offer) {
			t.Fatalf("%s: acquired with no connection evicted", tc.from)
		}
		if !slices.Equal(offered, tc.want) {
			t.Errorf("%s: offered %v for eviction, want %v", tc.from, offered, tc.want)
		}
	}
}

// TestCounters: every way a connection is counted or refused reaches its
// counter; an eviction lets the newcomer in at once.
func TestCounters(t *testing.T) {
	var open, total, perAddr, evicted count
	l := New(3, 2, Counters{Open: &open, RefusedTotal: &total, RefusedPerAddress: &perAddr, Evicted: &evicted})
	a, b, c := ip("10.0.0.1"), ip("10.0.0.2"), ip("10.0.0.3")
	for _, addr := range []netip.Addr{a, a, b} {
		if !l.Acquire(addr, nil) {
			t.Fatalf("%v refused within the limits", addr)
		}
	}
	if l.Acquire(a, nil) || perAddr.get() != 1 {
		t.Errorf("a third from %v: not refused per address (refused %d)", a, perAddr.get())
	}
	if l.Acquire(c, nil) || total.get() != 1 {
		t.Errorf("a fourth with nothing to evict: not refused at the total (refused %d)", total.get())
	}
	if !l.Acquire(c, func(from func(netip.Addr) bool) bool { return from(a) }) || evicted.get() != 1 {
		t.Errorf("a fourth with a connection of %v evicted: refused, or not counted (evicted %d)", a, evicted.get())
	}
	if open.get() != 4 {
		t.Errorf("open = %d, want 4 (the evicted one is released when it closes)", open.get())
	}
	l.Release(a)
	if open.get() != 3 {
		t.Errorf("open = %d after a release, want 3", open.get())
	}
}

// TestListener: a listener within limits closes connections over the
// per-address bound as it accepts them, lets other addresses in, and
// counts a connection out once however often it is closed.
func TestListener(t *testing.T) {
	var open count
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := New(0, 2, Counters{Open: &open}).Listener(inner)
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func(src string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
		c, err := d.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	var served []net.Conn
	for range 2 {
		dial("127.0.0.2")
		served = append(served, <-accepted)
	}
	over := dial("127.0.0.2")
	_ = over.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := over.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Errorf("a third connection from one address: read %v, want it closed", err)
	}
	dial("127.0.0.3")
	served = append(served, <-accepted)
	if open.get() != 3 {
		t.Errorf("open = %d, want 3", open.get())
	}
	for _, c := range served {
		c.Close()
		c.Close()
	}
	if open.get() != 0 {
		t.Errorf("open = %d after every connection closed (twice), want 0", open.get())
	}
}

func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }
