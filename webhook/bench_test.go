package webhook

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/webhook/certgen"
)

// BenchmarkServe measures a request through the whole handler (routing,
// checks, deadline, engine, pooled response, metrics, sampled log) and
// fasthttp's HTTP/1.1 parsing and writing, over an in-memory listener
// without TLS. Its allocations are the engine's (BenchmarkEngineAdmit)
// plus what the server adds.
func BenchmarkServe(b *testing.B) {
	for _, name := range []string{corpus.Small, corpus.Large, corpus.Skip} {
		b.Run(name, func(b *testing.B) {
			s := benchServer(b)
			ln := fasthttputil.NewInmemoryListener()
			srv := s.webhookServer(s.state.Load().settings, s.handle)
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ln) }()
			b.Cleanup(func() {
				_ = srv.Shutdown()
				<-done
			})
			conn, err := ln.Dial()
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			benchRoundTrips(b, conn, corpus.Review(name))
		})
	}
}

// rawClient speaks just enough HTTP/1.1 over one keep-alive connection to
// send a fixed review and discard the answer without allocating, so the
// benchmark's allocations are the server's. (fasthttp's own client
// allocates when reading bodies larger than its pool has calibrated for.)
type rawClient struct {
	conn net.Conn
	br   *bufio.Reader
	req  []byte
}

func newRawClient(conn net.Conn, body []byte) *rawClient {
	req := fmt.Appendf(nil, "POST /inject?timeout=10s HTTP/1.1\r\nHost: graft\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	return &rawClient{conn: conn, br: bufio.NewReaderSize(conn, 64<<10), req: append(req, body...)}
}

func (c *rawClient) roundTrip() error {
	if _, err := c.conn.Write(c.req); err != nil {
		return err
	}
	status, err := c.br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(status, []byte("HTTP/1.1 200 ")) {
		return fmt.Errorf("status line %q", status)
	}
	length := -1
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 {
			break
		}
		if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
			length = 0
			for _, d := range bytes.TrimSpace(v) {
				length = length*10 + int(d-'0')
			}
		}
	}
	if length < 0 {
		return errors.New("no Content-Length")
	}
	_, err = c.br.Discard(length)
	return err
}

// BenchmarkEngineAdmit is the engine alone on the same reviews, for the
// comparison with BenchmarkServe.
func BenchmarkEngineAdmit(b *testing.B) {
	for _, name := range []string{corpus.Small, corpus.Large, corpus.Skip} {
		b.Run(name, func(b *testing.B) {
			s := benchServer(b)
			eng := s.state.Load().eng
			review := corpus.Review(name)
			var dst []byte
			b.SetBytes(int64(len(review)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				dst, _, err = eng.Admit(dst[:0], review, inject.Options{Profile: "enabled"})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchServer is a Server as `graft serve` builds it (info logs with
// sampling, to io.Discard), warmed up.
func benchServer(b *testing.B) *Server {
	s, _ := discardServer(b, "info")
	return s
}

// allocServer is benchServer for tests, logging every admission at debug
// to a discarding writer (50 runs stay within the sampler's first 100).
func allocServer(t *testing.T) *Server {
	s, _ := discardServer(t, "debug")
	return s
}

// discardServer builds and warms a Server whose logs at level go nowhere,
// and returns it with the CA its certificate verifies against.
func discardServer(tb testing.TB, level string) (*Server, *x509.CertPool) {
	tb.Helper()
	certDir := tb.TempDir()
	bundle, err := certgen.Generate(certgen.Options{DNSNames: []string{"localhost"}})
	if err != nil {
		tb.Fatal(err)
	}
	if err := bundle.Write(certDir); err != nil {
		tb.Fatal(err)
	}
	log, lvl, err := NewLogger(io.Discard, level)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := New(Options{
		Override: func(st *config.Server) {
			st.Addr, st.AdminAddr, st.LogLevel = "127.0.0.1:0", "127.0.0.1:0", level
			// One keep-alive connection carries a whole benchmark.
			st.MaxConnAge, st.MaxConnRequests = config.Duration{Duration: time.Hour}, math.MaxInt
			st.TLSCert, st.TLSKey = filepath.Join(certDir, certgen.CertFile), filepath.Join(certDir, certgen.KeyFile)
		},
		Logger: log, Level: &lvl, Registry: prometheus.NewRegistry(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.release)
	s.warm(s.state.Load())
	if !s.warmed.Load() {
		tb.Fatal("warm-up failed")
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(bundle.CACert)
	return s, roots
}

// TestHandlerAllocations: the handler adds at most two allocations per
// request to the engine's, even when every admission is logged.
func TestHandlerAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	for _, name := range []string{corpus.Small, corpus.Skip} {
		t.Run(name, func(t *testing.T) {
			s := allocServer(t)
			review := corpus.Review(name)
			eng := s.state.Load().eng
			var dst []byte
			engine := testing.AllocsPerRun(50, func() {
				dst, _, _ = eng.Admit(dst[:0], review, inject.Options{Profile: "enabled", Deadline: time.Now().Add(time.Second)})
			})
			handler := handlerAllocs(t, s, "/inject?timeout=10s", review)
			t.Logf("engine %v allocs/op, handler %v allocs/op", engine, handler)
			if handler > engine+2 {
				t.Errorf("handler %v allocations per request, engine %v: more than 2 added", handler, engine)
			}
		})
	}
}

// handlerAllocs is the allocations per request of the handler answering
// review on uri, called as fasthttp calls it, 200 OK required.
func handlerAllocs(t *testing.T, s *Server, uri string, review []byte) float64 {
	t.Helper()
	var ctx fasthttp.RequestCtx
	var req fasthttp.Request
	req.SetRequestURI(uri)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.SetBody(review)
	ctx.Init(&req, nil, nil)
	return testing.AllocsPerRun(50, func() {
		// What fasthttp does between requests: closing the user values
		// returns the response buffer to the pool.
		ctx.ResetUserValues()
		ctx.Response.Reset()
		s.handle(&ctx)
		if ctx.Response.StatusCode() != fasthttp.StatusOK {
			t.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	})
}

// BenchmarkServeTLS is BenchmarkServe over real TLS on loopback: one
// keep-alive connection, the listener and settings `graft serve` uses.
func BenchmarkServeTLS(b *testing.B) {
	for _, name := range []string{corpus.Small, corpus.Large} {
		b.Run(name, func(b *testing.B) {
			s := benchServer(b)
			done := make(chan error, 1)
			go func() { done <- s.tlsSrv.Serve(s.tlsLn) }()
			b.Cleanup(func() {
				_ = s.tlsSrv.Shutdown()
				<-done
			})
			conn, err := tls.Dial("tcp", s.Addr().String(), &tls.Config{InsecureSkipVerify: true})
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			benchRoundTrips(b, conn, corpus.Review(name))
		})
	}
}

// benchRoundTrips sends review over conn once per iteration, keep-alive.
func benchRoundTrips(b *testing.B, conn net.Conn, review []byte) {
	c := newRawClient(conn, review)
	b.SetBytes(int64(len(review)))
	b.ReportAllocs()
	for b.Loop() {
		if err := c.roundTrip(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServeTLSNewConn is BenchmarkServeTLS with a new connection for
// every review, which is what each connection rotation makes one call
// pay: TCP connect, a full handshake verified the way the API server's
// webhook client verifies it (ALPN http/1.1, no session resumption, Go's
// default key exchange), one review, close. Client and server share the
// machine, so ns/op is both sides' work; the difference to
// BenchmarkServeTLS is the price of one new connection.
func BenchmarkServeTLSNewConn(b *testing.B) {
	for _, v := range []struct {
		name string
		max  uint16
	}{{"tls13", tls.VersionTLS13}, {"tls12", tls.VersionTLS12}} {
		b.Run(v.name, func(b *testing.B) {
			s, roots := discardServer(b, "info")
			done := make(chan error, 1)
			go func() { done <- s.tlsSrv.Serve(s.tlsLn) }()
			b.Cleanup(func() {
				_ = s.tlsSrv.Shutdown()
				<-done
			})
			cfg := &tls.Config{RootCAs: roots, ServerName: "localhost", NextProtos: []string{"http/1.1"}, MaxVersion: v.max}
			review := corpus.Review(corpus.Small)
			b.SetBytes(int64(len(review)))
			b.ReportAllocs()
			for b.Loop() {
				conn, err := tls.Dial("tcp", s.Addr().String(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				if err := newRawClient(conn, review).roundTrip(); err != nil {
					b.Fatal(err)
				}
				conn.Close()
			}
		})
	}
}
