package load

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds, in microseconds: 1 µs to 60 s at 3 significant digits.
const (
	histMinUS  = 1
	histMaxUS  = 60_000_000
	histDigits = 3
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMinUS, histMaxUS, histDigits) }

// Result is a measured run.
type Result struct {
	Mode        Mode
	Concurrency int
	Rate        float64
	// Requests counts every request sent during the measured phase and
	// answered or failed; OK those that passed the checks.
	Requests int64
	OK       int64
	// Errors counts failed requests by kind (ErrorKind.String()).
	Errors map[string]int64
	// Unsent counts open-loop requests scheduled inside Duration that could
	// not be sent before Duration+Drain: the server fell that far behind.
	Unsent int64
	// Elapsed is from the first send to the last answer.
	Elapsed time.Duration
	// Latency of every answered request, in microseconds. Open loop:
	// measured from the intended send time.
	Latency *hdrhistogram.Histogram
	// Checked counts responses given the full check (preflight and
	// samples); Patched those of them that carried a patch.
	Checked, Patched int64
	// RespBytes is the mean response body size.
	RespBytes float64
	// FirstError describes the first failure seen, for the log.
	FirstError string
}

// TotalErrors sums Errors.
func (r *Result) TotalErrors() int64 {
	var n int64
	for _, v := range r.Errors {
		n += v
	}
	return n
}

// RPS is answered requests per second.
func (r *Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// PercentileUS returns the latency at percentile p (0-100) in microseconds.
func (r *Result) PercentileUS(p float64) int64 {
	if r.Latency == nil || r.Latency.TotalCount() == 0 {
		return 0
	}
	return r.Latency.ValueAtPercentile(p)
}
