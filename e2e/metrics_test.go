package e2e

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

const (
	graftRequestsMetric       = "graft_admission_requests_total"
	webhookDurationKey        = "apiserver_admission_webhook_admission_duration_seconds"
	maxMetricsBody      int64 = 32 << 20
)

func scrape(t *testing.T, c *http.Client, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// Plain text: the format every Prometheus scraper can parse.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
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

// histogram is a cumulative Prometheus histogram: bucket upper bounds and
// the number of observations at or below each.
type histogram struct {
	bounds []float64
	counts []float64
	total  float64
}

// webhookDurations reads the API server's admission-duration histogram for
// the mutating webhook named name, summed over its other labels.
func webhookDurations(t *testing.T, name string) histogram {
	t.Helper()
	c, token := env.cluster.APIServerHTTP()
	mfs := scrape(t, c, env.cluster.APIServerURL()+"/metrics", token)
	mf, ok := mfs[webhookDurationKey]
	if !ok {
		return histogram{}
	}
	byBound := map[float64]float64{}
	var h histogram
	for _, m := range mf.GetMetric() {
		if label(m, "name") != name || label(m, "type") != "admit" {
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			byBound[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
		h.total += float64(m.GetHistogram().GetSampleCount())
	}
	for b := range byBound {
		h.bounds = append(h.bounds, b)
	}
	sort.Float64s(h.bounds)
	for _, b := range h.bounds {
		h.counts = append(h.counts, byBound[b])
	}
	return h
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// minus is h - before: the observations made between two scrapes.
func (h histogram) minus(before histogram) histogram {
	out := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts)), total: h.total - before.total}
	prev := map[float64]float64{}
	for i, b := range before.bounds {
		prev[b] = before.counts[i]
	}
	for i, b := range h.bounds {
		out.counts[i] = h.counts[i] - prev[b]
	}
	return out
}

// quantile estimates the q-quantile by linear interpolation inside the
// bucket that holds it, as Prometheus's histogram_quantile does.
func (h histogram) quantile(q float64) (float64, error) {
	if h.total <= 0 || len(h.bounds) == 0 {
		return 0, fmt.Errorf("no observations")
	}
	rank := q * h.total
	lower, below := 0.0, 0.0
	for i, b := range h.bounds {
		if h.counts[i] >= rank {
			if math.IsInf(b, +1) {
				return lower, nil // beyond the last finite bound: report it
			}
			in := h.counts[i] - below
			if in <= 0 {
				return b, nil
			}
			return lower + (b-lower)*(rank-below)/in, nil
		}
		lower, below = b, h.counts[i]
	}
	return lower, nil
}

func (h histogram) String() string {
	s := ""
	prev := 0.0
	for i, b := range h.bounds {
		if n := h.counts[i] - prev; n > 0 {
			s += fmt.Sprintf(" le=%g:%g", b, n)
		}
		prev = h.counts[i]
	}
	return fmt.Sprintf("%g observations;%s", h.total, s)
}
