// Command podlatency measures what adding graft's agent costs a Pod create
// through a real kube-apiserver (and etcd) on loopback: with no mutation,
// with graft, with the conventional webhook (bench/peers/conventional), and
// with a MutatingAdmissionPolicy (admissionregistration.k8s.io/v1,
// JSONPatch) that adds the same container, and with the policies `graft
// export` writes for the same profile. Pods are created one at a time,
// the variants taking turns, so drift in the machine hits all alike; it
// reports p50/p90/p99 and each variant's overhead over none. Run it with
// `make bench-e2e`.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/e2e/internal/cluster"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "podlatency:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("podlatency", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 1000, "Pods created per variant (measured)")
	warmup := fs.Int("warmup", 50, "Pods created per variant before measuring")
	out := fs.String("out", "../bench/results", "where e2e-latest.md and e2e-latest.json go")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n <= 0 || *warmup < 0 {
		return errors.New("-n must be > 0 and -warmup >= 0")
	}
	conventionalBin := os.Getenv("GRAFT_BENCH_CONVENTIONAL")
	if conventionalBin == "" {
		return errors.New("GRAFT_BENCH_CONVENTIONAL is not set: run with `make bench-e2e`")
	}
	opts, err := cluster.OptionsFromEnv()
	if err != nil {
		return err
	}
	if opts.Dir, err = os.MkdirTemp("", "graft-podlatency-"); err != nil {
		return err
	}
	defer func() {
		if err == nil {
			os.RemoveAll(opts.Dir)
		} else {
			fmt.Fprintf(stderr, "podlatency: logs kept in %s\n", opts.Dir)
		}
	}()

	fmt.Fprintln(stderr, "podlatency: starting etcd, kube-apiserver and graft on 127.0.0.1")
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	c, err := cluster.Start(startCtx, opts)
	defer func() {
		if err != nil && c != nil {
			fmt.Fprint(stderr, c.Logs(8<<10))
		}
		if c != nil {
			if serr := c.Stop(); serr != nil && err == nil {
				err = serr
			}
		}
	}()
	if err != nil {
		return err
	}
	shipped, err := cluster.LoadShipped("..")
	if err != nil {
		return err
	}
	pod, err := corpusPod()
	if err != nil {
		return err
	}
	// The corpus Pod repeats port names on purpose; its warnings are noise here.
	cfg := c.RESTConfig()
	cfg.WarningHandler = rest.NoWarnings{}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}

	sidecar, _, err := defaultPatch()
	if err != nil {
		return err
	}
	none := variant{name: "none", ns: "lat-none", injected: func(p *corev1.Pod) bool { return !injectedBy(sidecar)(p) }}
	if err := c.CreateNamespace(ctx, none.ns, nil); err != nil {
		return err
	}
	graft, err := setupGraft(ctx, c, shipped, sidecar)
	if err != nil {
		return err
	}
	conv, convProc, err := setupConventional(ctx, c, shipped, conventionalBin, opts.Dir, sidecar)
	if convProc != nil {
		defer stopConventional(convProc)
	}
	if err != nil {
		return err
	}
	policy, err := setupPolicy(ctx, c)
	if err != nil {
		return err
	}
	exported, err := setupExport(ctx, c, sidecar)
	if err != nil {
		return err
	}
	variants := []variant{none, graft, conv, policy, exported}
	for _, v := range variants {
		if err := waitInjecting(ctx, client, v, pod); err != nil {
			return err
		}
	}

	fmt.Fprintf(stderr, "podlatency: %d warm-up and %d measured Pod creates per variant\n", *warmup, *n)
	lat := make([][]time.Duration, len(variants))
	for i := range *warmup + *n {
		for k := range variants {
			// Rotate who goes first so no variant always follows another.
			j := (i + k) % len(variants)
			v := variants[j]
			t0 := time.Now()
			p, err := client.CoreV1().Pods(v.ns).Create(ctx, pod, metav1.CreateOptions{})
			d := time.Since(t0)
			if err != nil {
				return fmt.Errorf("%s: create Pod: %w", v.name, err)
			}
			if !v.injected(p) {
				return fmt.Errorf("%s: stored Pod %s is not as expected", v.name, p.Name)
			}
			if i >= *warmup {
				lat[j] = append(lat[j], d)
			}
		}
		if (i+1)%50 == 0 {
			fmt.Fprintf(stderr, "podlatency: %d/%d rounds\n", i+1, *warmup+*n)
		}
	}
	rows := summarize(variants, lat)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	return writeReport(*out, rows, stdout)
}

// corpusPod is the load tests' small corpus Pod, to be created by name.
func corpusPod() (*corev1.Pod, error) {
	var rev struct {
		Request struct {
			Object json.RawMessage `json:"object"`
		} `json:"request"`
	}
	if err := json.Unmarshal(corpus.Review(corpus.Small), &rev); err != nil {
		return nil, err
	}
	var p corev1.Pod
	if err := json.Unmarshal(rev.Request.Object, &p); err != nil {
		return nil, err
	}
	p.Namespace = ""
	p.OwnerReferences = nil
	return &p, nil
}

// Row is one variant's Pod create latency, in microseconds.
type Row struct {
	Variant string `json:"variant"`
	Pods    int    `json:"pods"`
	P50US   int64  `json:"p50_us"`
	P90US   int64  `json:"p90_us"`
	P99US   int64  `json:"p99_us"`
	MeanUS  int64  `json:"mean_us"`
	// Overheads over the "none" variant.
	P50OverUS int64 `json:"p50_overhead_us"`
	P99OverUS int64 `json:"p99_overhead_us"`
}

func summarize(vs []variant, lat [][]time.Duration) []Row {
	rows := make([]Row, len(vs))
	for i, v := range vs {
		d := slices.Clone(lat[i])
		slices.Sort(d)
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		rows[i] = Row{Variant: v.name, Pods: len(d),
			P50US: pct(d, 50), P90US: pct(d, 90), P99US: pct(d, 99)}
		if len(d) > 0 {
			rows[i].MeanUS = (sum / time.Duration(len(d))).Microseconds()
		}
	}
	for i := range rows {
		rows[i].P50OverUS = rows[i].P50US - rows[0].P50US
		rows[i].P99OverUS = rows[i].P99US - rows[0].P99US
	}
	return rows
}

// pct is the nearest-rank percentile of sorted d, in microseconds.
func pct(d []time.Duration, p float64) int64 {
	if len(d) == 0 {
		return 0
	}
	i := int(float64(len(d))*p/100+0.999999) - 1
	return d[min(max(i, 0), len(d)-1)].Microseconds()
}

func writeReport(dir string, rows []Row, stdout io.Writer) error {
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "e2e-latest.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "## Pod create latency through kube-apiserver (%s)\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	md.WriteString("One client creating the small corpus Pod one at a time; etcd, kube-apiserver and the webhooks on loopback, unpinned. " +
		"`policy` is a MutatingAdmissionPolicy (JSONPatch) adding the same init containers and volumes as graft's default profile; graft and conventional also add annotations and any env and mounts the templates give app containers; " +
		"`graft-export` is the policies `graft export` writes for that profile (the same Pod as graft, and the parameter and final-state checks).\n\n")
	md.WriteString("| variant | pods | p50 | p90 | p99 | mean | p50 overhead | p99 overhead |\n|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rows {
		fmt.Fprintf(&md, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", r.Variant, r.Pods,
			ms(r.P50US), ms(r.P90US), ms(r.P99US), ms(r.MeanUS), ms(r.P50OverUS), ms(r.P99OverUS))
	}
	if err := os.WriteFile(filepath.Join(dir, "e2e-latest.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	_, err = io.WriteString(stdout, md.String())
	return err
}

func ms(us int64) string { return fmt.Sprintf("%.2f ms", float64(us)/1000) }
