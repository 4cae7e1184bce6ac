package load

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// reviewer answers AdmissionReviews the way the test case says.
type reviewer struct {
	uid    func(string) string // what uid to echo
	patch  string              // JSON patch to return, "" for none
	status int
}

func (rv reviewer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		APIVersion string `json:"apiVersion"`
		Request    struct {
			UID string `json:"uid"`
		} `json:"request"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if rv.status != 0 {
		w.WriteHeader(rv.status)
		return
	}
	resp := map[string]any{"uid": rv.uid(in.Request.UID), "allowed": true}
	if rv.patch != "" {
		resp["patchType"] = "JSONPatch"
		resp["patch"] = base64.StdEncoding.EncodeToString([]byte(rv.patch))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": in.APIVersion, "kind": "AdmissionReview", "response": resp})
}

func echoUID(s string) string { return s }

func startServer(t *testing.T, h http.Handler) (string, *tls.Config) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv.URL + "/inject?timeout=10s", &tls.Config{RootCAs: pool}
}

func testRequests(t *testing.T) []*Request {
	t.Helper()
	body, err := os.ReadFile("testdata/review.json")
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := ParseRequests([][]byte{body})
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

const goodPatch = `[{"op":"add","path":"/spec/initContainers","value":[{"name":"graft-agent","image":"a","restartPolicy":"Always"}]},{"op":"add","path":"/metadata/annotations/graft.dev~1status","value":"injected"}]`

func TestRun(t *testing.T) {
	tests := []struct {
		name        string
		srv         reviewer
		mode        Mode
		max         int64
		sample      int64
		wantReqs    int64
		wantErrKind string // "" for none
		wantPatched bool
	}{
		{"closed, patch applies", reviewer{uid: echoUID, patch: goodPatch}, Closed, 60, 1, 60, "", true},
		{"closed, no patch", reviewer{uid: echoUID}, Closed, 30, 1, 30, "", false},
		{"open, patch applies", reviewer{uid: echoUID, patch: goodPatch}, Open, 40, 1, 40, "", true},
		{"wrong uid", reviewer{uid: func(string) string { return "other" }}, Closed, 20, 64, 20, "uid", false},
		{"patch does not apply", reviewer{uid: echoUID, patch: `[{"op":"remove","path":"/spec/nothere"}]`}, Closed, 20, 1, 20, "patch", false},
		{"patch is not a Pod after", reviewer{uid: echoUID, patch: `[{"op":"replace","path":"/spec/containers","value":"x"}]`}, Closed, 20, 1, 20, "patch", false},
		{"server error", reviewer{status: http.StatusInternalServerError}, Closed, 20, 64, 20, "status", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, tlsCfg := startServer(t, tt.srv)
			var progress strings.Builder
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := Run(ctx, Config{
				URL: url, TLS: tlsCfg, Requests: testRequests(t),
				Mode: tt.mode, Concurrency: 4, Rate: 2000, MaxRequests: tt.max,
				SampleEvery: tt.sample, Warmup: 0, Progress: &progress, Label: "test",
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests != tt.wantReqs {
				t.Errorf("Requests = %d, want %d", res.Requests, tt.wantReqs)
			}
			if got := res.Latency.TotalCount(); tt.wantErrKind == "" && got != tt.wantReqs {
				t.Errorf("latencies recorded = %d, want %d", got, tt.wantReqs)
			}
			if tt.wantErrKind == "" {
				if n := res.TotalErrors(); n != 0 {
					t.Errorf("errors = %v (%s), want none", res.Errors, res.FirstError)
				}
				if res.OK != tt.wantReqs {
					t.Errorf("OK = %d, want %d", res.OK, tt.wantReqs)
				}
			} else if res.Errors[tt.wantErrKind] == 0 {
				t.Errorf("errors = %v, want some %q", res.Errors, tt.wantErrKind)
			}
			if res.Checked == 0 && tt.wantErrKind != "status" {
				t.Error("no response was fully checked")
			}
			if (res.Patched > 0) != tt.wantPatched {
				t.Errorf("Patched = %d, want patched: %v", res.Patched, tt.wantPatched)
			}
			if tt.mode == Open && res.Rate != 2000 {
				t.Errorf("Rate = %v, want 2000", res.Rate)
			}
			if res.Elapsed <= 0 || res.RPS() <= 0 {
				t.Errorf("Elapsed = %v, RPS = %v: want > 0", res.Elapsed, res.RPS())
			}
			if p50, p99 := res.PercentileUS(50), res.PercentileUS(99); p50 <= 0 || p99 < p50 {
				t.Errorf("p50 = %d, p99 = %d: want 0 < p50 <= p99", p50, p99)
			}
		})
	}
}

// A run bounded only by time stops by itself and prints progress.
func TestRunStopsAtDuration(t *testing.T) {
	url, tlsCfg := startServer(t, reviewer{uid: echoUID, patch: goodPatch})
	for _, mode := range []Mode{Closed, Open} {
		t.Run(string(mode), func(t *testing.T) {
			var progress strings.Builder
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var hooks []string
			res, err := Run(ctx, Config{
				URL: url, TLS: tlsCfg, Requests: testRequests(t), Mode: mode,
				Concurrency: 2, Rate: 500, Duration: 1200 * time.Millisecond,
				Warmup: 100 * time.Millisecond, Progress: &progress, Label: "dur",
				BeforeMeasure: func() { hooks = append(hooks, "before") },
				AfterMeasure:  func() { hooks = append(hooks, "after") },
			})
			if err != nil {
				t.Fatal(err)
			}
			if ctx.Err() != nil {
				t.Fatal("run did not stop by itself")
			}
			if res.Requests == 0 || res.TotalErrors() != 0 {
				t.Errorf("Requests = %d, errors = %v (%s)", res.Requests, res.Errors, res.FirstError)
			}
			if strings.Join(hooks, ",") != "before,after" {
				t.Errorf("hooks called: %v, want before then after", hooks)
			}
			if !strings.Contains(progress.String(), "dur ") || !strings.Contains(progress.String(), "req/s") {
				t.Errorf("progress line missing: %q", progress.String())
			}
		})
	}
}

func TestRunRefuses(t *testing.T) {
	reqs := testRequests(t)
	base := Config{URL: "https://127.0.0.1:1/inject", Requests: reqs, Mode: Closed, Concurrency: 1, MaxRequests: 1}
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"not loopback", func(c *Config) { c.URL = "https://10.0.0.1:443/inject" }, "loopback"},
		{"a name", func(c *Config) { c.URL = "https://example.invalid:443/inject" }, "loopback"},
		{"plain http", func(c *Config) { c.URL = "http://127.0.0.1:1/inject" }, "https"},
		{"no port", func(c *Config) { c.URL = "https://127.0.0.1/inject" }, "port"},
		{"no requests", func(c *Config) { c.Requests = nil }, "no requests"},
		{"open without rate", func(c *Config) { c.Mode = Open }, "rate"},
		{"bad mode", func(c *Config) { c.Mode = "sideways" }, "mode"},
		{"no concurrency", func(c *Config) { c.Concurrency = 0 }, "concurrency"},
		{"unbounded", func(c *Config) { c.MaxRequests = 0 }, "duration or a request count"},
		{"nobody listening", func(c *Config) {}, "preflight"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.edit(&c)
			_, err := Run(context.Background(), c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestParseRequest(t *testing.T) {
	tests := []struct {
		body, want string
	}{
		{`{`, "request body"},
		{`{"kind":"Pod"}`, "AdmissionReview"},
		{`{"kind":"AdmissionReview","request":{}}`, "uid"},
	}
	for _, tt := range tests {
		_, err := ParseRequest([]byte(tt.body))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseRequest(%s) = %v, want error mentioning %q", tt.body, err, tt.want)
		}
	}
	r := testRequests(t)[0]
	if r.UID != "0f9b6c3e-1c1d-4a57-9a38-5d1f1f0c0001" || r.APIVersion != "admission.k8s.io/v1" || len(r.Object) == 0 {
		t.Errorf("parsed %+v", r)
	}
}

// An open-loop run against a server slower than the rate measures from the
// intended send time, so the queue shows in the latency (no coordinated
// omission), where a closed loop at the same concurrency sees only the
// service time.
func TestOpenLoopShowsQueueing(t *testing.T) {
	const service = 20 * time.Millisecond
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(service)
		reviewer{uid: echoUID}.ServeHTTP(w, r)
	})
	url, tlsCfg := startServer(t, slow)
	run := func(mode Mode, drain time.Duration) *Result {
		res, err := Run(context.Background(), Config{
			URL: url, TLS: tlsCfg, Requests: testRequests(t), Mode: mode,
			Concurrency: 1, Rate: 200, Duration: 500 * time.Millisecond, Drain: drain,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.TotalErrors() != 0 {
			t.Fatalf("%s: errors %v", mode, res.Errors)
		}
		return res
	}
	closed, open := run(Closed, 0), run(Open, 5*time.Second)
	// 100 requests scheduled in 0.5 s, served at most 50 a second: the last
	// waits well over a second.
	if open.Requests != 100 || open.Unsent != 0 {
		t.Errorf("open: %d requests, %d unsent; want 100 and 0", open.Requests, open.Unsent)
	}
	if p99 := time.Duration(open.PercentileUS(99)) * time.Microsecond; p99 < 50*service {
		t.Errorf("open-loop p99 %s: want the queue to show (>= %s)", p99, 50*service)
	}
	if p99 := time.Duration(closed.PercentileUS(99)) * time.Microsecond; p99 > 10*service {
		t.Errorf("closed-loop p99 %s: want about the service time %s", p99, service)
	}
	// A short drain leaves scheduled requests unsent, and says so.
	if cut := run(Open, 100*time.Millisecond); cut.Unsent == 0 || cut.Requests+cut.Unsent != 100 {
		t.Errorf("short drain: %d sent, %d unsent; want some unsent, 100 in all", cut.Requests, cut.Unsent)
	}
}
