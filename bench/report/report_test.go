package report

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func curve(scale int64) []Point {
	var pts []Point
	for i, p := range CurvePercentiles {
		pts = append(pts, Point{P: p, US: scale * int64(i+1)})
	}
	return pts
}

func fixture() []Row {
	return []Row{
		{Peer: Graft, Corpus: "small", Mode: "closed", Concurrency: 16, RPS: 32000, P50US: 400, P99US: 900, P999US: 1500, CPUUSPerReq: 30, RSSMiB: 20, AllocsPerReq: 3, ReqBytes: 6300, RespBytes: 1900, Percentiles: curve(10)},
		{Peer: Conventional, Corpus: "small", Mode: "closed", Concurrency: 16, RPS: 4000, P50US: 4000, P99US: 9000, CPUUSPerReq: 250, RSSMiB: 30, AllocsPerReq: 900, Percentiles: curve(100)},
		{Peer: Floor, Corpus: "small", Mode: "closed", Concurrency: 16, RPS: 45000, P50US: 300, P99US: 600, CPUUSPerReq: 22, RSSMiB: 12, AllocsPerReq: -1, Percentiles: curve(8)},
		{Peer: Graft, Corpus: "small", Mode: "open", Concurrency: 64, Rate: 10000, RPS: 10000, P50US: 80, P99US: 2500, Errors: 0, Percentiles: curve(5)},
		{Peer: Graft, Corpus: "large", Mode: "closed", Concurrency: 16, RPS: 9000, P99US: 3000, RSSMiB: 70, Errors: 2, ErrorKinds: map[string]int64{"patch": 2}},
	}
}

func TestTargets(t *testing.T) {
	want := map[string]string{
		"graft closed-loop throughput, small":       "yes",
		"graft / floor throughput, small":           "yes", // 32000/45000 = 0.71
		"graft / conventional throughput, small":    "yes", // 8
		"graft p99 at 10000 req/s open loop, small": "no",  // 2.5 ms
		"graft peak RSS under load":                 "no",  // 70 MiB on large
		"graft closed-loop throughput, large":       "yes",
		"graft, huge corpus":                        "—",
	}
	got := map[string]string{}
	for _, tg := range Targets(fixture()) {
		s := "—"
		if tg.Met != nil {
			s = map[bool]string{true: "yes", false: "no"}[*tg.Met]
		}
		got[tg.Figure] = s
	}
	for fig, w := range want {
		if got[fig] != w {
			t.Errorf("%s: met = %q, want %q (all: %v)", fig, got[fig], w, got)
		}
	}
}

func TestWriteMarkdown(t *testing.T) {
	var b bytes.Buffer
	m := Machine{CPU: "Test CPU", Cores: 2, Kernel: "6.1", GoVersion: "go1.26", Pinning: "Servers pinned.", Date: "2026-11-21"}
	if err := WriteMarkdown(&b, m, fixture(), []string{"graft did not start"}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Test CPU (2 cores)",
		"- graft did not start",
		"## small (6.2 KiB request)",
		"## large",
		"| graft | closed | 16 | — | 32000 | 400 µs |",
		"| graft | open | 64 | 10000 | 10000 | 80 µs |",
		"| floor | closed | 16 | — | 45000 | 300 µs | 0 µs | 600 µs | 0 µs | 22.0 | 0/0 | 12.0 | n/a |",
		"graft/conventional: req/s ×8.00, p99 ×0.10, CPU/req ×0.12",
		"graft/floor: req/s ×0.71",
		"| graft p99 at 10000 req/s open loop, small | <= 2 ms | 2.50 ms at 10000 req/s | **no** |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteJSONAndPlot(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "latest.json")
	if err := WriteJSON(path, fixture()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var objs []map[string]any
	if err := json.Unmarshal(raw, &objs); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"peer", "corpus", "mode", "concurrency", "rate", "rps", "p50_us", "p99_us", "p999_us", "cpu_us_per_req", "rss_mib", "errors"} {
		if _, ok := objs[0][key]; !ok {
			t.Errorf("latest.json objects lack %q", key)
		}
	}
	rows, err := ReadJSON(path)
	if err != nil || len(rows) != len(fixture()) || rows[4].ErrorKinds["patch"] != 2 {
		t.Fatalf("ReadJSON = %d rows, %v", len(rows), err)
	}

	img := filepath.Join(dir, "latency.png")
	if err := WritePlot(img, rows); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width < 400 || cfg.Height < 200 {
		t.Errorf("plot is %dx%d", cfg.Width, cfg.Height)
	}
	if err := WritePlot(filepath.Join(dir, "none.png"), []Row{{Peer: Graft}}); err == nil {
		t.Error("plot without curves succeeded")
	}
}

func TestNines(t *testing.T) {
	for _, tt := range []struct{ p, want float64 }{{0, 0}, {90, 1}, {99, 2}, {99.9, 3}, {100, 6}} {
		if got := nines(tt.p); got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("nines(%v) = %v, want %v", tt.p, got, tt.want)
		}
	}
}
