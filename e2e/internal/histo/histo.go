// Package histo reads quantiles out of cumulative Prometheus histograms,
// the way the API server reports webhook latency.
package histo

import (
	"errors"
	"fmt"
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"
)

// Histogram is a cumulative histogram: ascending bucket upper bounds and
// the number of observations at or below each, the total count and the
// sum of the observations.
type Histogram struct {
	Bounds []float64
	Counts []float64
	Total  float64
	Sum    float64
}

// FromFamily sums the histograms of every series in mf that keep accepts.
func FromFamily(mf *dto.MetricFamily, keep func(*dto.Metric) bool) Histogram {
	byBound := map[float64]float64{}
	var h Histogram
	for _, m := range mf.GetMetric() {
		if !keep(m) {
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			byBound[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
		h.Total += float64(m.GetHistogram().GetSampleCount())
		h.Sum += m.GetHistogram().GetSampleSum()
	}
	h.Bounds, h.Counts = sortedBuckets(byBound)
	return h
}

// sortedBuckets lists bucket bounds in ascending order and their counts.
func sortedBuckets(byBound map[float64]float64) (bounds, counts []float64) {
	for b := range byBound {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	for _, b := range bounds {
		counts = append(counts, byBound[b])
	}
	return bounds, counts
}

// Label returns the value of the label name on m, or "".
func Label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// Minus is h - before: what was observed between two scrapes.
func (h Histogram) Minus(before Histogram) Histogram {
	prev := map[float64]float64{}
	for i, b := range before.Bounds {
		prev[b] = before.Counts[i]
	}
	out := Histogram{Bounds: h.Bounds, Counts: make([]float64, len(h.Counts)), Total: h.Total - before.Total, Sum: h.Sum - before.Sum}
	for i, b := range h.Bounds {
		out.Counts[i] = h.Counts[i] - prev[b]
	}
	return out
}

// Plus is h + o: the observations of two separate periods together.
func (h Histogram) Plus(o Histogram) Histogram {
	byBound := map[float64]float64{}
	for i, b := range h.Bounds {
		byBound[b] += h.Counts[i]
	}
	for i, b := range o.Bounds {
		byBound[b] += o.Counts[i]
	}
	out := Histogram{Total: h.Total + o.Total, Sum: h.Sum + o.Sum}
	out.Bounds, out.Counts = sortedBuckets(byBound)
	return out
}

// Mean is the mean observation, exact (from the sum, not the buckets);
// ErrEmpty when there are none.
func (h Histogram) Mean() (float64, error) {
	if h.Total <= 0 {
		return 0, ErrEmpty
	}
	return h.Sum / h.Total, nil
}

// ErrEmpty is returned for a quantile of no observations.
var ErrEmpty = errors.New("histo: no observations")

// Quantile estimates the q-quantile (0 <= q <= 1) by linear interpolation
// inside the bucket that holds it, as Prometheus's histogram_quantile does.
// A quantile that falls in the +Inf bucket is reported as the highest
// finite bound.
func (h Histogram) Quantile(q float64) (float64, error) {
	if q < 0 || q > 1 || math.IsNaN(q) {
		return 0, fmt.Errorf("histo: quantile %v out of [0, 1]", q)
	}
	if h.Total <= 0 || len(h.Bounds) == 0 {
		return 0, ErrEmpty
	}
	rank := q * h.Total
	lower, below := 0.0, 0.0
	for i, b := range h.Bounds {
		if h.Counts[i] >= rank {
			if math.IsInf(b, +1) {
				return lower, nil
			}
			in := h.Counts[i] - below
			if in <= 0 {
				return b, nil
			}
			return lower + (b-lower)*(rank-below)/in, nil
		}
		lower, below = b, h.Counts[i]
	}
	return lower, nil
}

// String lists the non-empty buckets, e.g. "10 observations; le=0.005:7 le=0.025:3".
func (h Histogram) String() string {
	s := fmt.Sprintf("%g observations;", h.Total)
	prev := 0.0
	for i, b := range h.Bounds {
		if n := h.Counts[i] - prev; n > 0 {
			s += fmt.Sprintf(" le=%g:%g", b, n)
		}
		prev = h.Counts[i]
	}
	return s
}
