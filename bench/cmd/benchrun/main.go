// Command benchrun runs graft's load tests: graft, the conventional
// injector and the transport floor on the same corpora with the same
// generator, servers on CPU 0 and the generator on CPU 1, and writes
// latest.json, latest.md and latency.png into -out.
//
//	benchrun -graft bin/graft -conventional bench/.cache/bin/conventional -floor bench/.cache/bin/floor
//	benchrun -quick ...   # about 30 seconds
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/bench/harness"
	"github.com/graftdev/graft/bench/report"
)

// pinnedEnv marks the re-executed generator already bound to CPU 1.
const pinnedEnv = "GRAFT_BENCH_PINNED"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}

type options struct {
	graft, graftArgs, conventional, floor string
	peers, corpora, open                  string
	concurrency, openConcurrency          int
	duration, openDuration, warmup        time.Duration
	quick, pin                            bool
	out, work, perf                       string
}

func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("benchrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.graft, "graft", "bin/graft", "graft binary (started as `graft serve`)")
	fs.StringVar(&o.graftArgs, "graft-args", "", "extra arguments for graft serve, space-separated")
	fs.StringVar(&o.conventional, "conventional", "bench/.cache/bin/conventional", "conventional peer binary")
	fs.StringVar(&o.floor, "floor", "bench/.cache/bin/floor", "floor peer binary")
	fs.StringVar(&o.peers, "peers", "graft,conventional,floor", "peers to measure, in order (floor last)")
	fs.StringVar(&o.corpora, "corpora", strings.Join(corpus.Names(), ","), "corpora to run closed-loop")
	fs.StringVar(&o.open, "open", "small=10000", "open-loop runs: corpus=rate,...")
	fs.IntVar(&o.concurrency, "c", 16, "closed-loop workers (keep-alive connections)")
	fs.IntVar(&o.openConcurrency, "open-c", 64, "open-loop connections (bounds requests in flight)")
	fs.DurationVar(&o.duration, "d", 5*time.Second, "closed-loop run length")
	fs.DurationVar(&o.openDuration, "open-d", 5*time.Second, "open-loop run length")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "warm-up before each run")
	fs.BoolVar(&o.quick, "quick", false, "about 30 s: small and large corpora, 2 s runs")
	fs.BoolVar(&o.pin, "pin", true, "servers on CPU 0 with GOMAXPROCS=1, generator on CPU 1")
	fs.StringVar(&o.out, "out", "bench/results", "where latest.json, latest.md and latency.png go")
	fs.StringVar(&o.work, "work", "bench/.cache/run", "certificates and server logs")
	fs.StringVar(&o.perf, "perf", "", "peers to profile with Linux perf during each run (e.g. graft,floor); needs binaries with symbols")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["corpora"] {
			o.corpora = corpus.Small + "," + corpus.Large
		}
		if !set["d"] {
			o.duration = 2 * time.Second
		}
		if !set["open-d"] {
			o.openDuration = 2 * time.Second
		}
		if !set["warmup"] {
			o.warmup = 300 * time.Millisecond
		}
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	pin := o.pin && harness.MachineCPUs() >= 2
	if pin && os.Getenv(pinnedEnv) == "" {
		return reexecOnCPU1(args)
	}
	plan, err := o.plan(pin)
	if err != nil {
		return err
	}
	plan.Progress = stderr
	if err := os.MkdirAll(o.work, 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	outcome, err := harness.Run(ctx, plan)
	if err != nil {
		return err
	}
	if len(outcome.Rows) == 0 {
		for _, n := range outcome.Notes {
			fmt.Fprintln(stderr, "benchrun:", n)
		}
		return errors.New("nothing was measured")
	}
	return write(o.out, harness.Describe(pin), outcome, stdout)
}

func (o *options) plan(pin bool) (harness.Plan, error) {
	p := harness.Plan{
		Corpora: splitList(o.corpora), Concurrency: o.concurrency, Duration: o.duration,
		OpenRates: map[string]float64{}, OpenConcurrency: o.openConcurrency, OpenDuration: o.openDuration,
		Warmup: o.warmup, Pin: pin, WorkDir: o.work,
		PerfPeers: splitList(o.perf), PerfDir: o.out,
	}
	for _, kv := range splitList(o.open) {
		name, rate, ok := strings.Cut(kv, "=")
		r, err := strconv.ParseFloat(rate, 64)
		if !ok || err != nil || r <= 0 {
			return p, fmt.Errorf("-open %q: want corpus=rate", kv)
		}
		p.OpenRates[name] = r
	}
	for _, name := range splitList(o.peers) {
		switch name {
		case report.Graft:
			// Next to no drain (0 means the default): the harness stops a
			// peer between runs, with no endpoint to take it out of, and
			// waits 5 s for it to exit.
			p.Peers = append(p.Peers, harness.Peer{Name: name, Bin: o.graft, Args: []string{"serve", "--drain-delay=1ms"}, ExtraArgs: strings.Fields(o.graftArgs)})
		case report.Conventional:
			p.Peers = append(p.Peers, harness.Peer{Name: name, Bin: o.conventional})
		case report.Floor:
			p.Peers = append(p.Peers, harness.Peer{Name: name, Bin: o.floor})
		default:
			return p, fmt.Errorf("-peers: unknown peer %q", name)
		}
	}
	return p, nil
}

func write(dir string, m report.Machine, oc *harness.Outcome, stdout io.Writer) error {
	if err := report.WriteJSON(filepath.Join(dir, "latest.json"), oc.Rows); err != nil {
		return err
	}
	var notes []string
	plot := filepath.Join(dir, "latency.png")
	if err := report.WritePlot(plot, oc.Rows); err != nil {
		notes = append(notes, err.Error())
	}
	notes = append(notes, oc.Notes...)
	f, err := os.Create(filepath.Join(dir, "latest.md"))
	if err != nil {
		return err
	}
	if err := report.WriteMarkdown(io.MultiWriter(f, stdout), m, oc.Rows, notes); err != nil {
		f.Close()
		return err
	}
	fmt.Fprintf(f, "![latency percentiles](latency.png)\n")
	return f.Close()
}

// reexecOnCPU1 replaces this process with itself bound to CPU 1, so the
// generator never competes with the servers on CPU 0.
func reexecOnCPU1(args []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return fmt.Errorf("pinning needs taskset (util-linux), or pass -pin=false: %w", err)
	}
	argv := append([]string{"taskset", "-c", "1", self}, args...)
	return syscall.Exec(taskset, argv, append(os.Environ(), pinnedEnv+"=1"))
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
