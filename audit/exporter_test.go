package audit

import (
	"bytes"
	"context"
	"errors"
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

// metrics is what the exporter serves on /metrics.
func metrics(t *testing.T, e *Exporter) string {
	t.Helper()
	var b strings.Builder
	if err := e.WriteMetrics(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
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

	if why := e.NotReady(); why == "" {
		t.Error("ready before any report")
	}
	text := metrics(t, e)
	if got := sample(t, text, "graft_audit_runs_total", map[string]string{"result": "success"}); got != 0 {
		t.Errorf("runs before any: %v", got)
	}
	if strings.Contains(text, "graft_audit_pods") {
		t.Errorf("a report before any run:\n%s", text)
	}

	stale := map[string]string{"namespace": "shop", "class": "stale", "revision": ""}
	missing := map[string]string{"namespace": "shop", "class": "missing", "revision": ""}
	e.Once(t.Context())
	text = metrics(t, e)
	if got := sample(t, text, "graft_audit_pods", stale); got != 2 {
		t.Errorf("after the first run, stale Pods = %v, want 2\n%s", got, text)
	}
	if why := e.NotReady(); why != "" {
		t.Errorf("not ready after a report: %s", why)
	}

	e.Once(t.Context())
	text = metrics(t, e)
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
	text = metrics(t, e)
	if got := sample(t, text, "graft_audit_pods", stale); got != -1 {
		t.Errorf("the newest report has no stale Pods, /metrics says %v", got)
	}
	if got := sample(t, text, "graft_audit_pods", missing); got != 1 {
		t.Errorf("missing Pods = %v, want 1", got)
	}
	if got := sample(t, text, "graft_audit_runs_total", map[string]string{"result": "success"}); got != 2 {
		t.Errorf("successful runs = %v, want 2", got)
	}

}

// TestExporterLoop: the loop audits at once, again an interval after
// each run, and returns when its context ends.
func TestExporterLoop(t *testing.T) {
	runs := &scriptedRuns{ran: make(chan struct{}, 100), results: []func() (*Report, error){
		report(exPod("shop", "a", Missing)),
	}}
	e := &Exporter{Run: runs.run, Interval: 20 * time.Millisecond, Log: &syncWriter{}, Now: time.Now}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		e.Loop(ctx)
		close(done)
	}()
	for range 3 { // the first run, then two more an interval apart
		select {
		case <-runs.ran:
		case <-time.After(time.Minute):
			t.Fatal("no audit run")
		}
	}
	if got := sample(t, metrics(t, e), "graft_audit_pods", map[string]string{"namespace": "shop", "class": "missing", "revision": ""}); got != 1 {
		t.Errorf("missing Pods = %v, want 1", got)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the loop did not return after its context ended")
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
