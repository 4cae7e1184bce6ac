// Package hostile runs graft as deploy/base ships it (its arguments,
// configuration, templates, memory limit as GOMEMLIMIT, CPU limit as
// GOMAXPROCS) and attacks it as a client inside the cluster could, while
// an API server's client sends reviews and a kubelet probes: connections
// that send a request head declaring the largest body and then nothing,
// thousands of idle TLS connections from several addresses, and a stream
// of a Pod with 20,000 containers asking for every template. It reports
// graft's peak RSS and whether every probe and every review was answered
// in time.
package hostile

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/bench/internal/benchtls"
	"github.com/graftdev/graft/internal/proc"
)

// Config is one run.
type Config struct {
	// Graft is the binary; DeployDir the deploy/ directory; WorkDir holds
	// the certificate and graft's log.
	Graft, DeployDir, WorkDir string
	// Duration is how long the attack lasts.
	Duration time.Duration
	// HeaderOnly connections from one address; Idle connections spread
	// over IdleAddrs addresses.
	HeaderOnly, Idle, IdleAddrs int
	// Containers in the big Pod; SmallEvery, the interval of the stream of
	// ordinary reviews beside it.
	Containers int
	SmallEvery time.Duration
	// ProbeEvery is the interval of each probe.
	ProbeEvery time.Duration
	// Grace is how far past its ?timeout= a review may be answered.
	Grace time.Duration
	// RSSTarget is graft's peak RSS the run must stay under.
	RSSTarget int64
	Progress  io.Writer
}

// Result is what a run measured.
type Result struct {
	Date    string `json:"date"`
	Machine string `json:"machine"`
	// LoadAvg is the machine's load average at the start and at the end
	// (the machine is shared: other work competes for its CPUs).
	LoadAvg  [2]string `json:"load_average"`
	Shipped  Shipped   `json:"shipped"`
	Duration string    `json:"duration"`
	Args     []string  `json:"args"`
	// SmallEvery and ProbeEvery are the intervals of the small reviews and
	// of each probe.
	SmallEvery string `json:"small_every"`
	ProbeEvery string `json:"probe_every"`

	// RSS in bytes: at rest before the attack, the most sampled during it
	// (every 20 ms), and VmHWM, the kernel's peak over graft's life.
	IdleRSS    int64 `json:"idle_rss"`
	SampledMax int64 `json:"sampled_max_rss"`
	PeakRSS    int64 `json:"peak_rss"`
	RSSTarget  int64 `json:"rss_target"`
	// CPU is graft's CPU time over the attack.
	CPUSeconds float64 `json:"cpu_seconds"`

	HeaderOnly AttackResult `json:"header_only"`
	Idle       AttackResult `json:"idle"`
	Big        *Calls       `json:"big_pod"`
	Small      *Calls       `json:"small_pod"`
	Probes     []*Probes    `json:"probes"`
	// Metrics are graft's own counters at the end.
	Metrics map[string]float64 `json:"graft_metrics"`

	Pass     bool     `json:"pass"`
	Failures []string `json:"failures,omitempty"`
}

// AttackResult is one attack's connections.
type AttackResult struct {
	Connections int            `json:"connections"`
	Addresses   []string       `json:"addresses"`
	Declared    int            `json:"declared_bytes,omitempty"`
	Peak        int64          `json:"peak_open"`
	Established int64          `json:"established"`
	Refused     int64          `json:"refused"`
	Closed      int64          `json:"closed_by_graft"`
	Answers     map[string]int `json:"answers,omitempty"`
	// FirstRefusal is what the first refused connection met.
	FirstRefusal string `json:"first_refusal,omitempty"`
}

// Run starts graft, attacks it for cfg.Duration and stops it.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	logf := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "bench-hostile: "+format+"\n", args...)
		}
	}
	// The certificate's files, tls.crt and tls.key, stand for the
	// mounted Secret's.
	_, clientTLS, err := benchtls.Write(cfg.WorkDir)
	if err != nil {
		return nil, err
	}
	shipped, err := ReadShipped(cfg.DeployDir, cfg.WorkDir)
	if err != nil {
		return nil, err
	}
	addrs, err := proc.FreeAddrs(2)
	if err != nil {
		return nil, err
	}
	addr, admin := addrs[0].String(), addrs[1].String()
	args := append(append([]string{}, shipped.Args...), "--addr="+addr, "--admin-addr="+admin)
	child, err := proc.Start(proc.Spec{
		Name: "graft-hostile", Dir: cfg.WorkDir, Bin: cfg.Graft, Args: args, Truncate: true,
		Env: []string{"GOMEMLIMIT=" + strconv.FormatInt(shipped.MemoryLimit, 10), "GOMAXPROCS=" + strconv.Itoa(shipped.CPULimit)},
	})
	if err != nil {
		return nil, err
	}
	defer child.Stop(40 * time.Second)
	adminURL := "http://" + admin
	ready, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = proc.Poll(ready, child, 50*time.Millisecond, func(ctx context.Context) error {
		return proc.GetOK(ctx, &http.Client{Timeout: 2 * time.Second}, adminURL+"/readyz")
	})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("graft did not get ready: %w (log: %s)", err, child.LogPath())
	}
	logf("graft ready (pid %d) with %s; GOMEMLIMIT=%d GOMAXPROCS=%d", child.Pid(), strings.Join(args, " "), shipped.MemoryLimit, shipped.CPULimit)

	res := &Result{
		Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Machine: machine(), Shipped: *shipped,
		Duration: cfg.Duration.String(), Args: args, RSSTarget: cfg.RSSTarget,
		SmallEvery: cfg.SmallEvery.String(), ProbeEvery: cfg.ProbeEvery.String(),
		Big: &Calls{Name: fmt.Sprintf("%d-container Pod, all four templates", cfg.Containers)}, Small: &Calls{Name: "small corpus Pod"},
	}
	res.LoadAvg[0] = loadAvg()
	pid := child.Pid()
	if res.IdleRSS, err = status(pid, "VmRSS"); err != nil {
		return nil, err
	}
	cpu0, err := cpuSeconds(pid)
	if err != nil {
		return nil, err
	}

	attack, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	var wg sync.WaitGroup
	sampled := sampleRSS(attack, &wg, pid)

	// Attackers check no certificate: they only hold connections.
	d := &dialer{addr: addr, tls: &tls.Config{InsecureSkipVerify: true}, slots: make(chan struct{}, 128)}
	var hdr, idle attackerStats
	res.HeaderOnly = AttackResult{Connections: cfg.HeaderOnly, Addresses: []string{"127.0.0.2"}, Declared: shipped.MaxBodyBytes}
	for range cfg.HeaderOnly {
		wg.Go(func() {
			sendHeaderOnly(attack, d, "127.0.0.2", shipped.WebhookPath, shipped.MaxBodyBytes, 100*time.Millisecond, &hdr)
		})
	}
	res.Idle = AttackResult{Connections: cfg.Idle}
	for i := range cfg.IdleAddrs {
		res.Idle.Addresses = append(res.Idle.Addresses, idleAddr(i))
	}
	for i := range cfg.Idle {
		wg.Go(func() { holdIdle(attack, d, idleAddr(i%cfg.IdleAddrs), time.Second, &idle) })
	}

	api := apiServerClient(clientTLS)
	defer api.CloseIdleConnections()
	url := fmt.Sprintf("https://%s%s?timeout=%ds", addr, shipped.WebhookPath, int(shipped.WebhookTimeout/time.Second))
	big := ManyContainersReview(cfg.Containers)
	wg.Go(func() { res.Big.stream(attack, api, url, big, shipped.WebhookTimeout, cfg.Grace, 0) })
	wg.Go(func() {
		res.Small.stream(attack, api, url, corpus.Review(corpus.Small), shipped.WebhookTimeout, cfg.Grace, cfg.SmallEvery)
	})
	for _, path := range []string{"/healthz", "/readyz"} {
		p := &Probes{Path: path}
		res.Probes = append(res.Probes, p)
		wg.Go(func() { p.probe(attack, adminURL+path, shipped.ProbeTimeout, cfg.ProbeEvery) })
	}
	logf("attacking for %s: %d header-only connections, %d idle ones from %d addresses, a %d-byte review back to back",
		cfg.Duration, cfg.HeaderOnly, cfg.Idle, cfg.IdleAddrs, len(big))
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	for done := false; !done; {
		select {
		case <-attack.Done():
			done = true
		case <-progress.C:
			rss, _ := status(pid, "VmRSS")
			logf("RSS %.0f MiB; header-only open %d, idle open %d (refused %d); big reviews %d sent",
				float64(rss)/(1<<20), hdr.open.Load(), idle.open.Load(), idle.refused.Load(), res.Big.sent())
		}
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res.LoadAvg[1] = loadAvg()
	res.SampledMax = sampled.max()
	if res.PeakRSS, err = status(pid, "VmHWM"); err != nil {
		return nil, err
	}
	cpu1, err := cpuSeconds(pid)
	if err != nil {
		return nil, err
	}
	res.CPUSeconds = cpu1 - cpu0
	res.HeaderOnly.fill(&hdr)
	res.Idle.fill(&idle)
	res.Big.finish()
	res.Small.finish()
	if res.Metrics, err = scrape(adminURL + "/metrics"); err != nil {
		return nil, err
	}
	if !child.Running() {
		return nil, fmt.Errorf("graft exited during the attack (log: %s)", child.LogPath())
	}
	res.judge(cfg)
	return res, nil
}

func idleAddr(i int) string { return "127.0.0." + strconv.Itoa(10+i) }

func (a *AttackResult) fill(s *attackerStats) {
	a.Peak, a.Established, a.Refused, a.Closed = s.peak.Load(), s.established.Load(), s.refused.Load(), s.closed.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	a.FirstRefusal = s.firstRefusal
	if len(s.answers) > 0 {
		a.Answers = map[string]int{}
		for code, n := range s.answers {
			a.Answers[strconv.Itoa(code)] = n
		}
	}
}

func (c *Calls) sent() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Sent
}

// judge says whether the run met the targets.
func (r *Result) judge(cfg Config) {
	fail := func(format string, args ...any) { r.Failures = append(r.Failures, fmt.Sprintf(format, args...)) }
	if r.PeakRSS > cfg.RSSTarget {
		fail("peak RSS %.0f MiB over the %.0f MiB target", float64(r.PeakRSS)/(1<<20), float64(cfg.RSSTarget)/(1<<20))
	}
	for _, p := range r.Probes {
		if p.Answered != p.Sent {
			fail("%s: %d of %d probes unanswered (first: %s)", p.Path, p.Sent-p.Answered, p.Sent, p.FirstFailure)
		}
	}
	for _, c := range []*Calls{r.Big, r.Small} {
		switch {
		case c.Sent == 0:
			fail("%s: no review sent", c.Name)
		case c.Failed > 0:
			fail("%s: %d of %d reviews unanswered (first: %s)", c.Name, c.Failed, c.Sent, c.FirstFailure)
		}
		if c.Late > 0 {
			fail("%s: %d of %d reviews answered past ?timeout= + %s (max %.0f ms)", c.Name, c.Late, c.Sent, cfg.Grace, c.MaxMS)
		}
	}
	r.Pass = len(r.Failures) == 0
}

// rssSamples is the most RSS seen.
type rssSamples struct {
	mu sync.Mutex
	m  int64
}

func (s *rssSamples) max() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m
}

func sampleRSS(ctx context.Context, wg *sync.WaitGroup, pid int) *rssSamples {
	s := &rssSamples{}
	wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if v, err := status(pid, "VmRSS"); err == nil {
				s.mu.Lock()
				s.m = max(s.m, v)
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return s
}

// status reads a kB field of /proc/pid/status, in bytes.
func status(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// cpuSeconds is a process's user+system CPU time.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return (ut + st) / 100, nil // USER_HZ
}

// scraped are graft's series the report shows, summed over their labels
// but the ones named.
var scraped = []string{
	"graft_connections_refused_total", "graft_connections_evicted_total", "graft_http_refusals_total",
	"graft_admission_failures_total", "graft_admission_requests_total",
}

func scrape(url string) (map[string]float64, error) {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, name := range scraped {
		for _, m := range fams[name].GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" || l.GetName() == "result" || l.GetName() == "port" {
					labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				}
			}
			key := name
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			v := m.GetCounter().GetValue()
			if v > 0 {
				out[key] += v
			}
		}
	}
	return out, nil
}

// loadAvg is /proc/loadavg's 1, 5 and 15 minute averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func machine() string {
	cpus, model := 0, "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			switch strings.TrimSpace(k) {
			case "processor":
				cpus++
			case "model name":
				model = strings.TrimSpace(v)
			}
		}
	}
	return fmt.Sprintf("%d × %s", cpus, model)
}
