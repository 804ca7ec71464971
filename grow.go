package backoff

import (
	"math"
	"math/bits"
	"time"
)

// maxDuration is the longest time.Duration: about 292 years.
const maxDuration = time.Duration(math.MaxInt64)

// Grow returns base × multiplier^(attempt−1), held at ceiling. It is pure
// and deterministic: no randomness, no state.
//
// An attempt below 1 is read as 1, so a loop that asks before its first
// failure waits base. A base of zero or less gives 0 for every attempt. A
// ceiling of zero or less means no ceiling: growth stops at math.MaxInt64 ns
// instead of wrapping. A ceiling below base gives ceiling from attempt 1.
// The multiplier is normalised by [NormalMultiplier]: zero doubles, exactly
// 1 keeps the wait constant.
//
// Grow is non-decreasing in attempt and O(1): Grow(b, c, m, 1<<60) costs no
// more than Grow(b, c, m, 7). Growth is decided in the float domain before
// any conversion to int64, so no value at or past the bound is ever
// converted, and the result never exceeds the ceiling. When the multiplier is
// a power of two the result is exact to the nanosecond (it is a shift).
// Otherwise it is float64(base) × multiplier^(attempt−1), truncated to whole
// nanoseconds, with the power computed by repeated squaring as [math.Pow]
// does for an integer exponent: multiplications only, so the same bits on
// every architecture. float64 holds every nanosecond exactly only up to
// 2^53 ns (about 104 days); past that a result may differ from the exact
// product by a few nanoseconds.
func Grow(base, ceiling time.Duration, multiplier float64, attempt int) time.Duration {
	if base <= 0 {
		return 0
	}
	limit := ceiling
	if limit <= 0 {
		limit = maxDuration
	}
	if base >= limit {
		return limit
	}
	if attempt <= 1 {
		return base
	}
	n := uint64(attempt - 1) // attempt > 1, so no wrap
	m := NormalMultiplier(multiplier)

	// log2(m) ≥ e + (f−1) for m = 2^e·f with f in [1, 2), and the bits of m
	// above those of 1.0 are exactly (e + f − 1)·2^52. So when
	// n·(e + f − 1) ≥ 63, m^n ≥ 2^63 > limit: the bound is reached, decided
	// in integers, whatever n is. This also catches m = +Inf.
	mb := math.Float64bits(m) - math.Float64bits(1)
	if hi, lo := bits.Mul64(n, mb); hi != 0 || lo >= 63<<52 {
		return limit
	}
	if mb&(1<<52-1) == 0 {
		// A power of two, 2^k: a shift by n·k < 63, exact (k = 0 for a
		// multiplier of exactly 1: a constant wait).
		shift := n * (mb >> 52)
		if base > limit>>shift {
			return limit
		}
		return base << shift
	}

	// Here m^n < 2^(63·log2(e)) < 2^91, so no product overflows.
	f := float64(base) * pow(m, n)
	// float64(limit) may round up past limit; !(f < …) also rejects NaN.
	if !(f < float64(limit)) {
		return limit
	}
	d := time.Duration(f)
	// float64(base) may round down below base; the curve never dips under
	// its own first step, nor passes the ceiling.
	return min(max(d, base), limit)
}

// pow returns m^n by repeated squaring, as math.Pow does for an integer
// exponent: multiplications only, nothing a compiler may fuse into an FMA,
// so the same bits on every architecture.
func pow(m float64, n uint64) float64 {
	p := 1.0
	for ; n != 0; n >>= 1 {
		if n&1 != 0 {
			p *= m
		}
		m *= m
	}
	return p
}

// NormalMultiplier returns the multiplier that [Grow] and [Value] use in
// place of multiplier. Below 1, or NaN, it is 2, so the zero value doubles;
// exactly 1 stays 1, a constant wait; anything above 1, +Inf included, is
// unchanged (+Inf reaches the ceiling at attempt 2).
func NormalMultiplier(multiplier float64) float64 {
	if !(multiplier >= 1) { // NaN falls here too
		return 2
	}
	return multiplier
}

// NormalJitter returns jitter held in [0, 1]: NaN gives 0, then values below
// 0 give 0 and values above 1 give 1. (NaN is resolved first because Go's
// min and max propagate it.)
func NormalJitter(jitter float64) float64 {
	if !(jitter > 0) { // NaN, −0 and negatives
		return 0
	}
	return min(jitter, 1)
}
