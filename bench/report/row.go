// Package report turns load-test measurements into bench/results:
// latest.json (one object per run), latest.md (a table per corpus with
// ratios against the peers and the targets) and a latency
// percentile plot.
package report

import (
	"encoding/json"
	"fmt"
	"os"
)

// Row is one measured run of one peer on one corpus.
type Row struct {
	Peer        string  `json:"peer"`
	Corpus      string  `json:"corpus"`
	Mode        string  `json:"mode"` // closed or open
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate"` // open loop: scheduled req/s; 0 for closed
	Requests    int64   `json:"requests"`
	DurationS   float64 `json:"duration_s"`
	RPS         float64 `json:"rps"`
	P50US       int64   `json:"p50_us"`
	P90US       int64   `json:"p90_us"`
	P99US       int64   `json:"p99_us"`
	P999US      int64   `json:"p999_us"`
	MaxUS       int64   `json:"max_us"`
	// CPUUSPerReq is the server's user+system CPU time over the run divided
	// by the requests answered, from /proc/<pid>/stat.
	CPUUSPerReq float64 `json:"cpu_us_per_req"`
	// RSSMiB is the server's peak resident set (VmHWM) during the run.
	RSSMiB float64 `json:"rss_mib"`
	// AllocsPerReq is the server's heap allocations per request from its
	// go_memstats_mallocs_total; -1 when the server does not expose it.
	AllocsPerReq float64          `json:"allocs_per_req"`
	Errors       int64            `json:"errors"`
	ErrorKinds   map[string]int64 `json:"error_kinds,omitempty"`
	FirstError   string           `json:"first_error,omitempty"`
	// Unsent: open-loop requests scheduled but never sent (server too slow).
	Unsent int64 `json:"unsent"`
	// Checked responses got the full check; Patched of them carried a patch.
	Checked   int64   `json:"checked"`
	Patched   int64   `json:"patched"`
	RespBytes float64 `json:"resp_bytes"`
	ReqBytes  int     `json:"req_bytes"`
	// ServerCPUPct and GenCPUPct are the server's and the load generator's
	// CPU use over the run (100 = one core busy): a generator near 100 means
	// the figures are the generator's limit, not the server's.
	ServerCPUPct float64 `json:"server_cpu_pct"`
	GenCPUPct    float64 `json:"gen_cpu_pct"`
	// Profile names the perf flat profile of the server over the run, if taken.
	Profile string `json:"profile,omitempty"`
	// Percentiles is the latency curve for the plot.
	Percentiles []Point `json:"percentiles,omitempty"`
}

// Point is the latency at a percentile.
type Point struct {
	P  float64 `json:"p"`
	US int64   `json:"us"`
}

// CurvePercentiles are where the latency curve is sampled.
var CurvePercentiles = []float64{0, 10, 20, 30, 40, 50, 60, 70, 75, 80, 85, 90, 92.5, 95, 96, 97, 98, 99, 99.5, 99.7, 99.9, 99.95, 99.97, 99.99, 99.995, 99.999}

// WriteJSON writes rows as an indented JSON array.
func WriteJSON(path string, rows []Row) error {
	if rows == nil {
		rows = []Row{}
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// ReadJSON reads rows written by WriteJSON.
func ReadJSON(path string) ([]Row, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var rows []Row
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("report: %s: %w", path, err)
	}
	return rows, nil
}
