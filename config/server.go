package config

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/graftdev/graft/internal/names"
)

// Server holds graft serve's own settings, under `server:` in the file.
// Command-line flags override them. Zero values mean "the default"; call
// Default to fill them in and validate.
type Server struct {
	// Addr is the TLS listen address of the webhook.
	Addr string `json:"addr,omitempty"`
	// AdminAddr is the plain-HTTP address of /metrics, /healthz, /readyz
	// and /version. Its limits and timeouts are fixed
	// (docs/reference/limits.md); readTimeout, writeTimeout and
	// idleTimeout bound the webhook port only.
	AdminAddr string `json:"adminAddr,omitempty"`
	// Budget bounds the engine's work on one request; past it the request
	// is answered per the profile's failureMode.
	Budget Duration `json:"budget,omitempty"`
	// TimeoutMargin is kept free of the API server's ?timeout= for the
	// network and the TLS exchange.
	TimeoutMargin Duration `json:"timeoutMargin,omitempty"`
	// MaxBodyBytes is the largest request body read; larger ones get 413.
	MaxBodyBytes int `json:"maxBodyBytes,omitempty"`
	// MaxBodyBytesInFlight bounds the memory request bodies hold at once:
	// a body's buffer takes its bytes from this budget as its bytes
	// arrive (never for what a client merely declares), and one that
	// cannot get them within its request's time is refused with 503.
	// Bodies of 8 KiB and less, which fasthttp reads with the headers,
	// are bounded by maxConns instead.
	MaxBodyBytesInFlight int64 `json:"maxBodyBytesInFlight,omitempty"`
	// MaxConns bounds the webhook port's open connections; one over it is
	// closed as it is accepted, before its TLS handshake.
	MaxConns int `json:"maxConns,omitempty"`
	// MaxConnsPerAddress bounds the webhook port's open connections from
	// one client IP address, so that one client cannot take all of
	// MaxConns.
	MaxConnsPerAddress int `json:"maxConnsPerAddress,omitempty"`
	// HandshakeTimeout bounds a new connection's TLS handshake. No client
	// holds a connection in its pool before the handshake ends, so a
	// short bound races no request.
	HandshakeTimeout Duration `json:"handshakeTimeout,omitempty"`
	// FirstRequestTimeout closes a connection that has sent no request
	// since its handshake. The API server's client can pool a connection
	// it dialled but did not use, on top of its pool; one still unused
	// after this long sits at the bottom, under every connection the
	// client used since, and is reached only by a burst deeper than the
	// pool. Connections that have served a request wait IdleTimeout.
	FirstRequestTimeout Duration `json:"firstRequestTimeout,omitempty"`
	// MetricsOnWebhookPort also serves /metrics on the webhook port. Off by
	// default: that port is open to every client the API server may come
	// from, and without clientCA it authenticates none. /healthz and
	// /readyz are served there either way; everything is on adminAddr.
	MetricsOnWebhookPort bool `json:"metricsOnWebhookPort,omitempty"`
	// MaxInFlight sheds requests beyond this many in the engine at once,
	// answering them per the profile's failureMode.
	MaxInFlight int `json:"maxInFlight,omitempty"`
	// TLSMinVersion is "1.2" or "1.3".
	TLSMinVersion string `json:"tlsMinVersion,omitempty"`
	// ReadTimeout bounds reading one request on the webhook port, headers
	// and body.
	ReadTimeout Duration `json:"readTimeout,omitempty"`
	// WriteTimeout bounds writing one response on the webhook port.
	WriteTimeout Duration `json:"writeTimeout,omitempty"`
	// IdleTimeout closes webhook connections kept alive idle this long. It is
	// longer than the API server's own idle timeout (90 s), so that the
	// client, which knows whether it is about to send, is the side that
	// ends an idle connection: a server closing one races the client's
	// next request on it.
	IdleTimeout Duration `json:"idleTimeout,omitempty"`
	// MaxConnAge and MaxConnRequests rotate webhook connections: the first
	// response after a connection is this old (less up to a quarter, so
	// connections opened together do not all end together), or after this
	// many requests, carries Connection: close. The API server picks an
	// endpoint only when it opens a connection and keeps up to 25 idle
	// ones per host, so without rotation a pool stays on the replicas it
	// first reached and a new replica gets no traffic.
	MaxConnAge      Duration `json:"maxConnAge,omitempty"`
	MaxConnRequests int      `json:"maxConnRequests,omitempty"`
	// DrainDelay is how long graft keeps serving after SIGTERM, not ready
	// and closing every connection after its response, so that the
	// endpoint's removal reaches every API server before the listener
	// closes. Then in-flight requests get ShutdownGrace to finish.
	DrainDelay Duration `json:"drainDelay,omitempty"`
	// ShutdownGrace is how long in-flight requests may take to finish once
	// the listener closes, after the drain delay.
	ShutdownGrace Duration `json:"shutdownGrace,omitempty"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `json:"logLevel,omitempty"`
	// TLSCert and TLSKey are the serving certificate and key (PEM files),
	// watched and reloaded. Both empty: a self-signed certificate is
	// generated at start.
	TLSCert string `json:"tlsCert,omitempty"`
	TLSKey  string `json:"tlsKey,omitempty"`
	// ClientCA, when set, requires client certificates signed by one of its
	// CAs (PEM file).
	ClientCA string `json:"clientCA,omitempty"`
	// TemplatesDir holds templates that overlay the built-in ones (a file
	// of the same name replaces a built-in template); watched.
	TemplatesDir string `json:"templatesDir,omitempty"`
	// APIServerToken, when set, makes graft require the API server's
	// token on the webhook's routes (KEP-6060, alpha in Kubernetes 1.37
	// behind the APIServerWebhookAuthenticationToken gate): a request
	// without a valid one is refused with 401, whatever its body. Off by
	// default. Read at start; a change needs a restart.
	APIServerToken *APIServerToken `json:"apiServerToken,omitempty"`
}

// APIServerToken says which token graft accepts from the API server. A
// ServiceAccount token is accepted when the API server's TokenReview (the
// issuer's own check of signature, expiry, audience and bound object)
// authenticates it for one of graft's webhook URLs, and says the token is
// bound to WebhookConfiguration and attests admissionReviewAPIGroups "*":
// Pods are of the core group, which only a token for all groups covers,
// and only kube-apiserver's own ServiceAccount may be given one. graft's
// ServiceAccount needs permission to create TokenReviews
// (system:auth-delegator). A review is remembered for a minute at most,
// never past the token's expiry; a refusal for ten seconds.
type APIServerToken struct {
	// Audience is graft's webhook URL without its path, as the API server
	// names a token's audience: for a service: reference,
	// https://<service>.<namespace>.svc:<port>. A token's audience must be
	// this followed by one of graft's routes (/inject, /inject/...): a
	// token is issued for one webhook's URL, and graft accepts it on all
	// its routes, since the API server's admission kubeconfig presents
	// one token per server.
	Audience string `json:"audience"`
	// WebhookConfiguration is the MutatingWebhookConfiguration the token
	// must be bound to: graft's registration.
	WebhookConfiguration string `json:"webhookConfiguration"`
}

// Validate checks an APIServerToken.
func (a *APIServerToken) Validate() error {
	u, err := url.Parse(a.Audience)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%w: apiServerToken.audience %q: want the webhook's https URL without a path, such as https://%s.%s.svc:443", ErrServer, a.Audience,
			names.ServiceName, names.SystemNamespace)
	}
	if errs := validation.IsDNS1123Subdomain(a.WebhookConfiguration); len(errs) > 0 {
		return fmt.Errorf("%w: apiServerToken.webhookConfiguration %q: want the name of graft's MutatingWebhookConfiguration: %s",
			ErrServer, a.WebhookConfiguration, strings.Join(errs, "; "))
	}
	return nil
}

// Defaults of Server.
//
// Rotation: a new connection costs a full TLS handshake, since the API
// server resumes no sessions. BenchmarkServeTLSNewConn measures a review
// on a new connection at 1.3 ms of CPU (both sides, TLS 1.3 with Go's
// default key exchange and an ECDSA P-256 certificate; median of 10)
// against 43 µs on a kept-alive one (BenchmarkServeTLS). The age cap bounds
// the handshakes an API server's pool of at most 25 connections causes to
// 25 per 10 s, about 3 ms of CPU per second whatever the traffic, and a
// pool follows a scale-up within 10 s. The request cap only matters on
// busy connections (over 100 requests/s each), where it makes a pool
// follow a scale-up sooner, at 1.3 ms / 1000 = 1.3 µs per request, 3 % of
// a review; one in a thousand is also what kube-apiserver's --goaway-chance
// recommends for spreading its own clients.
//
// Memory: the defaults fit the shipped limit of 512 MiB (deploy/base,
// GOMEMLIMIT set to it). Measured on the 2-core development machine
// (graft serve with deploy/base's configuration, 2,000 idle TLS
// connections opened to it, /proc/<pid>/status; make bench-hostile for
// the whole under attack, docs/reference/limits.md): graft at rest holds about
// 50 MiB, an idle TLS connection about 27 KiB (its goroutine, TLS state
// and fasthttp's, the buffers given back while idle). One carrying a
// request holds about 32 KiB more: the 8 KiB read and 4 KiB write
// buffers, the body's first 8 KiB read with the head and its copy, the
// request context.
//
//	connections  2,048 x 60 KiB                       120 MiB
//	bodies       64 MiB live, as much again garbage   128 MiB
//	             before the next collection (GOGC)
//	engine       working on bodies of at most 64 MiB  ~ 64 MiB
//	base                                               50 MiB
//	                                                  -------
//	                                                  362 MiB of 512 MiB
//
// The API server's client keeps at most 25 idle connections per host and
// opens one more per concurrent call beyond them; its admission calls per
// API server are bounded by its in-flight limits (400 + 200 by default,
// shared by all requests), and a burst of Pod creates through one API
// server stays under a few hundred. 512 per address leaves room for two
// API servers behind one address (a konnectivity agent, a NAT); 2,048 in
// all for several API servers bursting at once. A review is about 6 KiB
// to 50 KiB, at most about 7 MiB: 64 MiB holds nine of the largest at
// once, or over a thousand large ones.
//
// Timeouts: the API server completes a TLS handshake in milliseconds.
// Its call to graft, handshake included, ends at the webhook's
// timeoutSeconds (3 s in deploy/): a handshake still going after 5 s
// serves no call, and a connection that never completes one is freed at
// half the read timeout, which bounded it before. A connection that has
// served a request waits IdleTimeout (longer than the client's 90 s, see
// IdleTimeout); one that never did waits FirstRequestTimeout, 30 s.
//
// Drain: the endpoint's removal travels from the Pod's deletion through
// the EndpointSlice controller to each API server's informer (or to
// kube-proxy, without --enable-aggregator-routing): typically under 2 s,
// a few seconds on a busy control plane. 10 s covers that with margin. A
// Pod's terminationGracePeriodSeconds must exceed DrainDelay +
// ShutdownGrace plus a few seconds for the exit: 10 + 25 + 5 = 40 s in
// deploy/base.
const (
	DefaultAddr                 = ":8443"
	DefaultAdminAddr            = ":8080"
	DefaultBudget               = 200 * time.Millisecond
	DefaultTimeoutMargin        = 100 * time.Millisecond
	DefaultMaxBodyBytes         = 7 << 20
	DefaultMaxBodyBytesInFlight = 64 << 20
	DefaultMaxConns             = 2048
	DefaultMaxConnsPerAddress   = 512
	DefaultHandshakeTimeout     = 5 * time.Second
	DefaultFirstRequestTimeout  = 30 * time.Second
	DefaultMaxInFlight          = 1024
	DefaultTLSMinVersion        = "1.2"
	DefaultReadTimeout          = 10 * time.Second
	DefaultWriteTimeout         = 10 * time.Second
	DefaultIdleTimeout          = 120 * time.Second
	DefaultMaxConnAge           = 10 * time.Second
	DefaultMaxConnRequests      = 1000
	DefaultDrainDelay           = 10 * time.Second
	DefaultShutdownGrace        = 25 * time.Second
	DefaultLogLevel             = "info"
)

// LogLevels are the accepted values of Server.LogLevel, in order.
var LogLevels = []string{"debug", "info", "warn", "error"}

// ErrServer marks invalid server settings.
var ErrServer = errors.New("invalid server settings")

// Default fills in unset settings and validates them.
func (s *Server) Default() error {
	setStr := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	setDur := func(v *Duration, d time.Duration) {
		if v.Duration == 0 {
			v.Duration = d
		}
	}
	setInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setStr(&s.Addr, DefaultAddr)
	setStr(&s.AdminAddr, DefaultAdminAddr)
	setStr(&s.TLSMinVersion, DefaultTLSMinVersion)
	setStr(&s.LogLevel, DefaultLogLevel)
	setDur(&s.Budget, DefaultBudget)
	setDur(&s.TimeoutMargin, DefaultTimeoutMargin)
	setDur(&s.ReadTimeout, DefaultReadTimeout)
	setDur(&s.WriteTimeout, DefaultWriteTimeout)
	setDur(&s.IdleTimeout, DefaultIdleTimeout)
	setDur(&s.HandshakeTimeout, DefaultHandshakeTimeout)
	setDur(&s.FirstRequestTimeout, DefaultFirstRequestTimeout)
	setDur(&s.MaxConnAge, DefaultMaxConnAge)
	setDur(&s.DrainDelay, DefaultDrainDelay)
	setDur(&s.ShutdownGrace, DefaultShutdownGrace)
	setInt(&s.MaxBodyBytes, DefaultMaxBodyBytes)
	setInt(&s.MaxConns, DefaultMaxConns)
	setInt(&s.MaxConnsPerAddress, DefaultMaxConnsPerAddress)
	if s.MaxBodyBytesInFlight == 0 {
		s.MaxBodyBytesInFlight = DefaultMaxBodyBytesInFlight
	}
	setInt(&s.MaxInFlight, DefaultMaxInFlight)
	setInt(&s.MaxConnRequests, DefaultMaxConnRequests)
	return s.Validate()
}

// Validate checks settings that Default has filled in.
func (s *Server) Validate() error {
	for _, d := range []struct {
		name string
		v    Duration
	}{
		{"budget", s.Budget}, {"timeoutMargin", s.TimeoutMargin}, {"readTimeout", s.ReadTimeout},
		{"writeTimeout", s.WriteTimeout}, {"idleTimeout", s.IdleTimeout}, {"maxConnAge", s.MaxConnAge},
		{"handshakeTimeout", s.HandshakeTimeout}, {"firstRequestTimeout", s.FirstRequestTimeout},
		{"drainDelay", s.DrainDelay}, {"shutdownGrace", s.ShutdownGrace},
	} {
		if d.v.Duration < 0 {
			return fmt.Errorf("%w: %s %v is negative", ErrServer, d.name, d.v.Duration)
		}
	}
	if s.MaxBodyBytes < 0 {
		return fmt.Errorf("%w: maxBodyBytes %d is negative", ErrServer, s.MaxBodyBytes)
	}
	for _, n := range []struct {
		name string
		v    int64
	}{
		{"maxBodyBytesInFlight", s.MaxBodyBytesInFlight}, {"maxConns", int64(s.MaxConns)},
		{"maxConnsPerAddress", int64(s.MaxConnsPerAddress)},
	} {
		if n.v < 0 {
			return fmt.Errorf("%w: %s %d is negative (0 means the default)", ErrServer, n.name, n.v)
		}
	}
	if s.MaxBodyBytesInFlight < int64(s.MaxBodyBytes) {
		return fmt.Errorf("%w: maxBodyBytesInFlight %d is less than maxBodyBytes %d: the largest body could never be read",
			ErrServer, s.MaxBodyBytesInFlight, s.MaxBodyBytes)
	}
	if s.MaxConnsPerAddress > s.MaxConns {
		return fmt.Errorf("%w: maxConnsPerAddress %d is more than maxConns %d", ErrServer, s.MaxConnsPerAddress, s.MaxConns)
	}
	if s.MaxInFlight < 0 {
		return fmt.Errorf("%w: maxInFlight %d is negative (0 means the default)", ErrServer, s.MaxInFlight)
	}
	if s.MaxConnRequests < 0 {
		return fmt.Errorf("%w: maxConnRequests %d is negative (0 means the default)", ErrServer, s.MaxConnRequests)
	}
	if _, err := s.TLSVersion(); err != nil {
		return err
	}
	if !validLogLevel(s.LogLevel) {
		return fmt.Errorf("%w: logLevel %q: want debug, info, warn or error", ErrServer, s.LogLevel)
	}
	if (s.TLSCert == "") != (s.TLSKey == "") {
		return fmt.Errorf("%w: tlsCert and tlsKey go together (give both, or neither for a self-signed certificate)", ErrServer)
	}
	if s.APIServerToken != nil {
		if err := s.APIServerToken.Validate(); err != nil {
			return err
		}
	}
	return nil
}

func validLogLevel(l string) bool {
	for _, v := range LogLevels {
		if l == v {
			return true
		}
	}
	return false
}

// TLSVersion returns TLSMinVersion as a crypto/tls constant.
func (s *Server) TLSVersion() (uint16, error) {
	switch s.TLSMinVersion {
	case "1.2":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("%w: tlsMinVersion %q: want \"1.2\" or \"1.3\"", ErrServer, s.TLSMinVersion)
}

// Hot returns the settings a reload applies at once, with everything else
// taken from base, whose listeners are already built: the budget, the
// timeout margin, the in-flight limit and the log level.
func (s Server) Hot(base Server) Server {
	base.Budget, base.TimeoutMargin = s.Budget, s.TimeoutMargin
	base.MaxInFlight, base.LogLevel = s.MaxInFlight, s.LogLevel
	return base
}

// Duration is a time.Duration written as a Go duration string ("200ms").
type Duration struct{ time.Duration }

// UnmarshalJSON accepts "200ms" style strings.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"200ms\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(d.Duration.String())), nil
}
