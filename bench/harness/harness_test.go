package harness

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/bench/report"
)

// buildPeers compiles the conventional and floor peers for a real run.
func buildPeers(t *testing.T) (conventional, floor string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+"/", "../peers/conventional", "../peers/floor")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build peers: %v\n%s", err, out)
	}
	return filepath.Join(dir, "conventional"), filepath.Join(dir, "floor")
}

func TestRunMeasuresRealPeers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the peers")
	}
	conventional, floor := buildPeers(t)
	var progress strings.Builder
	plan := Plan{
		Peers: []Peer{
			{Name: report.Conventional, Bin: conventional},
			{Name: "missing", Bin: filepath.Join(t.TempDir(), "nothing-here")},
			{Name: report.Floor, Bin: floor},
		},
		Corpora:     []string{corpus.Small, corpus.Skip},
		Concurrency: 2, Duration: 300 * time.Millisecond,
		OpenRates: map[string]float64{corpus.Small: 200}, OpenConcurrency: 4, OpenDuration: 300 * time.Millisecond,
		Warmup: 50 * time.Millisecond, WorkDir: t.TempDir(), Progress: &progress,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	oc, err := Run(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ peer, corpus, mode string }
	rows := map[key]report.Row{}
	for _, r := range oc.Rows {
		rows[key{r.Peer, r.Corpus, r.Mode}] = r
	}
	if len(oc.Rows) != 6 {
		t.Fatalf("%d rows, want 6 (2 peers x (2 closed + 1 open)): %+v", len(oc.Rows), oc.Rows)
	}
	for k, r := range rows {
		if r.Requests == 0 || r.Errors != 0 || r.RPS <= 0 {
			t.Errorf("%v: requests %d, errors %d (%s), rps %.0f", k, r.Requests, r.Errors, r.FirstError, r.RPS)
		}
		if r.RSSMiB <= 0 || r.CPUUSPerReq < 0 || r.AllocsPerReq < 0 {
			t.Errorf("%v: rss %.1f MiB, cpu %.1f µs/req, allocs %.1f/req: want all measured", k, r.RSSMiB, r.CPUUSPerReq, r.AllocsPerReq)
		}
		if r.P50US <= 0 || r.P99US < r.P50US || len(r.Percentiles) != len(report.CurvePercentiles) {
			t.Errorf("%v: p50 %d p99 %d, %d curve points", k, r.P50US, r.P99US, len(r.Percentiles))
		}
	}
	// The conventional peer decodes the Pod and allocates per request; the
	// skip corpus gets no patch from it.
	if c := rows[key{report.Conventional, corpus.Small, "closed"}]; c.AllocsPerReq < 100 || c.Patched == 0 {
		t.Errorf("conventional small: %.0f allocs/req, %d patched", c.AllocsPerReq, c.Patched)
	}
	if c := rows[key{report.Conventional, corpus.Skip, "closed"}]; c.Patched != 0 {
		t.Errorf("conventional skip: %d patched, want 0", c.Patched)
	}
	// The floor pads its answer to the conventional peer's size.
	c, f := rows[key{report.Conventional, corpus.Small, "closed"}], rows[key{report.Floor, corpus.Small, "closed"}]
	if math.Abs(c.RespBytes-f.RespBytes) > 4 {
		t.Errorf("floor answers %.0f bytes, conventional %.0f: want the same size", f.RespBytes, c.RespBytes)
	}
	if o := rows[key{report.Floor, corpus.Small, "open"}]; o.Rate != 200 || o.Mode != "open" {
		t.Errorf("open row: %+v", o)
	}
	if len(oc.Notes) != 1 || !strings.Contains(oc.Notes[0], "missing was not measured") {
		t.Errorf("notes = %q, want one saying the missing peer was not measured", oc.Notes)
	}
	if !strings.Contains(progress.String(), "starting floor") {
		t.Errorf("progress lacks the harness's lines: %q", progress.String())
	}
}

func TestRunRefusesBadPlans(t *testing.T) {
	peer := []Peer{{Name: "x", Bin: "/bin/true"}}
	tests := []struct {
		name string
		plan Plan
		want string
	}{
		{"empty", Plan{}, "nothing to run"},
		{"unknown corpus", Plan{Peers: peer, Corpora: []string{"tiny"}}, "unknown corpus"},
		{"open rate off corpus", Plan{Peers: peer, Corpora: []string{corpus.Small}, OpenRates: map[string]float64{corpus.Large: 5}}, "not among the corpora"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.plan.WorkDir = t.TempDir()
			_, err := Run(context.Background(), tt.plan)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestProcReaders(t *testing.T) {
	if rss, err := peakRSS(os.Getpid()); err != nil || rss <= 0 {
		t.Errorf("peakRSS = %d, %v", rss, err)
	}
}

func TestParseMallocs(t *testing.T) {
	tests := []struct {
		page string
		want float64
		ok   bool
	}{
		{"# HELP go_memstats_mallocs_total x\n# TYPE go_memstats_mallocs_total counter\ngo_memstats_mallocs_total 1.234567e+06\n", 1234567, true},
		{"go_memstats_mallocs_total_other 5\ngo_memstats_mallocs_total 42\n", 42, true},
		{"go_goroutines 7\n", 0, false},
		{"go_memstats_mallocs_total many\n", 0, false},
	}
	for _, tt := range tests {
		got, err := parseMallocs(strings.NewReader(tt.page))
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseMallocs(%q) = %v, %v; want %v, ok %v", tt.page, got, err, tt.want, tt.ok)
		}
	}
}

// With perf available, a profiled run leaves a flat profile beside the results.
func TestRunProfilesWithPerf(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the peers")
	}
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf is not installed")
	}
	_, floor := buildPeers(t)
	out := t.TempDir()
	oc, err := Run(context.Background(), Plan{
		Peers:   []Peer{{Name: report.Floor, Bin: floor}},
		Corpora: []string{corpus.Small}, Concurrency: 2, Duration: 500 * time.Millisecond,
		WorkDir: t.TempDir(), PerfPeers: []string{report.Floor}, PerfDir: out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(oc.Rows) != 1 || oc.Rows[0].Profile != "profile-floor-small-closed.txt" {
		t.Fatalf("rows %+v, notes %q", oc.Rows, oc.Notes)
	}
	b, err := os.ReadFile(filepath.Join(out, oc.Rows[0].Profile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "Overhead") {
		t.Errorf("profile does not look like perf report output:\n%.500s", b)
	}
}

func TestDescribe(t *testing.T) {
	m := Describe(true)
	if m.Cores < 1 || m.Kernel == "unknown" || m.GoVersion == "" {
		t.Errorf("machine %+v", m)
	}
	if !strings.Contains(m.Pinning, "generator ran on CPU "+selfCPUs()) {
		t.Errorf("pinning %q does not name the generator's CPUs %q", m.Pinning, selfCPUs())
	}
	if strings.Contains(Describe(false).Pinning, "pinned to CPU 0") {
		t.Error("unpinned machine described as pinned")
	}
}
