package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/config"
)

// apiServerClient is configured as kube-apiserver's webhook client
// (k8s.io/apiserver's webhook client through client-go's transport
// cache): net/http, HTTP/1.1 only, keep-alive, at most 25 idle connections
// per host, 90 s idle timeout and no TLS session cache, so every new
// connection is a full handshake.
func apiServerClient(roots *x509.CertPool) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: roots, ServerName: "localhost", NextProtos: []string{"http/1.1"}},
			MaxIdleConnsPerHost: 25,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second,
		},
		Timeout: 30 * time.Second,
	}
}

// loadOutcome is what the workers of drainUnderLoad saw.
type loadOutcome struct {
	mu sync.Mutex
	// ok: answered 200 with a review; closing: of those, answered with
	// Connection: close; afterSignal: answered after SIGTERM.
	ok, closing, afterSignal int
	// lost: a request handed to a connection got no answer (EOF, reset,
	// "server closed idle connection", broken pipe, or a non-200).
	lost []string
	// refused: no connection could be made: connection refused, or a
	// connection the kernel had queued reset when the listener closed.
	// The request never left the client. Allowed only once the listener
	// is gone.
	refused      int
	refusedEarly []string
}

// TestDrainUnderLoad: a client configured as the API server's webhook
// client, with 16 and with 200 workers hammering graft, loses no request
// when graft gets SIGTERM mid-run. Before this drain, 16 workers lost 16
// requests (EOF, one per busy connection) and 200 workers lost 157.
func TestDrainUnderLoad(t *testing.T) {
	for _, workers := range []int{16, 200} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			drainUnderLoad(t, workers)
		})
	}
}

func drainUnderLoad(t *testing.T, workers int) {
	const drainDelay = 2 * time.Second
	ts := startServer(t, serverSetup{override: func(s *config.Server) {
		s.DrainDelay = config.Duration{Duration: drainDelay}
		// A handshake stalled for seconds on a loaded machine is not what
		// this test is about.
		s.ReadTimeout = config.Duration{Duration: time.Minute}
		s.HandshakeTimeout = config.Duration{Duration: time.Minute}
	}})
	client := apiServerClient(ts.caPool)
	defer client.CloseIdleConnections()
	review := corpus.Review(corpus.Small)
	var (
		out     loadOutcome
		signal  atomic.Pointer[time.Time] // set at SIGTERM
		stop    = make(chan struct{})
		started sync.WaitGroup
		wg      sync.WaitGroup
	)
	started.Add(workers)
	for range workers {
		wg.Go(func() {
			started.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !admitOnce(client, ts.url, review, &signal, drainDelay, &out) {
					// Calls arrive at the API server's pace, not in a
					// tight loop of refused connections.
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	started.Wait()
	waitFor(t, "load on every worker", func() bool {
		out.mu.Lock()
		defer out.mu.Unlock()
		return out.ok >= 4*workers
	})

	// Client and server share two cores under the race detector here, and
	// a client goroutine stalled for a second would pass for a client
	// that no longer wants its pooled connections.
	ts.retireEvery = 3 * time.Second
	now := time.Now()
	signal.Store(&now)
	if err := ts.stop(t); err != nil { // SIGTERM, and Run's return
		t.Fatalf("Run: %v", err)
	}
	close(stop)
	wg.Wait()

	out.mu.Lock()
	defer out.mu.Unlock()
	t.Logf("%d workers: %d answered (%d after SIGTERM, %d with Connection: close), %d lost, %d refused after the listener closed",
		workers, out.ok, out.afterSignal, out.closing, len(out.lost), out.refused)
	if len(out.lost) > 0 {
		t.Errorf("%d requests lost; first: %s", len(out.lost), out.lost[0])
	}
	if len(out.refusedEarly) > 0 {
		t.Errorf("%d connections refused before the drain delay was over; first: %s", len(out.refusedEarly), out.refusedEarly[0])
	}
	if out.afterSignal < workers {
		t.Errorf("only %d requests answered during the drain, want at least one per worker (%d)", out.afterSignal, workers)
	}
	if out.closing == 0 {
		t.Error("no response carried Connection: close")
	}
	if logs := ts.logs.String(); strings.Contains(logs, "grace period over") {
		t.Errorf("requests were cut off at the end of the grace period:\n%s", logs)
	}
}

// admitOnce sends one review and records how it went; it returns false
// when no connection could be made. Whether the request
// was handed to a connection (httptrace's GotConn, per attempt: the
// transport retries on a new connection when it knows nothing was sent)
// tells a lost request from one that never left.
func admitOnce(client *http.Client, url string, review []byte, signal *atomic.Pointer[time.Time], drainDelay time.Duration, out *loadOutcome) bool {
	var gotConn atomic.Bool
	trace := &httptrace.ClientTrace{
		GetConn: func(string) { gotConn.Store(false) },
		GotConn: func(httptrace.GotConnInfo) { gotConn.Store(true) },
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodPost,
		url+"/inject?timeout=10s", bytes.NewReader(review))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	at := time.Now()
	out.mu.Lock()
	defer out.mu.Unlock()
	switch {
	case err != nil && !gotConn.Load():
		if sig := signal.Load(); sig == nil || at.Before(sig.Add(drainDelay)) {
			out.refusedEarly = append(out.refusedEarly, err.Error())
		} else {
			out.refused++
		}
		return false
	case err != nil:
		rel := "before SIGTERM"
		if sig := signal.Load(); sig != nil {
			rel = fmt.Sprintf("%s after SIGTERM", at.Sub(*sig).Round(time.Millisecond))
		}
		out.lost = append(out.lost, err.Error()+" ("+rel+")")
	case resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"allowed":true`)):
		out.lost = append(out.lost, fmt.Sprintf("status %d: %.200s", resp.StatusCode, body))
	default:
		out.ok++
		if resp.Close {
			out.closing++
		}
		if signal.Load() != nil {
			out.afterSignal++
		}
	}
	return true
}

// TestDrainSequence follows one shutdown step by step: during the drain
// graft is not ready, still accepts connections, answers on idle pooled
// ones, and closes every connection after its answer; after it, the
// listener is closed and an idle connection nobody uses is retired with a
// clean TLS close.
func TestDrainSequence(t *testing.T) {
	ts := startServer(t, serverSetup{override: func(s *config.Server) {
		s.DrainDelay = config.Duration{Duration: time.Hour} // ended by EndDrain
	}})
	ts.retireEvery = 50 * time.Millisecond
	pooled := apiServerClient(ts.caPool)
	defer pooled.CloseIdleConnections()
	before := postTraced(t, pooled, ts.url)
	// A connection that stays idle throughout.
	idle, err := tls.Dial("tcp", ts.Addr().String(), &tls.Config{RootCAs: ts.caPool, ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if err := newRawClient(idle, corpus.Review(corpus.Small)).roundTrip(); err != nil {
		t.Fatal(err)
	}

	ts.cancel() // SIGTERM
	waitFor(t, "readyz to fail", func() bool { return getStatus(t, ts.plain, ts.admin+"/readyz") == http.StatusServiceUnavailable })
	if c := postTraced(t, pooled, ts.url); !c.reused || c.conn != before.conn || !c.closing {
		t.Errorf("pooled connection during the drain: %+v; want it reused (%s) and closed after the answer", c, before.conn)
	}
	fresh := apiServerClient(ts.caPool)
	defer fresh.CloseIdleConnections()
	if c := postTraced(t, fresh, ts.url); c.reused || !c.closing {
		t.Errorf("new connection during the drain: %+v; want it accepted and closed after the answer", c)
	}

	ts.EndDrain()
	waitFor(t, "the listener to close", func() bool {
		c, err := net.Dial("tcp", ts.Addr().String())
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	if _, err := readWithin(t, idle, 20*time.Second); !errors.Is(err, io.EOF) {
		t.Errorf("idle connection after the drain: %v, want io.EOF (close_notify)", err)
	}
	if err := ts.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if lines := ts.logs.lines(t, "idle connections retired"); len(lines) != 1 || lines[0]["connections"] != 1.0 {
		t.Errorf("retired log lines %v, want one for 1 connection", lines)
	}
}
