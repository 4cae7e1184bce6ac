package e2e

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/graftdev/graft/e2e/internal/histo"
)

const (
	graftRequestsMetric       = "graft_admission_requests_total"
	webhookDurationKey        = "apiserver_admission_webhook_admission_duration_seconds"
	maxMetricsBody      int64 = 32 << 20
)

func scrape(t *testing.T, c *http.Client, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	return scrapeCtx(t.Context(), t, c, url, token)
}

// scrapeCtx is scrape bounded by ctx (cleanups run after t.Context() ends).
func scrapeCtx(ctx context.Context, t *testing.T, c *http.Client, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// Plain text: the format every Prometheus scraper can parse.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	// Callers poll with a client each: its kept-alive connection would
	// count against graft's admin port's per-address bound until the
	// port's idle timeout.
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, maxMetricsBody))
	if err != nil {
		t.Fatalf("parse metrics from %s: %v", url, err)
	}
	return mfs
}

// graftRequests is the sum of graft's admission request counter over all
// its labels: how many reviews graft has answered.
func graftRequests(t *testing.T) float64 {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}
	mfs := scrape(t, c, "http://"+env.cluster.GraftAdminAddr()+"/metrics", "")
	mf, ok := mfs[graftRequestsMetric]
	if !ok {
		t.Fatalf("graft's /metrics has no %s", graftRequestsMetric)
	}
	var sum float64
	for _, m := range mf.GetMetric() {
		sum += m.GetCounter().GetValue()
	}
	return sum
}

// webhookDurations reads the API server's admission-duration histogram for
// the mutating webhook named name, summed over its other labels.
func webhookDurations(t *testing.T, name string) histo.Histogram {
	t.Helper()
	c, token := env.cluster.APIServerHTTP()
	mfs := scrape(t, c, env.cluster.APIServerURL()+"/metrics", token)
	mf, ok := mfs[webhookDurationKey]
	if !ok {
		return histo.Histogram{}
	}
	return histo.FromFamily(mf, func(m *dto.Metric) bool {
		return histo.Label(m, "name") == name && histo.Label(m, "type") == "admit"
	})
}
