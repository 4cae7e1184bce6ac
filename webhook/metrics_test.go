package webhook

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/config"
)

// TestMetricsAfterSequence: a known sequence of requests leaves known
// values, and /metrics serves every graft series plus the Go and process
// collectors on the admin port, and on the webhook port when asked to.
func TestMetricsAfterSequence(t *testing.T) {
	ts := startServer(t, serverSetup{})
	steps := []struct {
		path, contentType string
		body              []byte
		want              int
	}{
		{"/inject", "application/json", corpus.Review(corpus.Small), http.StatusOK},
		{"/inject", "application/json", corpus.Review(corpus.Skip), http.StatusOK},
		{"/inject", "application/json", []byte("{"), http.StatusBadRequest},
		{"/inject/nope", "application/json", corpus.Review(corpus.Small), http.StatusNotFound},
		{"/inject", "text/plain", corpus.Review(corpus.Small), http.StatusUnsupportedMediaType},
	}
	for _, s := range steps {
		if code, out := doPost(t, ts.client, ts.url+s.path, s.contentType, s.body); code != s.want {
			t.Fatalf("POST %s: %d, want %d: %.200s", s.path, code, s.want, out)
		}
	}
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"graft_admission_requests_total", []string{"profile", "enabled", "revision", "default", "operation", "CREATE", "result", "inject"}, 1},
		{"graft_admission_requests_total", []string{"profile", "enabled", "revision", "default", "operation", "CREATE", "result", "skip"}, 1},
		{"graft_admission_requests_total", []string{"profile", "enabled", "revision", "unknown", "operation", "UNKNOWN", "result", "error"}, 1},
		{"graft_admission_requests_total", []string{"profile", "unknown", "revision", "unknown", "operation", "UNKNOWN", "result", "error"}, 1},
		{"graft_admission_requests_total", []string{"profile", "enabled", "revision", "default", "operation", "CREATE", "result", "deny"}, 0},
		{"graft_skips_total", []string{"reason", "opted-out"}, 1},
		{"graft_injections_total", []string{"template", "mesh-proxy", "revision", "default"}, 1}, // enabled injects mesh-proxy,
		{"graft_admission_duration_seconds", nil, 4},
		{"graft_patch_bytes", nil, 1},
		{"graft_inflight_requests", nil, 0},
		{"graft_admission_failures_total", []string{"reason", "internal-error"}, 0},
	}
	for _, c := range checks {
		if got := metric(t, ts.reg, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if metric(t, ts.reg, "graft_tls_certificate_expiry_timestamp_seconds") == 0 {
		t.Error("certificate expiry gauge not set")
	}

	wantMetrics(t, ts.plain, ts.admin, "graft_skips_total")
	// Not on the webhook port unless asked for: that port is open to
	// whoever may reach the API server's side of the network.
	resp, err := ts.client.Get(ts.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics on the webhook port: %d, want 404 by default", resp.StatusCode)
	}
	on := startServer(t, serverSetup{override: func(s *config.Server) { s.MetricsOnWebhookPort = true }})
	on.post(t, "/inject", corpus.Review(corpus.Small))
	wantMetrics(t, on.client, on.url)
}

// wantMetrics wants base/metrics to serve graft's series: those there
// from the start, and also counted, the ones counted since.
func wantMetrics(t *testing.T, c *http.Client, base string, counted ...string) {
	t.Helper()
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range append([]string{
		"graft_admission_requests_total", "graft_admission_duration_seconds_bucket", "graft_injections_total",
		"graft_admission_failures_total", "graft_patch_bytes_bucket",
		"graft_inflight_requests", "graft_config_reloads_total", "graft_tls_certificate_expiry_timestamp_seconds",
		"graft_connections", "graft_request_body_bytes",
		"go_goroutines", "process_cpu_seconds_total",
		`graft_admission_duration_seconds_bucket{le="5e-05"}`, `graft_admission_duration_seconds_bucket{le="1"}`,
		// 80% of the default budget (the alert threshold) and the budget.
		`graft_admission_duration_seconds_bucket{le="0.16"}`, `graft_admission_duration_seconds_bucket{le="0.2"}`,
	}, counted...) {
		if !strings.Contains(string(text), name) {
			t.Errorf("%s/metrics lacks %s", base, name)
		}
	}
}

// TestAdmissionLog: one info line per admission with the documented
// fields; skips at debug.
func TestAdmissionLog(t *testing.T) {
	ts := startServer(t, serverSetup{override: func(s *config.Server) { s.LogLevel = "debug" }})
	small := corpus.Review(corpus.Small)
	var req struct {
		Request struct {
			UID       string `json:"uid"`
			Namespace string `json:"namespace"`
			Object    struct {
				Metadata struct {
					Name, GenerateName string
				} `json:"metadata"`
			} `json:"object"`
		} `json:"request"`
	}
	if err := json.Unmarshal(small, &req); err != nil {
		t.Fatal(err)
	}
	ts.post(t, "/inject", small)
	ts.post(t, "/inject", corpus.Review(corpus.Skip))

	lines := ts.logs.lines(t, "admission")
	if len(lines) != 2 {
		t.Fatalf("%d admission lines, want 2:\n%s", len(lines), ts.logs.String())
	}
	inj, skip := lines[0], lines[1]
	pod := req.Request.Object.Metadata.Name
	if pod == "" {
		pod = req.Request.Object.Metadata.GenerateName
	}
	for k, want := range map[string]any{
		"level": "info", "uid": req.Request.UID, "namespace": req.Request.Namespace, "pod": pod,
		"profile": "enabled", "revision": "default", "decision": "inject", "reason": "none",
	} {
		if inj[k] != want {
			t.Errorf("inject line %s = %v, want %v", k, inj[k], want)
		}
	}
	if ops, _ := inj["patch_ops"].(float64); ops < 1 {
		t.Errorf("patch_ops %v", inj["patch_ops"])
	}
	if d, ok := inj["duration"].(float64); !ok || d <= 0 {
		t.Errorf("duration %v", inj["duration"])
	}
	if skip["level"] != "debug" || skip["decision"] != "skip" || skip["reason"] != "opted-out" {
		t.Errorf("skip line: %v", skip)
	}
}

// TestDurationBuckets: the latency histogram has bounds at 80% of the
// budget graft starts with, at the budget and a quarter past it, in
// whole microseconds, beside the fixed ladder, strictly increasing.
func TestDurationBuckets(t *testing.T) {
	for _, c := range []struct {
		budget time.Duration
		want   []float64
	}{
		{config.DefaultBudget, []float64{0.16, 0.2, 0.25}},
		{500 * time.Millisecond, []float64{0.4, 0.5, 0.625}},
		{75 * time.Millisecond, []float64{0.06, 0.075, 0.09375}},
		{3 * time.Second, []float64{2.4, 3, 3.75}},
	} {
		t.Run(c.budget.String(), func(t *testing.T) {
			b := durationBuckets(c.budget)
			for _, w := range c.want {
				if !slices.Contains(b, w) {
					t.Errorf("no bound at %v in %v", w, b)
				}
			}
			for _, l := range durationLadder {
				if !slices.Contains(b, l) {
					t.Errorf("the ladder's bound %v is gone: %v", l, b)
				}
			}
			for i := 1; i < len(b); i++ {
				if b[i] <= b[i-1] {
					t.Errorf("bounds not strictly increasing at %d: %v", i, b)
				}
			}
		})
	}
}

// TestDurationBucketsFollowTheBudget: a server started with a 500ms
// budget exposes bounds at 0.4 and 0.5 s, where the chart puts its alert.
func TestDurationBucketsFollowTheBudget(t *testing.T) {
	ts := startServer(t, serverSetup{override: func(s *config.Server) { s.Budget = config.Duration{Duration: 500 * time.Millisecond} }})
	ts.post(t, "/inject", corpus.Review(corpus.Small))
	resp, err := ts.plain.Get(ts.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, le := range []string{"0.4", "0.5", "0.625"} {
		if want := `graft_admission_duration_seconds_bucket{le="` + le + `"} 1`; !strings.Contains(string(text), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
