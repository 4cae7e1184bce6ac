// Package load is graft's HTTPS load generator: closed-loop (as fast as C
// workers can go) or open-loop (a constant arrival rate, latency measured
// from the intended send time so queueing is not hidden), over keep-alive
// connections to a loopback address only. Latencies go into HDR histograms;
// every response gets a cheap check and a sample gets the full one (the
// patch decodes and applies to the request's object).
package load

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"time"
)

// Mode is how requests are paced.
type Mode string

const (
	// Closed: Concurrency workers each send the next request as soon as the
	// previous one is answered. Measures maximum throughput.
	Closed Mode = "closed"
	// Open: requests are scheduled at Rate per second whatever the server
	// does; a late send counts its wait in its latency.
	Open Mode = "open"
)

// Config is one run.
type Config struct {
	// URL is the https URL requests are POSTed to. Its host must be a
	// loopback address.
	URL string
	// TLS is the client TLS configuration (RootCAs holding the server's CA).
	TLS *tls.Config
	// Requests are the AdmissionReview bodies, sent round-robin.
	Requests []*Request

	Mode Mode
	// Concurrency is the number of workers, each with its own keep-alive
	// connection. In open mode it bounds the requests in flight.
	Concurrency int
	// Rate is the open-loop arrival rate in requests per second.
	Rate float64
	// Duration bounds the measured run; MaxRequests (if > 0) bounds its count.
	// The run stops at whichever comes first.
	Duration    time.Duration
	MaxRequests int64
	// Warmup is sent closed-loop before measuring (connections, JITs, caches).
	Warmup time.Duration
	// Timeout bounds each request. Defaults to 10s.
	Timeout time.Duration
	// Drain bounds how long an open-loop run may keep sending requests that
	// were scheduled before Duration ended but not yet sent. Defaults to 2s.
	Drain time.Duration
	// SampleEvery: one response in SampleEvery gets the full check. Defaults
	// to 256, which keeps the check under 3% of the generator's CPU on the
	// small corpus; 1 checks every response.
	SampleEvery int64
	// Progress, if set, receives a progress line every second.
	Progress io.Writer
	// Label prefixes the progress line.
	Label string
	// BeforeMeasure and AfterMeasure, if set, are called right before the
	// measured phase (after preflight and warmup) and right after it: the
	// harness snapshots the server's CPU time and allocations there.
	BeforeMeasure, AfterMeasure func()
}

func (c *Config) validate() error {
	u, err := url.Parse(c.URL)
	if err != nil {
		return fmt.Errorf("load: url: %w", err)
	}
	if u.Scheme != "https" {
		return fmt.Errorf("load: url %q: scheme must be https", c.URL)
	}
	if err := checkLoopback(u.Hostname()); err != nil {
		return err
	}
	if u.Port() == "" {
		return fmt.Errorf("load: url %q: port required", c.URL)
	}
	if len(c.Requests) == 0 {
		return errors.New("load: no requests")
	}
	switch c.Mode {
	case Closed:
	case Open:
		if c.Rate <= 0 {
			return errors.New("load: open mode needs a rate > 0")
		}
	default:
		return fmt.Errorf("load: mode %q: want %q or %q", c.Mode, Closed, Open)
	}
	if c.Concurrency <= 0 {
		return errors.New("load: concurrency must be > 0")
	}
	if c.Duration <= 0 && c.MaxRequests <= 0 {
		return errors.New("load: a duration or a request count is required")
	}
	if c.Duration <= 0 {
		// Still bounded in time: a run never outlives an hour.
		c.Duration = time.Hour
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Drain <= 0 {
		c.Drain = 2 * time.Second
	}
	if c.SampleEvery <= 0 {
		c.SampleEvery = 256
	}
	return nil
}

// checkLoopback refuses any target that is not this machine.
func checkLoopback(host string) error {
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("load: host %q: only loopback addresses may be targeted", host)
	}
	return nil
}
