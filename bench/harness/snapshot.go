package harness

import (
	"math"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/graftdev/graft/bench/report"
	"github.com/graftdev/graft/internal/proc"
)

// snapshot reads the server's counters right before and right after a
// measured phase: CPU time, peak RSS and allocations, the generator's own
// CPU time, and, if asked, a perf recording.
type snapshot struct {
	pid        int
	client     *http.Client
	metricsURL string
	// perfData and perfReport are set when the run is profiled.
	perfData, perfReport string

	t0, t1             time.Time
	cpu0, cpu1         time.Duration
	gen0, gen1         time.Duration
	m0, m1, m2, rss    float64
	cpuErr, mErr, rErr error
	perf               *perfRecord
	perfErr            error
}

func (s *snapshot) before() {
	if s.perfData != "" {
		s.perf, s.perfErr = startPerf(s.pid, s.perfData)
	}
	// Two scrapes in a row give what a scrape itself allocates.
	s.m0, s.mErr = mallocs(s.client, s.metricsURL)
	if s.mErr == nil {
		s.m1, s.mErr = mallocs(s.client, s.metricsURL)
	}
	_ = resetPeakRSS(s.pid)
	s.cpu0, s.cpuErr = proc.CPUTime(s.pid)
	s.gen0, _ = proc.CPUTime(os.Getpid())
	s.t0 = time.Now()
}

func (s *snapshot) after() {
	s.t1 = time.Now()
	s.gen1, _ = proc.CPUTime(os.Getpid())
	var err error
	if s.cpu1, err = proc.CPUTime(s.pid); s.cpuErr == nil {
		s.cpuErr = err
	}
	if s.mErr == nil {
		s.m2, s.mErr = mallocs(s.client, s.metricsURL)
	}
	var b int64
	b, s.rErr = peakRSS(s.pid)
	s.rss = float64(b) / (1 << 20)
	if s.perf != nil {
		if err := s.perf.stop(s.perfReport); s.perfErr == nil {
			s.perfErr = err
		}
		s.perf = nil
	}
}

// abortPerf stops a recording a failed run left running.
func (s *snapshot) abortPerf() {
	if s.perf != nil {
		_ = s.perf.stop(s.perfReport)
		s.perf = nil
	}
}

// fill writes the figures into row and returns what could not be read.
func (s *snapshot) fill(row *report.Row, requests int64) []error {
	row.AllocsPerReq, row.RSSMiB = -1, s.rss
	if requests > 0 {
		if s.cpuErr == nil {
			row.CPUUSPerReq = float64((s.cpu1 - s.cpu0).Microseconds()) / float64(requests)
		}
		if s.mErr == nil {
			scrape := s.m1 - s.m0
			row.AllocsPerReq = math.Max(0, s.m2-s.m1-scrape) / float64(requests)
		}
	}
	if wall := s.t1.Sub(s.t0); wall > 0 {
		row.GenCPUPct = 100 * (s.gen1 - s.gen0).Seconds() / wall.Seconds()
		row.ServerCPUPct = 100 * (s.cpu1 - s.cpu0).Seconds() / wall.Seconds()
	}
	if s.perfReport != "" && s.perfErr == nil {
		row.Profile = filepath.Base(s.perfReport)
	}
	var errs []error
	for _, e := range []error{s.cpuErr, s.mErr, s.rErr, s.perfErr} {
		if e != nil {
			errs = append(errs, e)
		}
	}
	return errs
}
