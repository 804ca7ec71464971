package retry

import (
	"errors"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// Budget bounds the retries of many calls together: a token bucket shared
// by every Do and DoValue whose Policy points to it, so that a dependency
// that fails every call is not sent every call's retries as well.
//
// Backoff spreads one call's retries in time; it does not make them fewer.
// Under open load, when new calls keep coming while a dependency is
// overloaded, each brings its retries, and the retries alone can keep the
// dependency down after the cause is gone: a retry storm, the metastable
// failure of Huang et al. (OSDI '22). A Budget earns retries from calls that
// did not fail, as gRPC's retry throttling (gRFC A6) does, so that a
// dependency's occasional faults are retried, and a failing one's are not.
//
//   - It starts holding Burst retries and never holds more.
//   - Earned: a call that ends without a retryable failure (it succeeded,
//     or gave up on an error not worth retrying: [Permanent], or Retryable
//     said no) adds Ratio as it returns. A call that gives up on a retryable
//     failure (the limits, the deadline, the Budget, its context, [GiveUp])
//     adds nothing, and so does a call whose context was done before fn
//     ran. PerSecond, when positive, adds retries by the wall clock, pro
//     rata.
//   - Spent: a retry takes one just before its wait, once every other rule
//     of Do has said yes. With less than one whole retry held, Do gives up
//     at once, the last error kept and [ErrBudget] as the Error's Cause;
//     waiting for one would hold callers in the very overload the Budget is
//     for. No retry is taken for a retry not made, and none is given back
//     when a wait is cut short.
//
// It counts in thousandths of a retry, exactly: Ratio, Burst and PerSecond
// are read to three places, so ten calls at 0.1 earn one whole retry, never
// 0.9999999999999999 of one. Over any interval of length T, the retries it
// allows are at most Burst + PerSecond×T + Ratio×(the calls that earned in
// that interval). With the defaults, a dependency that fails every call
// sees a client's 10 saved retries once, then none until calls succeed
// again. One whose attempts fail at random sees every retry made while the
// share f that fails is small: a call needs f/(1−f) retries on average and
// earns Ratio, and runs of faults need headroom. Measured through httpretry
// (benchmarks/README.md, "The other side of the trade"), the default Ratio
// paid for every retry at f = 5%, but at 10% 98.6% of calls succeeded and
// at 20% 87.1%, where all did without a Budget; a Ratio above 1.5×f/(1−f)
// kept up (0.2 to 10%, 0.5 to 20%, 1 to 30%). Raise Ratio for a dependency
// that fails more than 5% of attempts in normal running: up to 0.5 it cost
// nothing measurable in the storm, where failing calls earn nothing.
//
// The zero Budget is the defaults: Ratio 0.1, Burst 10, no PerSecond,
// chosen by measurement (benchmarks/README.md, "The storm"): with the
// refill by time of Finagle's RetryBudget, 10 a second for each client, a
// fleet's retries add up and kept an overloaded dependency down. A fleet of
// N clients may still send N×Burst retries at once: lower Burst for a very
// large one. A Budget is safe for concurrent use by any number of
// goroutines, and must not be copied after first use. A call that succeeds
// at once adds one atomic load to Do when the Budget is full, and no lock;
// the clock is read only with PerSecond set, by a retry asking for one and
// by Tokens. A Loop does not spend from a Budget.
type Budget struct {
	// Ratio is how much of a retry each call that did not fail earns. Zero
	// means 0.1; below zero (or NaN), none.
	Ratio float64
	// Burst is the most retries held at once, and what a new Budget holds.
	// Zero means 10; below zero (or NaN), none, so no retry is ever made;
	// +Inf, or 2^52 thousandths (about 4.5e12) and more, no bound: a Budget
	// that never refuses (httpretry.NoBudget is one).
	Burst float64
	// PerSecond is how many retries the wall clock earns each second, pro
	// rata. Zero, the default, or below (or NaN): none.
	PerSecond float64

	spent atomic.Int64 // thousandths of a retry below Burst: the zero Budget is full
	mu    sync.Mutex   // for the refill by time: last and part
	last  time.Time    // when the clock last earned, once PerSecond has been read
	part  uint64       // what the clock earned since, short of a thousandth, in 10⁻¹² retry
}

// ErrBudget is the Cause of the Error Do returns when a Budget has no whole
// retry left for the next attempt.
var ErrBudget = errors.New("retry: retry budget exhausted")

// The bounds of a count in thousandths: enough for anything a Budget can
// mean, and far from overflow when added to.
const (
	milliUnit = 1000    // a whole retry
	milliMax  = 1 << 52 // a Burst this large or more never refuses
)

// milli reads x to three places: def for 0, 0 below 0 or for NaN, and at
// most milliMax.
func milli(x float64, def int64) int64 {
	switch {
	case x == 0:
		return def
	case !(x > 0):
		return 0
	}
	return int64(min(math.Round(x*milliUnit), milliMax))
}

// Tokens returns the retries the Budget would allow now, for a gauge: a
// number in [0, Burst], with three decimal places; +Inf for a Budget that
// never refuses.
func (b *Budget) Tokens() float64 {
	burst := milli(b.Burst, 10*milliUnit)
	if burst >= milliMax {
		return math.Inf(1)
	}
	b.refill(burst)
	return float64(max(burst-b.spent.Load(), 0)) / milliUnit // below 0 only if Burst was lowered in use
}

// earn adds Ratio, when the Budget is not full. It is Do's one cost on the
// happy path: an atomic load, when the Budget is full.
func (b *Budget) earn() {
	ratio := milli(b.Ratio, milliUnit/10)
	for {
		spent := b.spent.Load()
		if spent <= 0 || ratio == 0 {
			return
		}
		if b.spent.CompareAndSwap(spent, max(spent-ratio, 0)) {
			return
		}
	}
}

// spend takes one retry, and reports whether there was one.
func (b *Budget) spend() bool {
	burst := milli(b.Burst, 10*milliUnit)
	if burst >= milliMax {
		return true
	}
	b.refill(burst)
	for {
		spent := b.spent.Load()
		if burst-spent < milliUnit {
			return false
		}
		if b.spent.CompareAndSwap(spent, spent+milliUnit) {
			return true
		}
	}
}

// refill adds what the clock earned since it last did, with PerSecond set.
// The part of a thousandth it earned is kept for the next refill, so that
// frequent refills lose nothing to rounding.
func (b *Budget) refill(burst int64) {
	rate := milli(b.PerSecond, 0) // thousandths a second
	if rate == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if b.last.IsZero() { // the first read: a new Budget is full, and has earned nothing yet
		b.last = now
		return
	}
	elapsed := uint64(max(now.Sub(b.last), 0))
	b.last = now
	// rate × elapsed ns, in 10⁻¹² retry, plus the part kept: 128 bits, so
	// that a long idle time cannot wrap; past a full Budget it fills it.
	hi, lo := bits.Mul64(uint64(rate), elapsed)
	lo, carry := bits.Add64(lo, b.part, 0)
	hi += carry
	earned := uint64(burst)
	if hi < uint64(time.Second) {
		var part uint64
		earned, part = bits.Div64(hi, lo, uint64(time.Second))
		b.part = part
	}
	for {
		spent := b.spent.Load()
		if spent <= 0 || b.spent.CompareAndSwap(spent, spent-int64(min(earned, uint64(spent)))) {
			return
		}
	}
}
