// Command loadgen drives one running webhook with AdmissionReviews over
// HTTPS on loopback and prints throughput, latency percentiles and errors.
//
//	loadgen -url https://127.0.0.1:8443/inject -ca ca.crt -corpus small -c 16 -d 10s
//	loadgen -url ... -ca ca.crt -f review.json -mode open -rate 10000 -d 10s
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/bench/load"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// maxFile bounds a request file: the API server sends at most a few MiB.
const maxFile = 8 << 20

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg    load.Config
		mode   string
		caFile string
		name   string
		files  stringList
	)
	fs.StringVar(&cfg.URL, "url", "https://127.0.0.1:8443/inject?timeout=10s", "webhook URL (loopback only)")
	fs.StringVar(&caFile, "ca", "", "CA certificate (PEM) the server's certificate chains to")
	fs.StringVar(&name, "corpus", "", "corpus to send: "+strings.Join(corpus.Names(), ", "))
	fs.Var(&files, "f", "AdmissionReview JSON file to send (repeatable; round-robin)")
	fs.StringVar(&mode, "mode", "closed", "closed (max throughput) or open (fixed rate)")
	fs.IntVar(&cfg.Concurrency, "c", 16, "workers / keep-alive connections")
	fs.Float64Var(&cfg.Rate, "rate", 0, "open-loop requests per second")
	fs.DurationVar(&cfg.Duration, "d", 10*time.Second, "run length")
	fs.Int64Var(&cfg.MaxRequests, "n", 0, "stop after this many requests (0: no limit)")
	fs.DurationVar(&cfg.Warmup, "warmup", time.Second, "warm-up before measuring")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "per-request timeout")
	fs.Int64Var(&cfg.SampleEvery, "sample", 256, "fully check one response in this many")
	cpuProfile := fs.String("cpuprofile", "", "write the generator's CPU profile here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	cfg.Mode = load.Mode(mode)
	if caFile == "" {
		return errors.New("-ca is required")
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("%s: no PEM certificate", caFile)
	}
	cfg.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	var bodies [][]byte
	switch {
	case name != "" && len(files) > 0:
		return errors.New("give -corpus or -f, not both")
	case name != "":
		if !slices.Contains(corpus.Names(), name) {
			return fmt.Errorf("unknown corpus %q", name)
		}
		bodies = append(bodies, corpus.Review(name))
	case len(files) > 0:
		for _, f := range files {
			b, err := readBounded(f)
			if err != nil {
				return err
			}
			bodies = append(bodies, b)
		}
	default:
		return errors.New("give -corpus or -f")
	}
	if cfg.Requests, err = load.ParseRequests(bodies); err != nil {
		return err
	}
	cfg.Progress, cfg.Label = stderr, "loadgen"
	res, err := load.Run(ctx, cfg)
	if err != nil {
		return err
	}
	printResult(stdout, res)
	if res.TotalErrors() > 0 {
		return fmt.Errorf("%d errors, first: %s", res.TotalErrors(), res.FirstError)
	}
	return nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxFile)
	}
	return b, nil
}

func printResult(w io.Writer, r *load.Result) {
	fmt.Fprintf(w, "mode %s, %d workers", r.Mode, r.Concurrency)
	if r.Mode == load.Open {
		fmt.Fprintf(w, ", %.0f req/s scheduled", r.Rate)
	}
	fmt.Fprintf(w, "\nrequests %d in %s: %.0f req/s, mean response %.0f bytes\n", r.Requests, r.Elapsed.Round(time.Millisecond), r.RPS(), r.RespBytes)
	fmt.Fprintf(w, "latency p50 %dµs  p90 %dµs  p99 %dµs  p99.9 %dµs  max %dµs\n",
		r.PercentileUS(50), r.PercentileUS(90), r.PercentileUS(99), r.PercentileUS(99.9), r.Latency.Max())
	fmt.Fprintf(w, "checked %d responses fully, %d with a patch\n", r.Checked, r.Patched)
	kinds := make([]string, 0, len(r.Errors))
	for k := range r.Errors {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Fprintf(w, "errors %d", r.TotalErrors())
	for _, k := range kinds {
		fmt.Fprintf(w, " %s=%d", k, r.Errors[k])
	}
	if r.Unsent > 0 {
		fmt.Fprintf(w, ", unsent %d", r.Unsent)
	}
	fmt.Fprintln(w)
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
