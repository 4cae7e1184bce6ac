package hostile

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// An attacker is a client in the cluster that holds graft's connections
// from its own address (its Pod's IP): loopback addresses other than
// 127.0.0.1, which the API server and the kubelet use here. Each of its
// connections is held until graft closes it, then opened again after a
// pause, for the whole attack.

// attackerStats count what one attack's connections met.
type attackerStats struct {
	// open is how many are open now; peak the most at once.
	open, peak atomic.Int64
	// established: TLS handshakes completed; refused: connections graft
	// closed before or during the handshake (or that could not be made);
	// closed: established connections graft closed later.
	established, refused, closed atomic.Int64
	// answers counts graft's answers by status (header-only attack);
	// firstRefusal is what the first refused connection met.
	mu           sync.Mutex
	answers      map[int]int
	firstRefusal string
}

func (s *attackerStats) refusedWith(err error) {
	s.refused.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.firstRefusal == "" {
		s.firstRefusal = err.Error()
	}
}

func (s *attackerStats) opened() {
	n := s.open.Add(1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (s *attackerStats) answered(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.answers == nil {
		s.answers = map[int]int{}
	}
	s.answers[status]++
}

// dialer opens TLS connections to graft from one loopback address, at
// most dials at once (a burst beyond the listen backlog only measures the
// kernel's SYN retries).
type dialer struct {
	addr  string
	tls   *tls.Config
	slots chan struct{}
}

func (d *dialer) dial(ctx context.Context, src string) (*tls.Conn, error) {
	select {
	case d.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-d.slots }()
	nd := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	c, err := nd.DialContext(ctx, "tcp", d.addr)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(c, d.tls)
	hs, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := tc.HandshakeContext(hs); err != nil {
		c.Close()
		return nil, err
	}
	return tc, nil
}

// holdIdle keeps one connection from src open and silent until ctx ends,
// opening it again a pause after graft closes it.
func holdIdle(ctx context.Context, d *dialer, src string, pause time.Duration, st *attackerStats) {
	for ctx.Err() == nil {
		c, err := d.dial(ctx, src)
		if err != nil {
			if ctx.Err() == nil {
				st.refusedWith(err)
			}
		} else {
			st.established.Add(1)
			st.opened()
			waitClosed(ctx, c, st)
			st.open.Add(-1)
		}
		sleep(ctx, pause)
	}
}

// sendHeaderOnly keeps one connection from src that sends a request head
// declaring a body of declared bytes, and one byte of it, then nothing;
// it reads graft's answer (or the close) and starts again.
func sendHeaderOnly(ctx context.Context, d *dialer, src, path string, declared int, pause time.Duration, st *attackerStats) {
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: graft\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", path, declared)
	for ctx.Err() == nil {
		c, err := d.dial(ctx, src)
		if err != nil {
			if ctx.Err() == nil {
				st.refusedWith(err)
			}
			sleep(ctx, pause)
			continue
		}
		st.established.Add(1)
		st.opened()
		if _, err := c.Write([]byte(head)); err == nil {
			stop := context.AfterFunc(ctx, func() { c.Close() })
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				resp.Body.Close()
				st.answered(resp.StatusCode)
			}
			stop()
		}
		c.Close()
		st.open.Add(-1)
		st.closed.Add(1)
		sleep(ctx, pause)
	}
}

// waitClosed blocks until graft closes c or ctx ends, then closes c.
func waitClosed(ctx context.Context, c net.Conn, st *attackerStats) {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	var b [1]byte
	_, _ = c.Read(b[:])
	if ctx.Err() == nil {
		st.closed.Add(1)
	}
	c.Close()
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
