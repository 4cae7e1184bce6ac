// Package admin is the plain-HTTP admin port of graft's long-running
// commands, `graft serve`, `graft audit --serve` and `graft watchdog`:
// /metrics, /healthz, /readyz and /version, GET and HEAD only, with one
// set of limits and timeouts. It is net/http, not fasthttp: nothing here
// is on the admission path, and Prometheus's handler is net/http's.
//
// /healthz answers "ok" while the process serves: the kubelet restarts a
// process whose liveness probe fails, and nothing but a dead process
// would be helped by that. /readyz answers "ok", or 503 and why the
// command is not ready (graft serve: warming up, shutting down; the audit
// exporter: no audit has completed yet).
package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/graftdev/graft/internal/connlimit"
)

// The routes.
const (
	PathMetrics = "/metrics"
	PathHealthz = "/healthz"
	PathReadyz  = "/readyz"
	PathVersion = "/version"
)

// limits bound what the port's clients (the kubelet's probes, which open
// a connection per probe, and scrapers, one kept-alive connection each)
// may hold. A request is a head and nothing else; every timeout is far
// above what a probe (1 s by default) or a scrape (10 s) waits.
type limits struct {
	// maxConns and maxConnsPerAddress bound open connections
	// (internal/connlimit); one over is closed as it is accepted.
	maxConns, maxConnsPerAddress int
	// maxHeaderBytes bounds a request head (net/http allows 4 KiB more).
	maxHeaderBytes int
	// readTimeout bounds reading a request head; writeTimeout, writing
	// its answer (an audit report of 10,000 Pods is about 2 MB);
	// idleTimeout, the wait for the next request on a kept-alive
	// connection, longer than a scrape interval.
	readTimeout, writeTimeout, idleTimeout time.Duration
	// shutdownGrace is how long requests in flight at shutdown are given
	// before their connections are closed; probes and scrapers retry.
	shutdownGrace time.Duration
}

var defaultLimits = limits{
	maxConns:           MaxConns,
	maxConnsPerAddress: MaxConnsPerAddress,
	maxHeaderBytes:     8 << 10,
	readTimeout:        10 * time.Second,
	writeTimeout:       30 * time.Second,
	idleTimeout:        2 * time.Minute,
	shutdownGrace:      time.Second,
}

// MaxConns and MaxConnsPerAddress bound the port's open connections.
const (
	MaxConns           = 256
	MaxConnsPerAddress = 32
)

// Options are what a Server serves.
type Options struct {
	// Metrics answers /metrics: Gathered for a registry, Text for
	// exposition text written at each scrape; nil: no /metrics.
	Metrics http.Handler
	// NotReady says why /readyz fails, "" when ready; nil: ready.
	NotReady func() string
	// Version is what /version answers: the build's version, commit and
	// toolchain, as `graft version` prints them; "": "unknown".
	Version string
	// Conns counts the port's connections; nil fields count nothing.
	Conns connlimit.Counters
	// ErrorLog receives net/http's own messages (a failed accept, a
	// malformed request); nil: the log package's standard logger.
	ErrorLog *log.Logger

	limits limits // tests shorten them; zero: defaultLimits
}

// Server is one admin port. Build it with New, then call Run once.
type Server struct {
	opts   Options
	ln     net.Listener
	srv    *http.Server
	limits limits
	// conns follows every connection from accept to close, so that Run
	// returns only when their goroutines have ended.
	conns sync.WaitGroup
}

// New serves o on ln, which the caller bound (its error names the flag or
// setting the address came from); nothing is served until Run.
func New(ln net.Listener, o Options) *Server {
	s := &Server{opts: o, limits: o.limits}
	if s.limits == (limits{}) {
		s.limits = defaultLimits
	}
	s.ln = connlimit.New(s.limits.maxConns, s.limits.maxConnsPerAddress, o.Conns).Listener(ln)
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.limits.readTimeout,
		ReadTimeout:       s.limits.readTimeout,
		WriteTimeout:      s.limits.writeTimeout,
		IdleTimeout:       s.limits.idleTimeout,
		MaxHeaderBytes:    s.limits.maxHeaderBytes,
		ErrorLog:          o.ErrorLog,
		ConnState:         s.track,
	}
	return s
}

// Addr is the address served.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// track counts a connection in at its first state, out at its last.
func (s *Server) track(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		s.conns.Add(1)
	case http.StateClosed, http.StateHijacked:
		s.conns.Done()
	}
}

// Run serves until ctx ends, then stops: the listener and idle
// connections close at once, requests in flight get the shutdown grace,
// and the connections left are closed. It returns when every
// connection's goroutine has ended: nil after a stop ctx asked for, else
// the error that stopped the server.
func (s *Server) Run(ctx context.Context) error {
	served := make(chan error, 1)
	go func() { served <- s.srv.Serve(s.ln) }()
	select {
	case <-ctx.Done():
		stop, cancel := context.WithTimeout(context.Background(), s.limits.shutdownGrace)
		defer cancel()
		if err := s.srv.Shutdown(stop); err != nil {
			_ = s.srv.Close()
		}
		err := <-served
		s.conns.Wait()
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("admin server: %w", err)
	case err := <-served:
		_ = s.srv.Close()
		s.conns.Wait()
		return fmt.Errorf("admin server: %w", err)
	}
}

// While serves while work runs: work's context ends when ctx does or the
// server fails, and the server stops when work returns. It returns
// work's error, else the server's.
func (s *Server) While(ctx context.Context, work func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		err := s.Run(ctx)
		cancel()
		served <- err
	}()
	err := work(ctx)
	cancel()
	return errors.Join(err, <-served)
}

// ServeHTTP answers the admin routes. It is also how graft serve answers
// /healthz, /readyz and /metrics on its webhook port.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var h func(http.ResponseWriter, *http.Request)
	switch {
	case r.URL.Path == PathMetrics && s.opts.Metrics != nil:
		h = s.opts.Metrics.ServeHTTP
	case r.URL.Path == PathHealthz:
		h = healthz
	case r.URL.Path == PathReadyz:
		h = s.readyz
	case r.URL.Path == PathVersion:
		h = s.version
	default:
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.ContentLength != 0 {
		// Unread, it would be read and thrown away to keep the
		// connection: close it instead.
		w.Header().Set("Connection", "close")
		http.Error(w, "an admin request carries no body", http.StatusRequestEntityTooLarge)
		return
	}
	h(w, r)
}

func healthz(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if s.opts.NotReady != nil {
		if why := s.opts.NotReady(); why != "" {
			http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
			return
		}
	}
	_, _ = io.WriteString(w, "ok\n")
}

func (s *Server) version(w http.ResponseWriter, _ *http.Request) {
	v := s.opts.Version
	if v == "" {
		v = "unknown\n"
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, v)
}

// Gathered serves g's metrics as Prometheus asks for them; a collector
// that fails leaves its metrics out rather than failing the scrape.
func Gathered(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Text serves what write writes, exposition text, at each scrape.
func Text(write func(io.Writer) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		_ = write(w)
	})
}
