// Command hostile runs graft as deploy/base ships it under hostile
// clients (bench/hostile) and writes hostile-latest.json and
// hostile-latest.md into -out.
//
//	hostile -graft bin/graft -deploy deploy -out bench/results
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/graftdev/graft/bench/hostile"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
	}
	os.Exit(code)
}

// run returns 0 when the run met its targets, 1 when it did not or could
// not run.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	cfg := hostile.Config{Progress: stderr}
	var out string
	fs := flag.NewFlagSet("hostile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Graft, "graft", "bin/graft", "graft binary")
	fs.StringVar(&cfg.DeployDir, "deploy", "deploy", "the deploy/ directory graft is run as")
	fs.StringVar(&cfg.WorkDir, "work", "bench/.cache/hostile", "certificate and graft's log")
	fs.StringVar(&out, "out", "bench/results", "where hostile-latest.json and hostile-latest.md go")
	fs.DurationVar(&cfg.Duration, "d", 60*time.Second, "how long the attack lasts")
	fs.IntVar(&cfg.HeaderOnly, "header-only", 200, "connections sending a head that declares the largest body, and one byte")
	fs.IntVar(&cfg.Idle, "idle", 10000, "idle TLS connections")
	fs.IntVar(&cfg.IdleAddrs, "idle-addrs", 10, "client addresses the idle connections come from")
	fs.IntVar(&cfg.Containers, "containers", 20000, "app containers of the big Pod")
	fs.DurationVar(&cfg.SmallEvery, "small-every", 20*time.Millisecond, "interval of the small reviews")
	fs.DurationVar(&cfg.ProbeEvery, "probe-every", time.Second, "interval of each probe")
	fs.DurationVar(&cfg.Grace, "grace", 50*time.Millisecond, "how far past ?timeout= a review may be answered")
	rss := fs.Int64("rss-target-mib", 256, "peak RSS target")
	if err := fs.Parse(args); err != nil {
		return 1, err
	}
	if fs.NArg() > 0 {
		return 1, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg.RSSTarget = *rss << 20
	for _, dir := range []string{cfg.WorkDir, out} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return 1, err
		}
	}
	res, err := hostile.Run(ctx, cfg)
	if err != nil {
		return 1, err
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return 1, err
	}
	if err := os.WriteFile(filepath.Join(out, "hostile-latest.json"), append(js, '\n'), 0o644); err != nil {
		return 1, err
	}
	if err := os.WriteFile(filepath.Join(out, "hostile-latest.md"), []byte(res.Markdown()), 0o644); err != nil {
		return 1, err
	}
	for _, l := range res.Lines() {
		fmt.Fprintln(stdout, l)
	}
	if !res.Pass {
		return 1, nil
	}
	return 0, nil
}
