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
// that fails every call is not sent every call's retries as well, while
// one that fails some calls at random has them all retried.
//
// Backoff spreads one call's retries in time; it does not make them fewer.
// Under open load, when new calls keep coming while a dependency is
// overloaded, each brings its retries, and the retries alone can keep the
// dependency down after the cause is gone: a retry storm, the metastable
// failure of Huang et al. (OSDI '22). A Budget tells that overload from
// bad luck by what the retries find, as the AWS SDKs' standard retry mode
// does: a retry that succeeds is bad luck, and costs nothing; one that
// fails costs a whole retry, which only calls that did not fail earn back
// (gRFC A6's retry throttling, Finagle's RetryBudget).
//
//   - Earned: a call that ends without a retryable failure (it succeeded,
//     or gave up on an error not worth retrying: [Permanent], or Retryable
//     said no) adds Ratio as it returns. A call that gives up on a retryable
//     failure (the limits, the deadline, the Budget, its context, [GiveUp])
//     adds nothing, and so does a call whose context was done before fn
//     ran. PerSecond, when positive, adds retries by the wall clock, pro
//     rata.
//   - Spent: a retry takes one just before its wait, once every other rule
//     of Do has said yes ([Budget.Allow]). With less than one whole retry
//     held, Do gives up at once, the last error kept and [ErrBudget] as the
//     Error's Cause; waiting for one would hold callers in the very overload
//     the Budget is for. No retry is taken for a retry not made, and none is
//     given back when a wait is cut short.
//   - Given back: a retry whose attempt then does not fail retryably (the
//     call succeeds, or ends on an error not worth retrying) returns the
//     retry it took, as the call returns. A retry that fails keeps it.
//   - Held: it starts holding Burst, and its room, the most it holds, is
//     the most of: Burst, fading by e every 10 seconds from the Budget's
//     first use; Ratio/2 × its recent earning calls, where each counts
//     e^(−t/10s) of itself t after it came (calls are reckoned every 64,
//     and before each retry, those between taken as evenly spread), plus
//     PerSecond × 10s; 3 × its recent retries given back, up to Burst,
//     where each counts e^(−n/100) of itself n earning calls after it;
//     and one retry (or Burst, when less). So the room grows with the
//     traffic that earns it, as Finagle's retry budget lets its deposits
//     expire, and stays at Burst while bad luck is common: a busy client
//     can retry a burst of failures at once, a new one has Burst to start
//     with, one whose retries keep succeeding keeps it at any pace, and a
//     quiet one that meets no bad luck, however many its fleet, holds
//     little.
//
// It counts in thousandths of a retry, exactly: Ratio, Burst and PerSecond
// are read to three places, the rest dropped (a Burst of 0.9996 holds no
// whole retry), so five calls at 0.2 earn one whole retry,
// never 0.9999999999999999 of one. Over any interval from a to a+T, the
// retries it allows are at most what it held at a, which is at most its
// room then; plus Ratio × the calls that earned in the interval, plus the
// retries given back in it, plus PerSecond × T. So the retries in it that
// failed, or whose calls gave up, are at most the room at a + Ratio × the
// calls that earned + PerSecond × T + what the retries allowed before a
// gave back in the interval; and a dependency that fails every attempt
// sees, from a new client, Burst retries, and from an older one the
// retries its last few seconds of successes saved (at least one, and at
// most a tenth of those successes, or its Burst), once, and then none until calls
// succeed again.
//
// One whose attempts fail at random, a share f of them, costs a call
// f²/(1−f) failed retries on average, and a call earns Ratio: the default
// 0.2 pays for f up to about a third. Measured through httpretry's
// defaults (benchmarks/README.md, "The other side of the trade"): at 10%,
// 20% and 30% of attempts failing, the calls that succeed are as many as
// with no Budget, to within 0.1, 0.1 and 1 point; and in the storm, the
// default still recovers within its targets.
//
// The zero Budget is the defaults: Ratio 0.2, Burst 10, no PerSecond,
// chosen by measurement (benchmarks/README.md, "The storm" and "A slow
// dependency"): with the refill by time of Finagle's RetryBudget, 10 a
// second for each client, a fleet's retries add up and kept an overloaded
// dependency down; a room of a constant 10 for each client let a fleet of
// 100 quiet clients send 1,000 saved retries into a recovering one. A
// Budget is safe for concurrent use by any number of goroutines, and must
// not be copied after first use. A call that succeeds at once adds one
// atomic add to Do and never waits for a lock (one call in 64 tries it,
// and reads the clock when it gets it: about 1ns a call); a retry, a retry given back, Tokens and
// Full read the clock and take a lock. A Loop does not spend from a
// Budget.
type Budget struct {
	// Ratio is how much of a retry each call that did not fail earns. Zero
	// means 0.2; below zero (or NaN), none.
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
	lucky  float64   // the retries given back, each fading by e every luckCalls earning calls
	fill   float64   // the room a new Budget starts with, Burst, fading alike, in thousandths
	last   time.Time // the last update; zero before the first
	part   uint64    // what the clock earned since, short of a thousandth, in 10⁻¹² retry
	owed   int64     // thousandths of the retries allowed that were neither given back nor earned again since
}

// window is the time over which a Budget's recent earning calls make room
// for retries: a call counts e^(−age/window) of itself.
const window = 10 * time.Second

// luckRoom is the room a retry given back makes, in retries, up to Burst,
// while it is recent, among the last luckCalls or so earning calls (each
// counting e^(−1/luckCalls) less than the one after): bad luck, met
// often, needs headroom for its runs, at any pace, and a client whose
// retries keep succeeding has it. A client whose attempts fail at random,
// 5% of them or more, keeps its room at Burst.
const (
	luckRoom  = 3
	luckCalls = 100
)

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

// milli reads x to three places, the places past them dropped (as gRFC A6
// reads its token ratio), so that a Budget never counts more than it was
// given: def for 0, 0 below 0 or for NaN, and at most milliMax. It is
// the most thousandths n whose n/1000, as a float64, is no more than x,
// so that a value of three places reads as written though its product
// rounds down (1.001 × 1000 is 1000.9999999999999), and one just below
// three places does not read as them though its product rounds up
// (263.99399999999997 × 1000 is 263994).
func milli(x float64, def int64) int64 {
	switch {
	case x == 0:
		return def
	case !(x > 0):
		return 0
	}
	n := math.Floor(x * milliUnit)
	switch {
	case n/milliUnit > x:
		n--
	case (n+1)/milliUnit <= x:
		n++
	}
	return int64(min(n, milliMax))
}

// The defaults of a zero Ratio and Burst, in thousandths.
const (
	defaultRatio = milliUnit / 5
	defaultBurst = 10 * milliUnit
)

// Tokens returns the retries the Budget would allow now, for a gauge: a
// number in [0, its room], with three decimal places; +Inf for a Budget
// that never refuses. Reading it changes nothing the Budget does after.
func (b *Budget) Tokens() float64 {
	held, _ := b.peek()
	return held
}

// Full reports whether forgetting the Budget costs nothing it has not
// earned: it owes no retry (every one it allowed has been given back, or
// earned again since: Ratio for each call that earned after it, and the
// clock's PerSecond), or it has not been asked for a retry, nor reckoned,
// for forgiveAfter (5 minutes), what it owed then forgiven. So a map of
// Budgets, one per key, can forget a full one and make it anew: a key
// whose retries keep failing gets a fresh Burst at most once in 5
// minutes, however its room has faded meanwhile. A Budget that never
// refuses is always full. Reading it changes nothing the Budget does
// after.
func (b *Budget) Full() bool {
	burst := milli(b.Burst, defaultBurst)
	if burst >= milliMax {
		return true
	}
	b.mu.Lock()
	s := b.state
	b.mu.Unlock()
	idle := s.last.IsZero() || time.Since(s.last) >= forgiveAfter
	s.update(b, burst, time.Now())
	return s.owed == 0 || idle
}

// forgiveAfter is how long a Budget must go unasked before Full forgets
// what it owes.
const forgiveAfter = 5 * time.Minute

// peek reckons a copy of the state as of now: what it holds, and its room.
func (b *Budget) peek() (held, room float64) {
	burst := milli(b.Burst, defaultBurst)
	if burst >= milliMax {
		return math.Inf(1), math.Inf(1)
	}
	b.mu.Lock()
	s := b.state
	b.mu.Unlock()
	bound := s.update(b, burst, time.Now())
	return float64(s.held) / milliUnit, float64(bound) / milliUnit
}

// earn counts a call that did not fail: Do's one cost on the happy path,
// an atomic add. Every 64th call also tries the lock, never waiting for
// it, and, when it gets it, reads the clock to reckon the room, so that
// the calls since are known to within 64 when they came (the room counts
// each call by its age); when another holds it, the reckoning waits for
// the next, which takes those calls as evenly spread.
func (b *Budget) earn() {
	if !(b.Ratio >= 0) { // zero Ratio is the default; below zero, or NaN, earns nothing
		return
	}
	if n := b.earned.Add(1); (n == 1 || n%earnEvery == 0) && b.mu.TryLock() {
		b.state.update(b, milli(b.Burst, defaultBurst), time.Now())
		b.mu.Unlock()
	}
}

// earnEvery is how many earning calls may go between two reckonings of the
// room: at 20ns a lock and 40ns a clock read, a call pays about 1ns on
// average, against the 10ns of an atomic add.
const earnEvery = 64

// Allow takes one retry from the Budget, and reports whether it held one
// whole: Do asks it just before each wait. With less than one whole retry
// held, it takes nothing and reports false. A retry taken by Allow is
// given back only by Do, when the attempt after it does not fail.
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
	s.owed += milliUnit
	return true
}

// giveBack returns the retry that an attempt which did not fail took, up
// to the room, and counts it as luck, which makes room. A nil Budget has
// nothing to give back.
func (b *Budget) giveBack() {
	if b == nil {
		return
	}
	burst := milli(b.Burst, defaultBurst)
	if burst >= milliMax {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s, now := &b.state, time.Now()
	s.update(b, burst, now) // faded to now, so that the retry given back counts whole
	s.lucky++
	bound := s.update(b, burst, now)
	s.held = min(s.held+milliUnit, bound)
	s.owed = max(s.owed-milliUnit, 0)
}

// update adds what the Budget earned since it last did, by calls and by
// the clock, and holds it to its room, which it returns.
func (s *budgetState) update(b *Budget, burst int64, now time.Time) (bound int64) {
	if s.last.IsZero() { // the first: a new Budget holds Burst, and has earned nothing by the clock
		s.held, s.fill, s.last = burst, float64(burst), now
	}
	ratio := milli(b.Ratio, defaultRatio)
	n := b.earned.Load()
	calls := n - s.seen
	s.seen = n
	if hi, lo := bits.Mul64(calls, uint64(ratio)); hi != 0 || lo >= milliMax {
		s.held, s.owed = milliMax, 0
	} else {
		s.held = int64(min(uint64(s.held)+lo, milliMax))
		s.owed = max(s.owed-int64(lo), 0)
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
	if calls > 0 {
		s.lucky *= math.Exp(-float64(calls) / luckCalls)
	}
	earned := s.recent*float64(ratio)/2 + float64(milli(b.PerSecond, 0))*window.Seconds()
	luck := min(float64(burst), s.lucky*luckRoom*milliUnit)
	bound = max(min(burst, milliUnit), int64(s.fill), int64(luck), int64(min(earned, milliMax)))
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
	s.owed = int64(uint64(s.owed) - min(uint64(s.owed), earned))
}
