package e2e

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scenario 11: 500 Pod creates from 20 concurrent clients are all
// injected, none failed. Reports the API server's view of graft's latency
// (apiserver_admission_webhook_admission_duration_seconds) and the
// clients' create latency.
func TestBurst(t *testing.T) {
	const (
		pods    = 500
		workers = 20
	)
	ns := optedIn(t, "e2e-burst")
	if err := env.waitInjecting(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	before := webhookDurations(t, graftWebhookName())

	var (
		mu        sync.Mutex
		latencies []time.Duration
		errs      []error
		wg        sync.WaitGroup
	)
	next := make(chan int)
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for i := range next {
				t0 := time.Now()
				_, err := env.client.CoreV1().Pods(ns).Create(t.Context(), simplePod(fmt.Sprintf("burst-%03d", i)), metav1.CreateOptions{})
				d := time.Since(t0)
				mu.Lock()
				latencies = append(latencies, d)
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	for i := range pods {
		next <- i
	}
	close(next)
	wg.Wait()
	wall := time.Since(start)
	if len(errs) > 0 {
		t.Fatalf("%d of %d creates failed; first: %v", len(errs), pods, errs[0])
	}

	list, err := env.client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != pods {
		t.Fatalf("%d Pods stored, want %d", len(list.Items), pods)
	}
	for i := range list.Items {
		if problems := agentProblems(&list.Items[i]); len(problems) > 0 {
			t.Fatalf("Pod %s: %v", list.Items[i].Name, problems)
		}
	}

	h := webhookDurations(t, graftWebhookName()).minus(before)
	if h.total < pods {
		t.Fatalf("the API server recorded %g calls to %s, want at least %d: %s", h.total, graftWebhookName(), pods, h)
	}
	p50, err50 := h.quantile(0.50)
	p99, err99 := h.quantile(0.99)
	if err := errors.Join(err50, err99); err != nil {
		t.Fatal(err)
	}
	slices.Sort(latencies)
	t.Logf("burst: %d creates from %d clients in %s (%.0f/s), all injected", pods, workers, wall.Round(time.Millisecond), float64(pods)/wall.Seconds())
	t.Logf("burst: API server's graft webhook duration p50 %.2f ms, p99 %.2f ms (histogram interpolation; %s)", p50*1e3, p99*1e3, h)
	t.Logf("burst: client create latency p50 %s, p99 %s, max %s",
		pct(latencies, 0.50), pct(latencies, 0.99), latencies[len(latencies)-1].Round(time.Microsecond))
}

func pct(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i].Round(time.Microsecond)
}
