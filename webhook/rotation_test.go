package webhook

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"testing"
	"time"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/config"
)

// call is one review sent by an API-server-like client, as the client saw
// it: which connection carried it, whether that one was reused from the
// pool, and whether the answer ended it.
type call struct {
	conn    string // the connection's local address
	reused  bool
	closing bool
}

func postTraced(t *testing.T, client *http.Client, url string) call {
	t.Helper()
	var c call
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		c.conn, c.reused = info.Conn.LocalAddr().String(), info.Reused
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace),
		http.MethodPost, url+"/inject?timeout=10s", bytes.NewReader(corpus.Review(corpus.Small)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	c.closing = resp.Close
	return c
}

// TestRotationRequestCap: the response to a connection's maxConnRequests-th
// request closes it, and the client's next call opens a new one.
func TestRotationRequestCap(t *testing.T) {
	ts := startServer(t, serverSetup{override: func(s *config.Server) {
		s.MaxConnRequests = 5
		s.MaxConnAge = config.Duration{Duration: time.Hour}
	}})
	client := apiServerClient(ts.caPool)
	defer client.CloseIdleConnections()
	conns := map[string]int{}
	for i := 1; i <= 12; i++ {
		c := postTraced(t, client, ts.url)
		conns[c.conn]++
		if want := i%5 == 0; c.closing != want {
			t.Errorf("request %d: Connection: close %v, want %v", i, c.closing, want)
		}
		if want := i%5 != 1; c.reused != want {
			t.Errorf("request %d: on a reused connection %v, want %v", i, c.reused, want)
		}
	}
	if len(conns) != 3 {
		t.Errorf("12 requests used %d connections, want 3: %v", len(conns), conns)
	}
}

// TestRotationAge: the first response after a connection reaches its age
// closes it; younger connections are kept.
func TestRotationAge(t *testing.T) {
	const age = 2 * time.Second
	ts := startServer(t, serverSetup{override: func(s *config.Server) {
		s.MaxConnAge = config.Duration{Duration: age}
		s.MaxConnRequests = math.MaxInt
	}})
	client := apiServerClient(ts.caPool)
	defer client.CloseIdleConnections()

	first := postTraced(t, client, ts.url)
	if first.closing {
		t.Fatal("a new connection was closed at once")
	}
	time.Sleep(age + 100*time.Millisecond)
	old := postTraced(t, client, ts.url)
	if old.conn != first.conn || !old.closing {
		t.Fatalf("past its age: on %s (first %s), Connection: close %v; want the first connection, closed", old.conn, first.conn, old.closing)
	}
	if next := postTraced(t, client, ts.url); next.reused || next.conn == first.conn {
		t.Errorf("after rotation the client reused %s", next.conn)
	}
}

// TestRotationAgeLimit: connections opened together end over the last
// quarter of the age, not at once.
func TestRotationAgeLimit(t *testing.T) {
	r := rotation{maxAge: 10 * time.Second}
	seen := map[time.Duration]bool{}
	for id := uint64(1000); id < 1016; id++ {
		l := r.ageLimit(id)
		if l <= 3*r.maxAge/4 || l > r.maxAge {
			t.Errorf("connection %d: limit %s outside (7.5s, 10s]", id, l)
		}
		seen[l] = true
	}
	if len(seen) != 16 {
		t.Errorf("16 consecutive connections share %d limits, want 16", len(seen))
	}
}
