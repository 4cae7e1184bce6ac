package webhook

import (
	"crypto/tls"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/graftdev/graft/bench/corpus"
)

// TestShutdownDrains: with requests in flight, shutdown turns /readyz
// not-ready, stops accepting connections, answers every in-flight request,
// and Run returns nil.
func TestShutdownDrains(t *testing.T) {
	clock := newGateClock()
	ts := startServer(t, serverSetup{clock: clock.Now})
	review := corpus.Review(corpus.Small)
	const inFlight = 3

	clock.hold(inFlight)
	codes := make([]int, inFlight)
	var wg sync.WaitGroup
	for i := range inFlight {
		wg.Go(func() {
			codes[i], _ = doPost(t, ts.client, ts.url+"/inject", "application/json", review)
		})
	}
	for range inFlight {
		<-clock.entered
	}

	ts.cancel() // what SIGTERM does in `graft serve`
	waitFor(t, "readyz to fail", func() bool {
		resp, err := ts.plain.Get(ts.admin + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	waitFor(t, "the TLS listener to close", func() bool {
		c, err := tls.Dial("tcp", ts.Addr().String(), &tls.Config{RootCAs: ts.caPool, ServerName: "localhost"})
		if err != nil {
			return true
		}
		c.Close()
		return false
	})

	clock.release()
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusOK {
			t.Errorf("in-flight request %d: status %d", i, c)
		}
	}
	if err := ts.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// waitFor polls cond: the events it waits for happen on server goroutines
// the test cannot join.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
