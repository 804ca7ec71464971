package backoff

import (
	"math"
	"math/rand/v2"
	"time"
)

// Every jitter here is a closed interval [lo, hi] of whole nanoseconds,
// computed without randomness (by a *Range helper where it takes more than
// a line), and one uniform draw from it. Value.Bounds reports the intervals
// that Value.Delay and Schedule.Next draw from.

// uniform returns a wait drawn uniformly from [lo, hi], both ends included,
// from r, or from math/rand/v2's package-level source when r is nil: every
// draw of the package is made here, but for delay's written-out one. It
// returns lo, drawing nothing, when hi ≤ lo. hi−lo+1 ≤ 2^63 always fits a
// uint64, which is why the draw is over uint64 and never Int64N(d+1), which
// overflows at d = math.MaxInt64.
func uniform(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	n := uint64(hi-lo) + 1
	if r == nil {
		return lo + time.Duration(rand.Uint64N(n))
	}
	return lo + time.Duration(r.Uint64N(n))
}

// Full returns a wait drawn uniformly from [0, delay], both ends included.
// A delay of zero or less gives 0; delay = math.MaxInt64 is drawn from in
// full. It is safe for concurrent use.
func Full(delay time.Duration) time.Duration {
	return uniform(nil, 0, max(delay, 0))
}

// Equal returns a wait drawn uniformly from [delay/2, delay], both ends
// included, halving with integer division. A delay of zero or less gives 0.
// It is safe for concurrent use.
func Equal(delay time.Duration) time.Duration {
	delay = max(delay, 0)
	return uniform(nil, delay/2, delay)
}

// Widen returns delay plus a random fraction of delay drawn from
// [0, jitter): a wait drawn uniformly from the whole nanoseconds in
// [delay, delay×(1+jitter)). jitter is normalised by [NormalJitter], so it
// lies in [0, 1]; a jitter of 0 returns delay unchanged, and a delay of zero
// or less gives 0.
//
// Near math.MaxInt64 the extra is drawn uniformly from what is left below
// math.MaxInt64 (both ends included) instead: never past it, and never piled
// up on it by a clamp. It is safe for concurrent use.
func Widen(delay time.Duration, jitter float64) time.Duration {
	lo, hi := widenRange(delay, NormalJitter(jitter), maxDuration)
	return uniform(nil, lo, hi)
}

// widenRange returns the interval Widen draws from for a normalised jitter,
// with the extra held to what is left below limit (delay ≤ limit); a delay
// below zero is read as 0.
func widenRange(delay time.Duration, jitter float64, limit time.Duration) (lo, hi time.Duration) {
	delay = max(delay, 0)
	span := float64(delay) * jitter // the extra lies in [0, span)
	// float64(limit-delay) may round up past it; !(… < …) keeps NaN out too.
	if !(span < float64(limit-delay)) {
		return delay, limit
	}
	// The whole nanoseconds in [0, span) are 0 … ⌈span⌉−1 (none but 0 when
	// span is 0), and ⌈span⌉ ≤ limit−delay here.
	return delay, delay + max(time.Duration(math.Ceil(span)), 1) - 1
}

// symmetricRange returns the whole nanoseconds in [g×(1−j), g×(1+j)], for
// 0 ≤ g ≤ limit, j in [0, 1] and g×(1+j) ≤ limit up to rounding: [g−k, g+k]
// with k = ⌊g×j⌋, which is exact because g is whole. The upper end is held
// at limit.
func symmetricRange(g time.Duration, j float64, limit time.Duration) (lo, hi time.Duration) {
	k := g
	// float64(g) may round up past g; !(… < …) keeps k within g.
	if span := float64(g) * j; span < float64(g) {
		k = min(time.Duration(span), g)
	}
	return g - k, g + min(k, limit-g)
}

// Decorrelate returns one step of the AWS "decorrelated jitter" loop: a wait
// drawn uniformly from [base, min(ceiling, 3×previous)], both ends included.
// A previous wait below base is read as base, so a loop's first wait lies in
// [base, 3×base]; 3×previous saturates at math.MaxInt64 instead of wrapping.
// A ceiling of zero or less means none. A base of zero or less gives 0, and a
// ceiling below base gives ceiling. It is safe for concurrent use.
//
// A loop feeds each wait back in as the next previous; see [Schedule], which
// does that for you.
func Decorrelate(base, ceiling, previous time.Duration) time.Duration {
	lo, hi := decorrelateRange(base, ceiling, previous)
	return uniform(nil, lo, hi)
}

func decorrelateRange(base, ceiling, previous time.Duration) (lo, hi time.Duration) {
	if base <= 0 {
		return 0, 0
	}
	limit := ceiling
	if limit <= 0 {
		limit = maxDuration
	}
	previous = max(previous, base)
	hi = maxDuration
	if previous <= maxDuration/3 {
		hi = 3 * previous
	}
	// A ceiling below base holds both ends at it.
	return min(base, limit), min(hi, limit)
}

// AddJitter returns interval plus an extra drawn uniformly from [0, jitter):
// the pacing of periodic work, where the spread should not grow with the
// interval. A ticker waits AddJitter(0, jitter) before its first tick, which
// spreads a fleet that starts together, and AddJitter(interval, jitter)
// between ticks.
//
// An interval below zero is read as 0, and a jitter of zero or less adds
// nothing. The sum never wraps: near math.MaxInt64 the extra is drawn from
// what is left below math.MaxInt64, both ends included. (Saturating the sum
// instead would put most draws exactly on math.MaxInt64; the spread is
// kept, as Widen keeps it.) It is safe for concurrent use.
func AddJitter(interval, jitter time.Duration) time.Duration {
	lo, hi := addJitterRange(interval, jitter)
	return uniform(nil, lo, hi)
}

func addJitterRange(interval, jitter time.Duration) (lo, hi time.Duration) {
	lo = max(interval, 0)
	// [0, jitter) in whole nanoseconds is 0 … jitter−1, and nothing but 0
	// for jitter ≤ 0; the sum is held at math.MaxInt64.
	return lo, lo + min(max(jitter, 1)-1, maxDuration-lo)
}
