// Package harness runs the load tests: it starts each peer (graft, the
// conventional injector, the transport floor) with GOMAXPROCS=1 pinned to
// CPU 0, drives it with bench/load on every corpus, reads the server's CPU
// time and peak RSS from /proc and its allocations from /metrics, and
// returns one report.Row per run.
package harness

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/bench/internal/benchtls"
	"github.com/graftdev/graft/bench/load"
	"github.com/graftdev/graft/bench/report"
)

// Plan is what to run.
type Plan struct {
	// Peers are measured in this order. A floor peer (named report.Floor)
	// pads its answers to the size the first other peer answered with on
	// the same corpus, so list it last.
	Peers   []Peer
	Corpora []string

	// Closed-loop runs on every corpus.
	Concurrency int
	Duration    time.Duration
	// Open-loop runs on the corpora named here, at the rate given.
	OpenRates       map[string]float64
	OpenConcurrency int
	OpenDuration    time.Duration

	Warmup time.Duration
	// Pin binds servers to CPU 0 (the generator should be on another CPU).
	Pin bool
	// WorkDir holds the certificates and the servers' logs.
	WorkDir string
	// PerfPeers are the peers whose measured phases Linux perf samples; the
	// flat profiles go to PerfDir as profile-<peer>-<corpus>-<mode>.txt.
	PerfPeers []string
	PerfDir   string
	// Progress receives the generator's progress lines and the harness's
	// own; nil for silence.
	Progress io.Writer
}

// Outcome is what a plan measured.
type Outcome struct {
	Rows []report.Row
	// Notes say what could not be measured and why.
	Notes []string
}

// Run executes plan. Only a plan that cannot start at all is an error: a
// peer that does not start or a run that fails becomes a note.
func Run(ctx context.Context, plan Plan) (*Outcome, error) {
	if len(plan.Peers) == 0 || len(plan.Corpora) == 0 {
		return nil, fmt.Errorf("harness: nothing to run")
	}
	reqs := map[string][]*load.Request{}
	for _, name := range plan.Corpora {
		if !slices.Contains(corpus.Names(), name) {
			return nil, fmt.Errorf("harness: unknown corpus %q (have %v)", name, corpus.Names())
		}
		r, err := load.ParseRequests([][]byte{corpus.Review(name)})
		if err != nil {
			return nil, fmt.Errorf("harness: corpus %s: %w", name, err)
		}
		reqs[name] = r
	}
	for name := range plan.OpenRates {
		if !slices.Contains(plan.Corpora, name) {
			return nil, fmt.Errorf("harness: open-loop rate for %q, which is not among the corpora", name)
		}
	}
	files, client, err := benchtls.Write(plan.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	out := &Outcome{}
	respSize := map[string]float64{} // corpus -> answer size of the first non-floor peer
	for _, p := range plan.Peers {
		if ctx.Err() != nil {
			break
		}
		h := &peerRun{plan: plan, client: client, out: out}
		h.logf("starting %s (%s)", p.Name, p.Bin)
		pr, err := startPeer(ctx, p, files, plan.Pin, plan.WorkDir)
		if err != nil {
			out.Notes = append(out.Notes, fmt.Sprintf("%s was not measured: %v", p.Name, err))
			h.logf("%v", err)
			continue
		}
		h.proc = pr
		for _, name := range plan.Corpora {
			query := "timeout=10s"
			if p.Name == report.Floor && respSize[name] > 0 {
				query += fmt.Sprintf("&size=%.0f", math.Round(respSize[name]))
			}
			row, ok := h.measure(ctx, name, reqs[name], load.Closed, 0, query)
			if ok && p.Name != report.Floor && respSize[name] == 0 {
				respSize[name] = row.RespBytes
			}
			if rate := plan.OpenRates[name]; rate > 0 && pr.Running() {
				h.measure(ctx, name, reqs[name], load.Open, rate, query)
			}
			if !pr.Running() {
				out.Notes = append(out.Notes, fmt.Sprintf("%s exited during the %s runs (log: %s)", p.Name, name, pr.LogPath()))
				break
			}
		}
		if err := pr.stop(); err != nil {
			out.Notes = append(out.Notes, err.Error())
		}
	}
	return out, nil
}

type peerRun struct {
	plan   Plan
	client *tls.Config
	out    *Outcome
	proc   *process
}

func (h *peerRun) logf(format string, args ...any) {
	if h.plan.Progress != nil {
		fmt.Fprintf(h.plan.Progress, "bench: "+format+"\n", args...)
	}
}

// measure runs one load test and appends its row.
func (h *peerRun) measure(ctx context.Context, corpusName string, reqs []*load.Request, mode load.Mode, rate float64, query string) (report.Row, bool) {
	pr := h.proc
	cfg := load.Config{
		URL:      "https://" + pr.addr + "/inject?" + query,
		TLS:      h.client,
		Requests: reqs,
		Mode:     mode, Concurrency: h.plan.Concurrency, Duration: h.plan.Duration,
		Rate: rate, Warmup: h.plan.Warmup, Progress: h.plan.Progress,
		Label: fmt.Sprintf("%-12s %-8s %-6s", pr.peer.Name, corpusName, mode),
	}
	if mode == load.Open {
		cfg.Concurrency, cfg.Duration = h.plan.OpenConcurrency, h.plan.OpenDuration
	}
	snap := &snapshot{pid: pr.Pid(), client: pr.httpAdmin, metricsURL: pr.adminURL + "/metrics"}
	if slices.Contains(h.plan.PerfPeers, pr.peer.Name) {
		name := fmt.Sprintf("profile-%s-%s-%s", pr.peer.Name, corpusName, mode)
		snap.perfData = filepath.Join(h.plan.WorkDir, name+".perf.data")
		snap.perfReport = filepath.Join(h.plan.PerfDir, name+".txt")
		defer snap.abortPerf()
	}
	cfg.BeforeMeasure, cfg.AfterMeasure = snap.before, snap.after
	res, err := load.Run(ctx, cfg)
	if err != nil {
		h.out.Notes = append(h.out.Notes, fmt.Sprintf("%s on %s, %s loop: %v", pr.peer.Name, corpusName, mode, err))
		h.logf("%v", err)
		return report.Row{}, false
	}
	row := report.Row{
		Peer: pr.peer.Name, Corpus: corpusName, Mode: string(mode),
		Concurrency: res.Concurrency, Rate: res.Rate, Requests: res.Requests,
		DurationS: res.Elapsed.Seconds(), RPS: res.RPS(),
		P50US: res.PercentileUS(50), P90US: res.PercentileUS(90), P99US: res.PercentileUS(99),
		P999US: res.PercentileUS(99.9), MaxUS: res.Latency.Max(),
		Errors: res.TotalErrors(), ErrorKinds: res.Errors, FirstError: res.FirstError, Unsent: res.Unsent,
		Checked: res.Checked, Patched: res.Patched, RespBytes: res.RespBytes, ReqBytes: len(reqs[0].Body),
	}
	for _, e := range snap.fill(&row, res.Requests) {
		h.out.Notes = append(h.out.Notes, fmt.Sprintf("%s on %s, %s loop: %v", pr.peer.Name, corpusName, mode, e))
	}
	for _, p := range report.CurvePercentiles {
		row.Percentiles = append(row.Percentiles, report.Point{P: p, US: res.PercentileUS(p)})
	}
	if row.Errors > 0 {
		h.logf("%s on %s: %d errors, first: %s", pr.peer.Name, corpusName, row.Errors, row.FirstError)
	}
	h.out.Rows = append(h.out.Rows, row)
	return row, true
}
