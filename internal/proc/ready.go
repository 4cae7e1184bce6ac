package proc

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// Poll calls check every interval until it returns nil, ctx ends, or p
// (if not nil) exits, and then returns nil or an error wrapping the last
// one check returned.
func Poll(ctx context.Context, p *Process, interval time.Duration, check func(context.Context) error) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		if p != nil {
			if ok, exitErr := p.Exited(); ok {
				return fmt.Errorf("%s exited (%v) before it was ready: %w", p.name, exitErr, err)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// GetOK is a readiness check: GET url answers 200.
func GetOK(ctx context.Context, c *http.Client, url string) error {
	_, err := Get(ctx, c, url, nil)
	return err
}

// Get sends GET url with header and returns the start of the body (at
// most 4 KiB, enough for a health answer) if the status is 200, or an
// error naming the status and that body.
func Get(ctx context.Context, c *http.Client, url string, header http.Header) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return body, nil
}

// FreeAddrs returns n distinct loopback addresses whose ports are free
// right now. All listeners are held until every port is
// chosen, so the n ports differ; another process could still take one
// before the child binds it, which its readiness check then reports.
func FreeAddrs(n int) ([]netip.AddrPort, error) {
	addrs := make([]netip.AddrPort, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		addrs = append(addrs, l.Addr().(*net.TCPAddr).AddrPort())
	}
	return addrs, nil
}
