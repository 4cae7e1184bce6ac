package inject

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/templates"
)

// benchRevisions serves DefaultConfig as two identical revisions, a
// canary tag splitting them 10/90, and the default profile with
// podRevision in a third tag's revisions: what selection costs, apart from
// the engine, is the only difference between the cases.
func benchRevisions(tb testing.TB) *Revisions {
	tb.Helper()
	set, err := templates.Builtin()
	if err != nil {
		tb.Fatal(err)
	}
	rev := func(name string, podRevision bool) RevisionConfig {
		cfg := DefaultConfig()
		cfg.Revision = name
		p := cfg.Profiles[cfg.DefaultProfile]
		p.PodRevision = podRevision
		cfg.Profiles[cfg.DefaultProfile] = p
		return RevisionConfig{Config: cfg, Templates: set}
	}
	return newTestRevisions(tb, RevisionsConfig{
		Revisions: []RevisionConfig{rev("default", false), rev("next", false), rev("pod", true)},
		Tags: []TagConfig{
			{Name: "canary", Split: []Share{{Revision: "next", Percent: 10}, {Revision: "default", Percent: 90}}},
		},
	})
}

// revisionPaths are the ways a request reaches an engine, cheapest first.
var revisionPaths = []struct {
	name string
	opts Options
}{
	{"revision", Options{Revision: "next"}},      // named directly: no scan
	{"split", Options{Revision: "canary"}},       // a split tag: scan and hash
	{"podRevision", Options{Revision: "pod"}},    // a profile that lets the Pod choose: scan
	{"default", Options{}},                       // no route: the default revision
	{"engine", Options{Revision: "bare engine"}}, // Engine.Admit itself, for the baseline
}

// BenchmarkRevisionsAdmit is BenchmarkAdmit/small through each selection
// path and through the bare Engine, in one run so they compare on one
// machine state (benchstat the engine and split lines).
func BenchmarkRevisionsAdmit(b *testing.B) {
	r := benchRevisions(b)
	body := corpus.Review(corpus.Small)
	for _, p := range revisionPaths {
		admit := r.Admit
		if p.name == "engine" {
			admit = r.Engine("default").Admit
		}
		b.Run(p.name+"/small", func(b *testing.B) {
			dst, _, err := admit(make([]byte, 0, 64<<10), body, p.opts)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				if dst, _, err = admit(dst[:0], body, p.opts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time the process has used. On a shared machine
// wall time per op also counts the time other processes hold the cores,
// which can swamp a difference of tenths of a microsecond; CPU time per op
// (reported as cpu-ns/op beside ns/op) counts only this process's work.
// The benchmark is one goroutine that allocates nothing, so the process's
// CPU time is its own.
func processCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// TestRevisionsZeroAllocs: selection allocates nothing on any path, so
// BenchmarkAdmit's zero holds through the layer.
func TestRevisionsZeroAllocs(t *testing.T) {
	r := benchRevisions(t)
	for _, body := range [][]byte{corpus.Review(corpus.Small), corpus.Review(corpus.Skip), corpus.Review(corpus.Large)} {
		for _, p := range revisionPaths[:4] {
			var dst []byte
			admit := func() {
				var err error
				if dst, _, err = r.Admit(dst[:0], body, p.opts); err != nil {
					t.Fatal(err)
				}
			}
			admit()
			if got := testing.AllocsPerRun(100, admit); got != 0 {
				t.Errorf("%s: %v allocations per admission, want 0", p.name, got)
			}
		}
	}
}

// BenchmarkRouting is the read selection adds to a request, alone: the
// native search for the controller owner (a split tag), and the scan of
// the metadata (a podRevision profile, or a Pod without a controller).
func BenchmarkRouting(b *testing.B) {
	for _, name := range []string{corpus.Small, corpus.Large} {
		body := b2s(corpus.Review(name))
		b.Run("owner/"+name, func(b *testing.B) {
			b.ReportAllocs()
			var rt routing
			cpu := processCPU()
			for b.Loop() {
				if !findOwner(body, &rt) {
					b.Fatal("no owner")
				}
				_ = rt.bucket()
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
		b.Run("scan/"+name, func(b *testing.B) {
			b.ReportAllocs()
			var rt routing
			cpu := processCPU()
			for b.Loop() {
				if err := scanRouting(body, &rt); err != nil {
					b.Fatal(err)
				}
				_ = rt.bucket()
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
