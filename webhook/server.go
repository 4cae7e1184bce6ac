package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
	"go.uber.org/zap"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/internal/admin"
	"github.com/graftdev/graft/internal/connlimit"
	"github.com/graftdev/graft/webhook/certgen"
)

// Options are what a Server is built from.
type Options struct {
	// ConfigPath is the --config file; empty: built-in defaults. Watched.
	ConfigPath string
	// Override applies the command-line flags to the file's settings. It
	// runs on every load, so flags keep winning after a reload.
	Override func(*config.Server)
	// Logger is required. Level, when set, follows the logLevel setting.
	Logger *zap.Logger
	Level  *zap.AtomicLevel
	// Registry receives every metric; required. Never the global one.
	Registry *prometheus.Registry
	// Version is what the admin port's /version answers: the build's
	// version, commit and toolchain, as `graft version` prints them, so
	// `graft version --server` can say which graft a cluster runs.
	Version string
	// Clock is the engine's and the server's clock for deadlines and
	// durations; nil: time.Now. Tests drive budgets with it.
	Clock func() time.Time
	// OnReload and OnCertReload, when set, are told of every
	// configuration or certificate reload attempt and its error.
	OnReload     func(error)
	OnCertReload func(error)
	// TokenReviewer reviews the API server's tokens; required when the
	// configuration sets server.apiServerToken, unused otherwise. It is
	// built on first use, so graft without the setting never reaches the
	// API server.
	TokenReviewer func() (TokenReviewer, error)
}

// Server is graft's webhook server. Build it with New, then call Run once;
// Run owns the listeners and releases everything when it returns.
type Server struct {
	opts    Options
	log     *zap.Logger
	metrics *metrics
	now     func() time.Time
	state   atomic.Pointer[state]
	bufs    *respPool

	inflight atomic.Int64
	warmed   atomic.Bool
	// stopping is set at SIGTERM: /readyz fails and every response on the
	// webhook port closes its connection (drain.go).
	stopping     atomic.Bool
	endDrain     chan struct{}
	endDrainOnce sync.Once

	certs     *certReloader
	clientCAs *clientCAs // nil without --client-ca
	certDir   string     // self-signed certificates to remove at exit

	tlsLn, adminLn net.Listener
	tlsSrv         *fasthttp.Server
	// admin serves the admin port; adminRoutes, its routes on the
	// webhook port.
	admin       *admin.Server
	adminRoutes fasthttp.RequestHandler
	conns       *connSet // the webhook port's connections
	retireEvery time.Duration
	rotate      rotation
	// metricsOnWebhookPort: config.Server.MetricsOnWebhookPort.
	metricsOnWebhookPort bool
	// bodies bounds the bytes request bodies hold (body.go).
	bodies *bodyBudget
	// tokens checks the API server's token (apitoken.go); nil when
	// server.apiServerToken is not set.
	tokens *tokenAuth
}

// New loads the configuration, templates and certificate, builds the
// engine and binds the listeners. Nothing is served until Run. When it
// fails, nothing is left behind: listeners bound so far are closed and a
// self-signed certificate directory is removed; the error names what
// failed (the file, the address) and why.
func New(o Options) (*Server, error) {
	if o.Logger == nil || o.Registry == nil {
		return nil, errors.New("webhook: Logger and Registry are required")
	}
	s := &Server{opts: o, log: o.Logger, now: o.Clock, bufs: newRespPool(), conns: newConnSet(), endDrain: make(chan struct{})}
	if s.now == nil {
		s.now = time.Now
	}
	if err := s.init(o); err != nil {
		s.release()
		return nil, err
	}
	return s, nil
}

// init is New's work; on error the caller releases what it made.
func (s *Server) init(o Options) error {
	l, err := load(o.ConfigPath, o.Override)
	if err != nil {
		return err
	}
	// The latency histogram's bounds follow the budget graft starts with.
	if s.metrics, err = newMetrics(o.Registry, l.file.Server.Budget.Duration); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	st, err := l.build(s.metrics, o.Clock)
	if err != nil {
		return err
	}
	s.state.Store(st)
	if cfg := l.file.Server.APIServerToken; cfg != nil {
		if o.TokenReviewer == nil {
			return errors.New("server.apiServerToken is set, but this server has no way to review tokens")
		}
		review, err := o.TokenReviewer()
		if err != nil {
			return fmt.Errorf("server.apiServerToken: %w", err)
		}
		s.tokens = newTokenAuth(cfg, review, s.now)
		s.log.Info("requiring the API server's token", zap.String("audience", cfg.Audience),
			zap.String("webhook_configuration", cfg.WebhookConfiguration))
	}
	if o.Level != nil {
		if lvl, err := parseLevel(st.settings.LogLevel); err == nil {
			o.Level.SetLevel(lvl)
		}
	}

	cfg := st.settings
	certFile, keyFile := cfg.TLSCert, cfg.TLSKey
	if certFile == "" {
		if s.certDir, err = selfSigned(s.log); err != nil {
			return err
		}
		certFile, keyFile = filepath.Join(s.certDir, certgen.CertFile), filepath.Join(s.certDir, certgen.KeyFile)
	}
	rep := tlsReporter{log: s.log, metrics: s.metrics, hook: o.OnCertReload}
	if s.certs, err = newCertReloader(certFile, keyFile, rep); err != nil {
		return err
	}
	tlsCfg, err := s.tlsConfig(cfg, rep)
	if err != nil {
		return err
	}
	ln, err := listen("webhook", cfg.Addr)
	if err != nil {
		return err
	}
	s.tlsLn = &connListener{Listener: ln, tls: tlsCfg, set: s.conns,
		limits: connlimit.New(cfg.MaxConns, cfg.MaxConnsPerAddress, s.metrics.connCounters(portWebhook)),
		timeouts: timeouts{handshake: cfg.HandshakeTimeout.Duration, firstRequest: cfg.FirstRequestTimeout.Duration,
			read: cfg.ReadTimeout.Duration}}
	if s.adminLn, err = listen("admin", cfg.AdminAddr); err != nil {
		return err
	}
	s.admin = admin.New(s.adminLn, admin.Options{
		Metrics:  admin.Gathered(o.Registry),
		NotReady: s.notReady,
		Version:  o.Version,
		Conns:    s.metrics.connCounters(portAdmin),
		ErrorLog: zap.NewStdLog(s.log.Named("admin")),
	})
	s.adminRoutes = fasthttpadaptor.NewFastHTTPHandler(s.admin)
	s.bodies = newBodyBudget(cfg.MaxBodyBytesInFlight, s.metrics)
	s.metricsOnWebhookPort = cfg.MetricsOnWebhookPort

	s.tlsSrv = s.webhookServer(cfg, s.serveTLS)
	s.rotate = rotation{maxAge: cfg.MaxConnAge.Duration}
	s.retireEvery = min(cfg.DrainDelay.Duration/4, retireSweep)
	s.log.Info("graft webhook listening",
		zap.String("addr", s.tlsLn.Addr().String()),
		zap.String("admin_addr", s.adminLn.Addr().String()),
		zap.String("tls_min_version", cfg.TLSMinVersion),
		zap.Bool("client_auth", cfg.ClientCA != ""),
		zap.Strings("templates", l.set.Names()),
		zap.String("default_profile", st.eng.DefaultProfile()))
	return nil
}

// listen binds addr for the named port. Its error names the port and the
// address once ("webhook address 127.0.0.1:8443: bind: address already in
// use"), not the dial operation.
func listen(port, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Err != nil {
			err = oe.Err
		}
		return nil, fmt.Errorf("%s address %q: %w", port, addr, err)
	}
	return ln, nil
}

func (s *Server) tlsConfig(cfg config.Server, rep tlsReporter) (*tls.Config, error) {
	minVersion, err := cfg.TLSVersion()
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{
		MinVersion:     minVersion,
		GetCertificate: s.certs.getCertificate,
		// The API server speaks HTTP/1.1 to webhooks; fasthttp only that.
		NextProtos: []string{"http/1.1"},
	}
	if cfg.ClientCA != "" {
		if s.clientCAs, err = newClientCAs(cfg.ClientCA, tc, rep); err != nil {
			return nil, err
		}
		// Each handshake takes the pool last loaded.
		tc.GetConfigForClient = s.clientCAs.getConfigForClient
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// webhookServer is the webhook port's server, serving h. The handler
// reads bodies itself (body.go). ReduceMemoryUsage gives the read and
// write buffers back while a connection waits for a request, and the
// request context while it waits for the first byte: an idle connection
// then holds its goroutine and its TLS state, not 20 KiB of buffers.
func (s *Server) webhookServer(cfg config.Server, h fasthttp.RequestHandler) *fasthttp.Server {
	return &fasthttp.Server{
		Handler:                      h,
		ErrorHandler:                 s.errorHandler,
		NoDefaultServerHeader:        true,
		ReadTimeout:                  cfg.ReadTimeout.Duration,
		WriteTimeout:                 cfg.WriteTimeout.Duration,
		IdleTimeout:                  cfg.IdleTimeout.Duration,
		ReadBufferSize:               8 << 10,
		DisablePreParseMultipartForm: true,
		CloseOnShutdown:              true,
		ReduceMemoryUsage:            true,
		Logger:                       fasthttpLogger{s.log},
		MaxRequestsPerConn:           cfg.MaxConnRequests,
		ConnState:                    markIdle,
		StreamRequestBody:            true,
		MaxRequestBodySize:           cfg.MaxBodyBytes,
		HeaderReceived:               oversizedFirst(cfg.MaxBodyBytes),
	}
}

// oversizedFirst is the webhook server's HeaderReceived hook. A streamed
// body is read up to 8 KiB before the handler runs, even one declared
// over the limit; for those it reads one byte instead, so that the
// handler refuses them with 413 at once rather than after 8 KiB that may
// never come.
func oversizedFirst(maxBodyBytes int) func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
	return func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
		if h.ContentLength() > maxBodyBytes {
			return fasthttp.RequestConfig{MaxRequestBodySize: 1}
		}
		return fasthttp.RequestConfig{}
	}
}

// errorHandler answers requests fasthttp refuses before the handler runs.
//
// fasthttp sets no write deadline for these answers, so the connection's
// last one applies: the handshake's, or the last response's, often long
// past (a read timeout comes after it). A TLS write past its deadline
// still uses up a record sequence number, and the close_notify that
// follows then reaches the client as "bad record MAC" instead of the
// answer. So each answer gets a deadline of its own.
func (s *Server) errorHandler(ctx *fasthttp.RequestCtx, err error) {
	_ = ctx.Conn().SetWriteDeadline(time.Now().Add(s.state.Load().settings.WriteTimeout.Duration))
	var small *fasthttp.ErrSmallBuffer
	var netErr net.Error
	switch {
	case errors.Is(err, errBareLF):
		// The client may still be sending the body: let it, so that it
		// reads this answer (see lingerConn).
		markLinger(ctx.Conn())
		s.metrics.refusal(refusedBareLF).Inc()
		ctx.Error(errBareLF.Error()+"\n", fasthttp.StatusBadRequest)
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		// The body was not read: let the client finish sending so it can
		// read this answer (see lingerConn).
		markLinger(ctx.Conn())
		s.metrics.countError(s.state.Load().bind, unknownProfile)
		ctx.Error(fmt.Sprintf("request body larger than %d bytes\n", s.state.Load().settings.MaxBodyBytes),
			fasthttp.StatusRequestEntityTooLarge)
	case errors.As(err, &small):
		ctx.Error("request header too large\n", fasthttp.StatusRequestHeaderFieldsTooLarge)
	case errors.As(err, &netErr) && netErr.Timeout():
		ctx.Error("request timeout\n", fasthttp.StatusRequestTimeout)
	default:
		ctx.Error("malformed HTTP request\n", fasthttp.StatusBadRequest)
	}
}

// fasthttpLogger sends fasthttp's own messages (mostly failed handshakes
// and broken connections) to debug.
type fasthttpLogger struct{ log *zap.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	if ce := l.log.Check(zap.DebugLevel, "fasthttp"); ce != nil {
		ce.Write(zap.String("detail", fmt.Sprintf(format, args...)))
	}
}

// Addr is the webhook's TLS address; AdminAddr the admin one.
func (s *Server) Addr() net.Addr      { return s.tlsLn.Addr() }
func (s *Server) AdminAddr() net.Addr { return s.admin.Addr() }

// notReady says why /readyz fails, or "" when ready. Templates and the
// certificate are loaded before New returns; warm-up and shutdown remain.
func (s *Server) notReady() string {
	switch {
	case s.stopping.Load():
		return "shutting down"
	case !s.warmed.Load():
		return "warming up"
	}
	return ""
}

// Run serves until ctx is done, then shuts down gracefully: /readyz turns
// not-ready and the server keeps serving for the drain delay, every
// response closing its connection; then the webhook listener closes, idle
// connections are retired and in-flight requests finish within the
// shutdown grace (drain.go). It returns nil after a clean shutdown.
func (s *Server) Run(ctx context.Context) error {
	defer s.release()
	bg, stopBG := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		stopBG()
		wg.Wait()
	}()

	watch := func(what string, files []string, relevant func(string) bool, reload func()) error {
		w, err := newDirWatcher(files...)
		if err != nil {
			return err
		}
		wg.Go(func() {
			defer w.Close()
			watchFiles(bg, w, what, relevant, reload, s.log)
		})
		return nil
	}

	if err := watch("certificate", []string{s.certs.certFile, s.certs.keyFile}, s.certs.relevant, s.certs.reload); err != nil {
		return err
	}
	if ca := s.clientCAs; ca != nil {
		if err := watch("client CA", []string{ca.file}, ca.relevant, ca.reload); err != nil {
			return err
		}
	}
	var watched []string
	if s.opts.ConfigPath != "" {
		watched = append(watched, s.opts.ConfigPath)
	}
	if dir := s.state.Load().settings.TemplatesDir; dir != "" {
		watched = append(watched, dir)
	}
	if len(watched) > 0 {
		if err := watch("config", watched, s.relevantConfigEvent, s.reload); err != nil {
			return err
		}
	}

	serveErr := make(chan error, 2)
	var servers sync.WaitGroup
	adminCtx, stopAdmin := context.WithCancel(context.Background())
	defer stopAdmin()
	servers.Go(func() { serveErr <- s.tlsSrv.Serve(s.tlsLn) })
	servers.Go(func() {
		if err := s.admin.Run(adminCtx); err != nil {
			serveErr <- err
		}
	})

	s.warm(s.state.Load())

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-serveErr:
		s.log.Error("server stopped", zap.Error(runErr))
	}
	s.stopping.Store(true)
	settings := s.state.Load().settings
	if runErr == nil {
		runErr = s.drain(settings.DrainDelay.Duration, serveErr)
	}
	s.shutdown(settings.ShutdownGrace.Duration)
	// The probes' and scrapers' port last: its clients retry.
	stopAdmin()
	servers.Wait()
	if runErr == nil {
		s.log.Info("shut down cleanly")
	}
	return runErr
}

// warm admits the sample review; readiness waits for it to succeed. A
// failure is retried after the next successful reload.
func (s *Server) warm(st *state) {
	if s.warmed.Load() {
		return
	}
	start := time.Now()
	if err := warmUp(st.eng); err != nil {
		s.log.Error("warm-up failed; not ready", zap.Error(err))
		return
	}
	s.warmed.Store(true)
	s.log.Info("warmed up; ready", zap.Duration("took", time.Since(start)))
}

// release closes the listeners (if Run did not serve them) and removes
// self-signed certificates.
func (s *Server) release() {
	for _, ln := range []net.Listener{s.tlsLn, s.adminLn} {
		if ln != nil {
			_ = ln.Close()
		}
	}
	if s.certDir != "" {
		_ = os.RemoveAll(s.certDir)
		s.certDir = ""
	}
}
