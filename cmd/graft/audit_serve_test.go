package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/graftdev/graft/audit"
)

// scriptedRuns hands out one result per run, in order, then repeats the
// last; each run is signalled on ran.
type scriptedRuns struct {
	mu      sync.Mutex
	results []func() (*audit.Report, error)
	ran     chan struct{}
}

func (s *scriptedRuns) run(context.Context) (*audit.Report, error) {
	s.mu.Lock()
	r := s.results[0]
	if len(s.results) > 1 {
		s.results = s.results[1:]
	}
	s.mu.Unlock()
	defer func() { s.ran <- struct{}{} }()
	return r()
}

func report(pods ...audit.PodResult) func() (*audit.Report, error) {
	return func() (*audit.Report, error) {
		return &audit.Report{Time: time.Unix(1_800_000_000, 0), Duration: time.Second, Pods: pods}, nil
	}
}

func pod(ns, name string, class audit.Class) audit.PodResult {
	return audit.PodResult{Namespace: ns, Name: name, Workload: audit.Workload{Kind: "Pod", Name: name}, Verdict: audit.Verdict{Class: class}}
}

func get(t *testing.T, h http.Handler, method, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Code, rec.Body.String()
}

// sample reads one sample of the exposition text: the value of name with
// exactly the labels given, or -1.
func sample(t *testing.T, text, name string, labels map[string]string) float64 {
	t.Helper()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, text)
	}
	for _, m := range fams[name].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) != len(labels) {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && got[k] == v
		}
		if !match {
			continue
		}
		if m.Counter != nil {
			return m.Counter.GetValue()
		}
		return m.Gauge.GetValue()
	}
	return -1
}

// TestAuditExporter: the exporter serves the newest successful report and
// counts runs; a failed run keeps the previous report; it is ready once a
// report exists.
func TestAuditExporter(t *testing.T) {
	runs := &scriptedRuns{ran: make(chan struct{}, 10), results: []func() (*audit.Report, error){
		report(pod("shop", "a", audit.Stale), pod("shop", "b", audit.Stale), pod("shop", "c", audit.Current)),
		func() (*audit.Report, error) { return nil, errors.New("the API server is away") },
		report(pod("shop", "a", audit.Current), pod("shop", "b", audit.Missing)),
	}}
	var logs bytes.Buffer
	e := &auditExporter{run: runs.run, interval: time.Millisecond, log: &logs}

	if code, _ := get(t, e, "GET", "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before any report: %d, want 503", code)
	}
	_, text := get(t, e, "GET", "/metrics")
	if got := sample(t, text, "graft_audit_runs_total", map[string]string{"result": "success"}); got != 0 {
		t.Errorf("runs before any: %v", got)
	}
	if strings.Contains(text, "graft_audit_pods") {
		t.Errorf("a report before any run:\n%s", text)
	}

	stale := map[string]string{"namespace": "shop", "class": "stale", "revision": ""}
	missing := map[string]string{"namespace": "shop", "class": "missing", "revision": ""}
	e.once(t.Context())
	_, text = get(t, e, "GET", "/metrics")
	if got := sample(t, text, "graft_audit_pods", stale); got != 2 {
		t.Errorf("after the first run, stale Pods = %v, want 2\n%s", got, text)
	}
	if code, _ := get(t, e, "GET", "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after a report: %d", code)
	}

	e.once(t.Context())
	_, text = get(t, e, "GET", "/metrics")
	if got := sample(t, text, "graft_audit_pods", stale); got != 2 {
		t.Errorf("after a failed run, stale Pods = %v, want the previous report's 2", got)
	}
	if got := sample(t, text, "graft_audit_runs_total", map[string]string{"result": "error"}); got != 1 {
		t.Errorf("failed runs = %v, want 1", got)
	}
	if !strings.Contains(logs.String(), "the API server is away") {
		t.Errorf("the failure is not logged:\n%s", logs.String())
	}

	e.once(t.Context())
	_, text = get(t, e, "GET", "/metrics")
	if got := sample(t, text, "graft_audit_pods", stale); got != -1 {
		t.Errorf("the newest report has no stale Pods, /metrics says %v", got)
	}
	if got := sample(t, text, "graft_audit_pods", missing); got != 1 {
		t.Errorf("missing Pods = %v, want 1", got)
	}
	if got := sample(t, text, "graft_audit_runs_total", map[string]string{"result": "success"}); got != 2 {
		t.Errorf("successful runs = %v, want 2", got)
	}

	for _, c := range []struct {
		method, path string
		want         int
	}{{"GET", "/healthz", 200}, {"HEAD", "/metrics", 200}, {"GET", "/nope", 404}, {"POST", "/metrics", 405}} {
		if code, _ := get(t, e, c.method, c.path); code != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, code, c.want)
		}
	}
}

// TestAuditExporterServes: serve audits at once, again every interval,
// answers over TCP, and returns when its context ends.
func TestAuditExporterServes(t *testing.T) {
	runs := &scriptedRuns{ran: make(chan struct{}, 100), results: []func() (*audit.Report, error){
		report(pod("shop", "a", audit.Missing)),
	}}
	logs := &syncWriter{}
	e := &auditExporter{run: runs.run, interval: 20 * time.Millisecond, log: logs}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.serve(ctx, "127.0.0.1:0") }()
	for range 3 { // the first run, then two more an interval apart
		select {
		case <-runs.ran:
		case <-time.After(10 * time.Second):
			t.Fatal("no audit run")
		}
	}
	addr := regexp.MustCompile(`http://(\S+)/metrics`).FindStringSubmatch(logs.String())
	if addr == nil {
		t.Fatalf("no address logged:\n%s", logs.String())
	}
	resp, err := http.Get("http://" + addr[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := sample(t, string(body), "graft_audit_pods", map[string]string{"namespace": "shop", "class": "missing", "revision": ""}); got != 1 {
		t.Errorf("missing Pods over TCP = %v, want 1", got)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return after its context ended")
	}
	if _, err := http.Get("http://" + addr[1] + "/healthz"); err == nil {
		t.Error("still serving after serve returned")
	}
}

// TestAuditServeFlags: --serve refuses what only a single run can do.
func TestAuditServeFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", "json"}, "--serve serves -o prometheus"},
		{[]string{"--fail-on", "stale"}, "--fail-on are for one run"},
		{[]string{"--workloads"}, "--fail-on are for one run"},
		{[]string{"--interval", "0s"}, "--interval 0s"},
		{[]string{"-n", "shop", "-A"}, "either -n NAMESPACE or -A"},
		{[]string{"--config", "/nonexistent/config.yaml"}, "config.yaml"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"audit", "--serve", "127.0.0.1:0"}, c.args...), nil, &stdout, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("exit %d, stderr %q: want 1 and %q", code, stderr.String(), c.want)
			}
		})
	}
}

// syncWriter is a bytes.Buffer safe for the exporter's goroutine and the
// test's.
type syncWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
