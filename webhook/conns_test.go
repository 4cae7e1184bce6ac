package webhook

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// tcpPair is a loopback TCP connection: the server side wrapped as the
// webhook wraps it, and the client side.
func tcpPair(t *testing.T) (*rawConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return &rawConn{Conn: server, readTimeout: time.Minute}, client
}

// readWithin reads once from c, failing the test if that blocks past d.
func readWithin(t *testing.T, c io.Reader, d time.Duration) (string, error) {
	t.Helper()
	type result struct {
		s   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		buf := make([]byte, 64)
		n, err := c.Read(buf)
		done <- result{string(buf[:n]), err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-time.After(d):
		t.Fatalf("read still blocked after %s", d)
		return "", nil
	}
}

func TestRetire(t *testing.T) {
	t.Run("an idle connection ends with EOF", func(t *testing.T) {
		raw, _ := tcpPair(t)
		raw.phase.Store(connIdleSeen)
		if !raw.retire() {
			t.Fatal("not retired")
		}
		if _, err := readWithin(t, raw, 10*time.Second); !errors.Is(err, io.EOF) {
			t.Fatalf("read: %v, want io.EOF", err)
		}
	})
	t.Run("a request already sent is read", func(t *testing.T) {
		raw, client := tcpPair(t)
		raw.phase.Store(connIdleSeen)
		if _, err := client.Write([]byte("POST /inject")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the bytes to arrive", func() bool { return hasPending(raw.Conn) })
		if !raw.retire() {
			t.Fatal("not retired")
		}
		got, err := readWithin(t, raw, 10*time.Second)
		if err != nil || got != "POST /inject" {
			t.Fatalf("read %q, %v: want the request", got, err)
		}
	})
	t.Run("the server's next deadline does not postpone it", func(t *testing.T) {
		raw, _ := tcpPair(t)
		raw.phase.Store(connIdleSeen)
		raw.retire()
		// What fasthttp does before waiting for the next request.
		if err := raw.SetReadDeadline(time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if _, err := readWithin(t, raw, 10*time.Second); !errors.Is(err, io.EOF) {
			t.Fatalf("read: %v, want io.EOF", err)
		}
	})
	t.Run("only a connection idle at the last sweep", func(t *testing.T) {
		for _, ph := range []connPhase{connActive, connIdle, connRetiring} {
			raw, _ := tcpPair(t)
			raw.phase.Store(ph)
			if raw.retire() {
				t.Errorf("phase %d retired", ph)
			}
		}
	})
}

// TestSweep: a connection is retired at the second sweep that finds it
// idle, and only if no request began on an idle connection in between.
func TestSweep(t *testing.T) {
	set := newConnSet()
	conn := func() *serverConn {
		raw, _ := tcpPair(t)
		c := &serverConn{raw: raw, set: set}
		set.add(c)
		return c
	}
	idle, active := conn(), conn()
	idle.raw.phase.Store(connIdle)

	if n := set.sweep(); n != 0 {
		t.Fatalf("first sweep retired %d", n)
	}
	set.activity.Add(1) // a request on some other connection
	if n := set.sweep(); n != 0 {
		t.Fatalf("sweep after a request retired %d", n)
	}
	if n := set.sweep(); n != 1 || idle.raw.phase.Load() != connRetiring {
		t.Fatalf("quiet sweep retired %d, idle connection in phase %d", n, idle.raw.phase.Load())
	}
	if active.raw.phase.Load() != connActive {
		t.Errorf("active connection moved to phase %d", active.raw.phase.Load())
	}
	if n := set.closeAll(); n != 2 {
		t.Errorf("closeAll closed %d, want 2", n)
	}
}
