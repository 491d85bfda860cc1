// Package binomial bounds the chance of an event from how often it
// happened in n independent trials: Clopper–Pearson's exact interval,
// found by bisection on the binomial distribution itself, never a normal
// approximation (which says nothing useful at 0 of 40). It is pure
// arithmetic and knows nothing of fencecheck.
package binomial

import "math"

// cdf is P(X ≤ k) for X ~ Binomial(n, p).
func cdf(k, n int, p float64) float64 {
	if k < 0 {
		return 0
	}
	if k >= n {
		return 1
	}
	switch p {
	case 0:
		return 1
	case 1:
		return 0
	}
	lp, lq := math.Log(p), math.Log1p(-p)
	lgn, _ := math.Lgamma(float64(n + 1))
	sum := 0.0
	for i := 0; i <= k; i++ {
		a, _ := math.Lgamma(float64(i + 1))
		b, _ := math.Lgamma(float64(n - i + 1))
		sum += math.Exp(lgn - a - b + float64(i)*lp + float64(n-i)*lq)
	}
	return math.Min(sum, 1)
}

// solve finds p in [0, 1] where f, decreasing in p, crosses target.
func solve(f func(p float64) float64, target float64) float64 {
	lo, hi := 0.0, 1.0
	for range 100 {
		mid := (lo + hi) / 2
		if f(mid) > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// Upper is the one-sided upper confidence bound on the chance of the
// event, at confidence conf (0.95), after k events in n trials: the p at
// which k or fewer events would happen only 1-conf of the time. With k = 0
// it is 1 - (1-conf)^(1/n): 0 of 43 gives 6.7 % at 95 %. n = 0 gives 1:
// no trial, no knowledge.
func Upper(k, n int, conf float64) float64 {
	if n <= 0 || k >= n {
		return 1
	}
	return solve(func(p float64) float64 { return cdf(k, n, p) }, 1-conf)
}

// Lower is the one-sided lower confidence bound: the p at which k or more
// events would happen only 1-conf of the time. 0 when k is 0.
func Lower(k, n int, conf float64) float64 {
	if n <= 0 || k <= 0 {
		return 0
	}
	// P(X ≥ k) = 1 - P(X ≤ k-1) grows with p.
	return solve(func(p float64) float64 { return cdf(k-1, n, p) }, conf)
}

// Interval is the two-sided Clopper–Pearson interval at confidence conf:
// each side holds (1-conf)/2.
func Interval(k, n int, conf float64) (lo, hi float64) {
	side := 1 - (1-conf)/2
	return Lower(k, n, side), Upper(k, n, side)
}
