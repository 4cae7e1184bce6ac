package histo

import (
	"errors"
	"math"
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

func TestQuantile(t *testing.T) {
	inf := math.Inf(+1)
	h := Histogram{Bounds: []float64{0.005, 0.025, 0.1, inf}, Counts: []float64{50, 90, 100, 100}, Total: 100}
	for _, tc := range []struct {
		name string
		h    Histogram
		q    float64
		want float64
		err  bool
	}{
		{"median inside the first bucket", h, 0.5, 0.005, false},
		{"interpolated in the first bucket", h, 0.25, 0.0025, false},
		{"interpolated in the second bucket", h, 0.7, 0.005 + 0.02*20/40, false},
		{"p99 in the third bucket", h, 0.99, 0.025 + 0.075*9/10, false},
		{"max is the bound that holds it", h, 1, 0.1, false},
		{"in +Inf: the highest finite bound",
			Histogram{Bounds: []float64{1, inf}, Counts: []float64{1, 10}, Total: 10}, 0.5, 1, false},
		{"empty", Histogram{}, 0.5, 0, true},
		{"q out of range", h, 1.5, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.h.Quantile(tc.q)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if math.Abs(got-tc.want) > 1e-12 {
				t.Fatalf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
	if _, err := (Histogram{}).Quantile(0.5); !errors.Is(err, ErrEmpty) {
		t.Fatalf("empty: %v, want ErrEmpty", err)
	}
}

func TestMinus(t *testing.T) {
	before := Histogram{Bounds: []float64{1, 2}, Counts: []float64{3, 4}, Total: 4, Sum: 5}
	after := Histogram{Bounds: []float64{1, 2}, Counts: []float64{5, 10}, Total: 10, Sum: 14}
	d := after.Minus(before)
	if d.Total != 6 || d.Counts[0] != 2 || d.Counts[1] != 6 || d.Sum != 9 {
		t.Fatalf("Minus = %+v", d)
	}
	if m, err := d.Mean(); err != nil || m != 1.5 {
		t.Fatalf("Mean = %v, %v; want 1.5", m, err)
	}
	if p := d.Plus(before); p.Total != after.Total || p.Sum != after.Sum || !slices.Equal(p.Counts, after.Counts) {
		t.Fatalf("Plus = %+v, want %+v", p, after)
	}
	if p := (Histogram{}).Plus(d); p.Total != d.Total || !slices.Equal(p.Bounds, d.Bounds) {
		t.Fatalf("empty Plus = %+v", p)
	}
	if _, err := (Histogram{}).Mean(); !errors.Is(err, ErrEmpty) {
		t.Fatalf("Mean of nothing: %v, want ErrEmpty", err)
	}
	// A series first seen after the first scrape counts in full.
	if d := after.Minus(Histogram{}); d.Total != 10 || d.Counts[1] != 10 {
		t.Fatalf("Minus(empty) = %+v", d)
	}
}

func TestFromFamilySumsSelectedSeries(t *testing.T) {
	series := func(name string, c1, c2 uint64) *dto.Metric {
		return &dto.Metric{
			Label: []*dto.LabelPair{{Name: proto.String("name"), Value: proto.String(name)}},
			Histogram: &dto.Histogram{
				SampleCount: proto.Uint64(c2),
				SampleSum:   proto.Float64(float64(c2) / 2),
				Bucket: []*dto.Bucket{
					{UpperBound: proto.Float64(0.1), CumulativeCount: proto.Uint64(c1)},
					{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(c2)},
				},
			},
		}
	}
	mf := &dto.MetricFamily{Metric: []*dto.Metric{series("a", 1, 2), series("b", 10, 20), series("a", 3, 4)}}
	h := FromFamily(mf, func(m *dto.Metric) bool { return Label(m, "name") == "a" })
	if h.Total != 6 || h.Sum != 3 || len(h.Bounds) != 2 || h.Counts[0] != 4 || h.Counts[1] != 6 {
		t.Fatalf("FromFamily = %+v", h)
	}
	if got := h.String(); got != "6 observations; le=0.1:4 le=1:2" {
		t.Fatalf("String = %q", got)
	}
}

func TestBinomialTails(t *testing.T) {
	for _, tt := range []struct {
		n      int
		p      float64
		lo, hi int
		want   float64
	}{
		// Each tail by hand: P(X=0)+P(X=2) for Binomial(2, 0.5).
		{2, 0.5, 1, 1, 0.5},
		{2, 0.5, 0, 2, 0},
		// The canary's bounds in TestCanaryTag: 2.66e-5 + 1.31e-5.
		{100, 0.1, 1, 24, 3.97e-5},
	} {
		if got := BinomialTails(tt.n, tt.p, tt.lo, tt.hi); math.Abs(got-tt.want) > 1e-7 {
			t.Errorf("BinomialTails(%d, %g, %d, %d) = %.4g, want %.4g", tt.n, tt.p, tt.lo, tt.hi, got, tt.want)
		}
	}
}
