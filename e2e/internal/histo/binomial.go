package histo

import "math"

// BinomialTails is P(X < lo) + P(X > hi) for X ~ Binomial(n, p): how
// often a correct random split of n draws falls outside [lo, hi].
func BinomialTails(n int, p float64, lo, hi int) float64 {
	sum := 0.0
	lg, _ := math.Lgamma(float64(n + 1))
	for k := 0; k <= n; k++ {
		if k >= lo && k <= hi {
			continue
		}
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(n - k + 1))
		sum += math.Exp(lg - lk - lnk + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
	}
	return sum
}
