package retry

import (
	"errors"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// Budget bounds the retries of many calls together, and httpretry's
// hedges with them: a token bucket shared by every Do and DoValue whose
// Policy points to it, so that a dependency that fails every call is not
// sent every call's retries as well.
//
// Backoff spreads one call's retries in time; it does not make them fewer.
// Under open load, when new calls keep coming while a dependency is
// overloaded, each brings its retries, and the retries alone can keep the
// dependency down after the cause is gone: a retry storm, the metastable
// failure of Huang et al. (OSDI '22). A Budget earns retries from calls that
// did not fail, as gRPC's retry throttling (gRFC A6) does, so that a
// dependency's occasional faults are retried, and a failing one's are not.
//
//   - Earned: a call that ends without a retryable failure (it succeeded,
//     or gave up on an error not worth retrying: [Permanent], or Retryable
//     said no) adds Ratio as it returns. A call that gives up on a retryable
//     failure (the limits, the deadline, the Budget, its context, [GiveUp])
//     adds nothing, and so does a call whose context was done before fn
//     ran. PerSecond, when positive, adds retries by the wall clock, pro
//     rata.
//   - Held: it starts holding Burst, and its room is the most of: Burst,
//     fading by e every 10 seconds from the Budget's first use; Ratio ×
//     its recent earning calls, where a call that earned t ago counts
//     e^(−t/10s) of itself (reckoned every 64 calls, and before each
//     retry, the calls between taken as evenly spread), plus PerSecond ×
//     10s; and one retry (or Burst, when less). So the room grows with the traffic that earns it, as
//     Finagle's retry budget lets its deposits expire: a busy client can
//     retry a burst of failures at once, a new one has Burst to start
//     with, and a quiet one, however many its fleet, holds little.
//   - Spent: a retry takes one just before its wait, once every other rule
//     of Do has said yes ([Budget.Allow]). With less than one whole retry
//     held, Do gives up at once, the last error kept and [ErrBudget] as the
//     Error's Cause; waiting for one would hold callers in the very overload
//     the Budget is for. No retry is taken for a retry not made, and none is
//     given back when a wait is cut short. httpretry's hedges take theirs
//     the same way.
//
// It counts in thousandths of a retry, exactly: Ratio, Burst and PerSecond
// are read to three places, so ten calls at 0.1 earn one whole retry, never
// 0.9999999999999999 of one. Over any interval from a to a+T, the retries
// and hedges it allows are at most what it held at a, which is at most its
// room then, at most max(Burst, Ratio × the calls that earned before a +
// PerSecond × 10s); plus Ratio × the calls that earned in the interval,
// plus PerSecond × T. So a dependency that fails every call sees, from a
// new client, Burst retries, and from an older one the retries its last
// few seconds of successes saved (at least one), once, and then none until
// calls succeed again. One whose attempts fail at random sees every retry
// made while the share f that fails is small: a call needs f/(1−f)
// retries on average and earns Ratio, and runs of faults need
// headroom. Measured through httpretry (benchmarks/README.md, "The other
// side of the trade"), the default Ratio paid for every retry at f = 5%,
// but at 10% 98.3% of calls succeeded and at 20% 86.9%, where all did
// without a Budget; a Ratio above 1.5×f/(1−f) kept up (0.2 to 10%, 0.5 to
// 20%, 1 to 30%). Raise Ratio for a dependency that fails more than 5% of
// attempts in normal running, with care: the room grows with Ratio too,
// and in the storm 0.2 still met every target, where 0.5 missed 5 regimes
// of 22 and 1 missed 7.
//
// The zero Budget is the defaults: Ratio 0.1, Burst 10, no PerSecond,
// chosen by measurement (benchmarks/README.md, "The storm" and "A slow
// dependency"): with the refill by time of Finagle's RetryBudget, 10 a
// second for each client, a fleet's retries add up and kept an overloaded
// dependency down; a room of a constant 10 for each client let a fleet of
// 100 quiet clients send 1,000 saved retries into a recovering one, and
// starved the hedges and retries that a fan-out meeting a slow replica
// needs at once. A Budget is safe for concurrent use by any number of
// goroutines, and must not be copied after first use. A call that succeeds
// adds one atomic add to Do and no lock; a retry, a hedge and Tokens read
// the clock and take a lock. A Loop does not spend from a Budget.
type Budget struct {
	// Ratio is how much of a retry each call that did not fail earns. Zero
	// means 0.1; below zero (or NaN), none.
	Ratio float64
	// Burst is what a new Budget holds, and the room it starts with, which
	// fades by e every 10 seconds into the room its earning calls make.
	// Zero means 10; below zero (or NaN), none, so that
	// only recent calls make room; +Inf, or 2^52 thousandths (about 4.5e12)
	// and more, no bound: a Budget that never refuses (httpretry.NoBudget
	// returns one).
	Burst float64
	// PerSecond is how many retries the wall clock earns each second, pro
	// rata, with room for 10 seconds of them. Zero, the default, or below
	// (or NaN): none.
	PerSecond float64

	earned atomic.Uint64 // calls that earned, ever: the happy path's one atomic operation
	mu     sync.Mutex    // for the rest, which a retry reads and writes
	state  budgetState
}

// budgetState is what a Budget holds, reckoned as of last: Tokens reckons
// a copy, so that reading the gauge changes nothing a retry will see.
type budgetState struct {
	held   int64     // thousandths of a retry held, as of last
	seen   uint64    // earned, as of last
	recent float64   // the calls that earned, each fading by e every window since
	fill   float64   // the room a new Budget starts with, Burst, fading alike, in thousandths
	last   time.Time // the last update; zero before the first
	part   uint64    // what the clock earned since, short of a thousandth, in 10⁻¹² retry
}

// window is the time over which a Budget's recent earning calls make room
// for retries: a call counts e^(−age/window) of itself.
const window = 10 * time.Second

// ErrBudget is the Cause of the Error Do returns when a Budget has no whole
// retry left for the next attempt. Its message is "retry: budget
// exhausted", which reads once in the Error's: "retry: giving up after 11
// attempts in 2.1s (retry: budget exhausted): 503 Service Unavailable".
var ErrBudget = errors.New("retry: budget exhausted")

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
// number in [0, its bound], with three decimal places; +Inf for a Budget
// that never refuses. Reading it changes nothing the Budget does after.
func (b *Budget) Tokens() float64 {
	burst := milli(b.Burst, defaultBurst)
	if burst >= milliMax {
		return math.Inf(1)
	}
	b.mu.Lock()
	s := b.state
	b.mu.Unlock()
	s.update(b, burst, time.Now())
	return float64(s.held) / milliUnit
}

// defaultBurst is a zero Burst, in thousandths.
const defaultBurst = 10 * milliUnit

// earn counts a call that did not fail: Do's one cost on the happy path,
// an atomic add. Every 64th call also takes the lock and reads the clock,
// to reckon the room, so that the calls since are known to within 64 when
// they came (the room counts each call by its age).
func (b *Budget) earn() {
	if !(b.Ratio >= 0) { // zero Ratio is the default; below zero, or NaN, earns nothing
		return
	}
	if n := b.earned.Add(1); n == 1 || n%earnEvery == 0 {
		b.mu.Lock()
		b.state.update(b, milli(b.Burst, defaultBurst), time.Now())
		b.mu.Unlock()
	}
}

// earnEvery is how many earning calls may go between two reckonings of the
// room: at 20ns a lock and 40ns a clock read, a call pays about 1ns on
// average, against the 10ns of an atomic add.
const earnEvery = 64

// Allow takes one retry from the Budget, and reports whether it held one
// whole: Do asks it just before each wait, and httpretry before each
// hedge, so that retries and hedges share one bound. With less than one
// whole retry held, it takes nothing and reports false.
func (b *Budget) Allow() bool {
	burst := milli(b.Burst, defaultBurst)
	if burst >= milliMax {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := &b.state
	s.update(b, burst, time.Now())
	if s.held < milliUnit {
		return false
	}
	s.held -= milliUnit
	return true
}

// update adds what the Budget earned since it last did, by calls and by
// the clock, and holds it to its bound: burst, or Ratio × the recent
// earning calls, whichever is more.
func (s *budgetState) update(b *Budget, burst int64, now time.Time) (bound int64) {
	if s.last.IsZero() { // the first: a new Budget holds Burst, and has earned nothing by the clock
		s.held, s.fill, s.last = burst, float64(burst), now
	}
	ratio := milli(b.Ratio, milliUnit/10)
	n := b.earned.Load()
	calls := n - s.seen
	s.seen = n
	if hi, lo := bits.Mul64(calls, uint64(ratio)); hi != 0 || lo >= milliMax {
		s.held = milliMax
	} else {
		s.held = int64(min(uint64(s.held)+lo, milliMax))
	}
	dt := now.Sub(s.last)
	if dt < 0 { // another goroutine reckoned with a later clock
		dt, now = 0, s.last
	}
	s.last = now
	s.refill(b, uint64(max(dt, 0)))
	// The calls since the last update arrived, as far as is known, evenly
	// over dt: they weigh what that spread weighs now.
	switch fade := float64(dt) / float64(window); {
	case fade <= 0:
		s.recent += float64(calls)
	default:
		decay := math.Exp(-fade)
		s.recent = s.recent*decay + float64(calls)*(1-decay)/fade
		s.fill *= decay
	}
	earned := s.recent*float64(ratio) + float64(milli(b.PerSecond, 0))*window.Seconds()
	bound = max(min(burst, milliUnit), int64(s.fill), int64(min(earned, milliMax)))
	s.held = min(s.held, bound)
	return bound
}

// refill adds what the clock earned over elapsed ns, with PerSecond set.
// The part of a thousandth it earned is kept for the next refill, so that
// frequent refills lose nothing to rounding.
func (s *budgetState) refill(b *Budget, elapsed uint64) {
	rate := milli(b.PerSecond, 0) // thousandths a second
	if rate == 0 {
		return
	}
	// rate × elapsed ns, in 10⁻¹² retry, plus the part kept: 128 bits, so
	// that a long idle time cannot wrap; past milliMax it is milliMax.
	hi, lo := bits.Mul64(uint64(rate), elapsed)
	lo, carry := bits.Add64(lo, s.part, 0)
	hi += carry
	earned := uint64(milliMax)
	if hi < uint64(time.Second) {
		var part uint64
		earned, part = bits.Div64(hi, lo, uint64(time.Second))
		s.part = part
	}
	s.held = int64(min(uint64(s.held)+earned, milliMax))
}
