package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/graftdev/graft/e2e/internal/histo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// phaseResult is what one variant showed in one phase: its clients'
// create latencies and the API server's and graft's counters over the
// time its Pods were created (in the sequential phase, the whole phase:
// each variant's own webhook or policy is read by name).
type phaseResult struct {
	lat []time.Duration
	m   snapshot
	// failed counts creates the API server answered with an error.
	failed int
}

// errRefused marks a create the API server answered with an error: on a
// busy machine one may time out, and a run counts and reports those (up
// to maxFailed) rather than throw away the rest. A Pod stored without the
// variant's mutation always ends the run.
var errRefused = errors.New("create refused")

// maxFailed is the share of a variant's creates that may fail.
const maxFailed = 0.01

// create creates pod in v's namespace and checks the stored Pod went
// through v's mutation.
func create(ctx context.Context, client kubernetes.Interface, v variant, pod *corev1.Pod) (time.Duration, error) {
	t0 := time.Now()
	p, err := client.CoreV1().Pods(v.ns).Create(ctx, pod, metav1.CreateOptions{})
	d := time.Since(t0)
	if err != nil {
		return d, fmt.Errorf("%s: %w: %w", v.name, errRefused, err)
	}
	if !v.injected(p) {
		return d, fmt.Errorf("%s: stored Pod %s is not as expected", v.name, p.Name)
	}
	return d, nil
}

// record adds one create's outcome to r, and fails past maxFailed of
// attempts refused, or on any other error.
func (r *phaseResult) record(d time.Duration, err error, attempts int) error {
	switch {
	case err == nil:
		r.lat = append(r.lat, d)
		return nil
	case !errors.Is(err, errRefused):
		return err
	}
	r.failed++
	if float64(r.failed) > maxFailed*float64(attempts)+1 {
		return fmt.Errorf("%d creates failed, the last: %w", r.failed, err)
	}
	return nil
}

// measureSequential creates Pods one at a time in `rounds` rounds of n
// per variant, after warmup unmeasured ones, the variants taking turns
// (and rotating who goes first, so no variant always follows another). It
// returns each round's results, by variant.
func measureSequential(ctx context.Context, b *bench, client kubernetes.Interface, vs []variant, pod *corev1.Pod, warmup, n, rounds int, progress io.Writer) ([][]phaseResult, error) {
	for i := range warmup {
		for k := range vs {
			if _, err := create(ctx, client, vs[(i+k)%len(vs)], pod); err != nil {
				return nil, err
			}
		}
	}
	out := make([][]phaseResult, rounds)
	for round := range rounds {
		res := make([]phaseResult, len(vs))
		before, err := b.scrape(ctx)
		if err != nil {
			return nil, err
		}
		for i := range n {
			for k := range vs {
				j := (i + k) % len(vs)
				d, err := create(ctx, client, vs[j], pod)
				if err := res[j].record(d, err, n); err != nil {
					return nil, err
				}
			}
			if (i+1)%250 == 0 {
				fmt.Fprintf(progress, "podlatency: round %d/%d: %d/%d creates per variant\n", round+1, rounds, i+1, n)
			}
		}
		after, err := b.scrape(ctx)
		if err != nil {
			return nil, err
		}
		for j := range res {
			res[j].m = after.minus(before)
		}
		out[round] = res
	}
	return out, nil
}

// measurePolicies creates n Pods one at a time per variant, one variant
// after the other, in `rounds` rounds (the order rotating), and returns
// for each round and variant the ValidatingAdmissionPolicy plugin's time
// per create of that variant's Pods: the plugin runs for every Pod, so
// only a phase of one variant's creates tells what a policy costs where it
// applies.
func measurePolicies(ctx context.Context, b *bench, client kubernetes.Interface, vs []variant, pod *corev1.Pod, n, rounds int) ([][]histo.Histogram, error) {
	out := make([][]histo.Histogram, rounds)
	for round := range rounds {
		out[round] = make([]histo.Histogram, len(vs))
		for k := range vs {
			i := (round + k) % len(vs)
			before, err := b.scrape(ctx)
			if err != nil {
				return nil, err
			}
			for range n {
				if _, err := create(ctx, client, vs[i], pod); err != nil {
					return nil, err
				}
			}
			after, err := b.scrape(ctx)
			if err != nil {
				return nil, err
			}
			out[round][i] = after.minus(before).vapPlugin
		}
	}
	return out, nil
}

// measureBursts runs `rounds` rounds; in each, every variant gets n creates
// from `clients` concurrent clients, one variant after another, the order
// rotating by round so that no variant always follows another and the
// growing number of stored Pods weighs on all alike. It returns each
// round's results, by variant: a burst's tail swings widely from one
// burst to the next, so its figures are judged per round and then over
// the rounds.
func measureBursts(ctx context.Context, b *bench, client kubernetes.Interface, vs []variant, pod *corev1.Pod, n, clients, rounds int, progress io.Writer) ([][]phaseResult, error) {
	out := make([][]phaseResult, rounds)
	for round := range rounds {
		res := make([]phaseResult, len(vs))
		for k := range vs {
			j := (round + k) % len(vs)
			before, err := b.scrape(ctx)
			if err != nil {
				return nil, err
			}
			if err := burst(ctx, client, vs[j], pod, n, clients, &res[j], n); err != nil {
				return nil, err
			}
			after, err := b.scrape(ctx)
			if err != nil {
				return nil, err
			}
			res[j].m = after.minus(before)
		}
		out[round] = res
		fmt.Fprintf(progress, "podlatency: burst round %d/%d\n", round+1, rounds)
	}
	return out, nil
}

// pooled is one result per variant holding every round's creates.
func pooled(rounds [][]phaseResult) []phaseResult {
	if len(rounds) == 0 {
		return nil
	}
	out := make([]phaseResult, len(rounds[0]))
	for _, res := range rounds {
		for j, r := range res {
			out[j].lat = append(out[j].lat, r.lat...)
			out[j].failed += r.failed
			out[j].m = out[j].m.plus(r.m)
		}
	}
	return out
}

// burst creates n Pods from `clients` concurrent clients into r, whose
// variant has `attempts` creates in the whole phase.
func burst(ctx context.Context, client kubernetes.Interface, v variant, pod *corev1.Pod, n, clients int, r *phaseResult, attempts int) error {
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	next := make(chan struct{})
	for range clients {
		wg.Go(func() {
			for range next {
				d, err := create(ctx, client, v, pod)
				mu.Lock()
				if err := r.record(d, err, attempts); err != nil && first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	for range n {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	return first
}

// profileVariants takes a kube-apiserver CPU profile per variant while
// Pods are created one at a time in its namespace, into
// dir/apiserver-<variant>.pprof: compare two with
// `go tool pprof -top -diff_base apiserver-none.pprof apiserver-graft.pprof`.
func profileVariants(ctx context.Context, b *bench, client kubernetes.Interface, vs []variant, pod *corev1.Pod, dir string, d time.Duration, progress io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	hc, token := b.c.APIServerHTTP()
	hc.Timeout = d + 30*time.Second
	for _, v := range vs {
		fmt.Fprintf(progress, "podlatency: profiling kube-apiserver for %s, %s\n", v.name, d)
		path := filepath.Join(dir, "apiserver-"+v.name+".pprof")
		done := make(chan error, 1)
		go func() { done <- fetchProfile(ctx, hc, token, b.c.APIServerURL(), d, path) }()
		pods := 0
		for end := time.Now().Add(d); time.Now().Before(end); pods++ {
			if _, err := create(ctx, client, v, pod); err != nil {
				<-done
				return err
			}
		}
		if err := <-done; err != nil {
			return err
		}
		fmt.Fprintf(progress, "podlatency: %s: %d Pods, profile in %s\n", v.name, pods, path)
	}
	return nil
}

func fetchProfile(ctx context.Context, hc *http.Client, token, base string, d time.Duration, path string) error {
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, int(d.Seconds()))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("cpu profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, io.LimitReader(resp.Body, 64<<20)); err != nil {
		f.Close()
		return fmt.Errorf("cpu profile: %w", err)
	}
	return f.Close()
}
