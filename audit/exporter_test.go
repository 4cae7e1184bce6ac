package audit

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
)

// scriptedRuns hands out one result per run, in order, then repeats the
// last; each run is signalled on ran.
type scriptedRuns struct {
	mu      sync.Mutex
	results []func() (*Report, error)
	ran     chan struct{}
}

func (s *scriptedRuns) run(context.Context, Writer, time.Time) (*Report, error) {
	s.mu.Lock()
	r := s.results[0]
	if len(s.results) > 1 {
		s.results = s.results[1:]
	}
	s.mu.Unlock()
	defer func() { s.ran <- struct{}{} }()
	return r()
}

func report(pods ...PodResult) func() (*Report, error) {
	return func() (*Report, error) {
		r := NewReport(time.Unix(1_800_000_000, 0))
		for i := range pods {
			r.Add(&pods[i])
		}
		r.Duration = time.Second
		return r, nil
	}
}

func exPod(ns, name string, class Class) PodResult {
	return PodResult{Namespace: ns, Name: name, Workload: Workload{Kind: "Pod", Name: name}, Verdict: Verdict{Class: class}}
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

// TestExporter: the exporter serves the newest successful report and
// counts runs; a failed run keeps the previous report; it is ready once a
// report exists.
func TestExporter(t *testing.T) {
	runs := &scriptedRuns{ran: make(chan struct{}, 10), results: []func() (*Report, error){
		report(exPod("shop", "a", Stale), exPod("shop", "b", Stale), exPod("shop", "c", Current)),
		func() (*Report, error) { return nil, errors.New("the API server is away") },
		report(exPod("shop", "a", Current), exPod("shop", "b", Missing)),
	}}
	var logs bytes.Buffer
	e := &Exporter{Run: runs.run, Interval: time.Millisecond, Log: &logs, Now: time.Now}

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
	e.Once(t.Context())
	_, text = get(t, e, "GET", "/metrics")
	if got := sample(t, text, "graft_audit_pods", stale); got != 2 {
		t.Errorf("after the first run, stale Pods = %v, want 2\n%s", got, text)
	}
	if code, _ := get(t, e, "GET", "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after a report: %d", code)
	}

	e.Once(t.Context())
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

	e.Once(t.Context())
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

// TestExporterServes: serve audits at once, again every interval,
// answers over TCP, and returns when its context ends.
func TestExporterServes(t *testing.T) {
	runs := &scriptedRuns{ran: make(chan struct{}, 100), results: []func() (*Report, error){
		report(exPod("shop", "a", Missing)),
	}}
	logs := &syncWriter{}
	e := &Exporter{Run: runs.run, Interval: 20 * time.Millisecond, Log: logs, Now: time.Now}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.Serve(ctx, "127.0.0.1:0") }()
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
