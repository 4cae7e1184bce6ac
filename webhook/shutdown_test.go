package webhook

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
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

	// An idle keep-alive connection: shutdown must close it rather than
	// wait out the idle timeout.
	idle := newClient(ts.caPool, nil)
	defer idle.CloseIdleConnections()
	if code, _ := doPost(t, idle, ts.url+"/inject", "application/json", review); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}

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
	if logs := ts.logs.String(); strings.Contains(logs, "grace period over") || !strings.Contains(logs, "shut down cleanly") {
		t.Errorf("shutdown did not complete within the grace period:\n%s", logs)
	}
}

// waitFor polls cond: the events it waits for happen on server goroutines
// the test cannot join.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// A minute: only a failing wait takes it, and 200 workers' first
	// answers under -race on a busy 2-core machine took more than 20 s.
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReadiness: not ready until warmed up; ready on both ports after.
func TestReadiness(t *testing.T) {
	ts := startServer(t, serverSetup{})
	for _, u := range []struct {
		url string
		c   *http.Client
	}{{ts.admin, ts.plain}, {ts.url, ts.client}} {
		resp, err := u.c.Get(u.url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s/readyz: %d", u.url, resp.StatusCode)
		}
	}
	ts.warmed.Store(false) // as before the warm-up admission
	resp, err := ts.plain.Get(ts.admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "warming up") {
		t.Errorf("before warm-up: %d %q", resp.StatusCode, body)
	}
	if code := getStatus(t, ts.plain, ts.admin+"/healthz"); code != http.StatusOK {
		t.Errorf("healthz while not ready: %d", code)
	}
}

func getStatus(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
