// Package backoff computes how long a failing loop should wait before its
// next attempt: exponential backoff with jitter, as a pure calculator.
//
// It turns an attempt number into a wait, for retry loops, supervisors that
// restart a goroutine, and periodic tickers. It never sleeps, starts no timer
// or goroutine and does no I/O: the caller owns the loop and the timer.
//
// Two invariants hold for every exported function and every input, NaN,
// ±Inf, math.MinInt and math.MaxInt64 included: no wait is ever negative, and
// nothing overflows. Growth is decided in the float domain before any
// conversion to int64, so a curve that would pass the longest
// [time.Duration] saturates instead of wrapping to a negative wait (which
// [time.Sleep] would return from at once, turning a backoff into a tight
// loop). A [Value].MaxDelay is a hard ceiling in every jitter mode. Nothing
// panics and no input is refused: out-of-range inputs are normalised as each
// doc comment says.
//
// [Value] is stateless and safe for concurrent use, as are all the functions;
// a [Schedule] holds the state of one retry sequence and is not. Randomness
// comes from math/rand/v2's package-level source, or from [Schedule].Rand.
package backoff

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strings"
	"time"
)

// JitterMode chooses how a [Value] randomises each grown wait. The zero
// JitterMode is JitterFull, on purpose: a backoff left at its defaults must
// not synchronise the clients that failed together.
type JitterMode uint8

const (
	// JitterFull draws the wait uniformly from [0, grown]. AWS measured it to
	// do the least total work of the modes; it is the zero value.
	JitterFull JitterMode = iota
	// JitterEqual draws the wait uniformly from [grown/2, grown]: it keeps at
	// least half the curve.
	JitterEqual
	// JitterDecorrelated draws the wait uniformly from
	// [BaseDelay, min(MaxDelay, 3×previous)], as [Decorrelate] does. A
	// [Schedule] feeds back the wait it drew before, so its waits grow by
	// the draws and it does not read Multiplier; [Value.Delay], which has
	// no memory, stands the curve's previous step in for that wait, and so
	// reads Multiplier.
	JitterDecorrelated
	// JitterAdditive widens the grown wait by up to a fraction Jitter of
	// itself, as [Widen] does, keeping the whole spread under MaxDelay.
	JitterAdditive
	// JitterNone returns the grown wait exactly: deterministic, for tests.
	JitterNone
	// JitterSymmetric draws the wait uniformly from
	// [g′×(1−Jitter), g′×(1+Jitter)], where g′ is the curve held at
	// MaxDelay/(1+Jitter): the ±RandomizationFactor of cenkalti/backoff and
	// the random(0.8, 1.2) of gRPC's retry policy (gRFC A6), with the
	// ceiling kept hard. To reproduce a peer whose jitter overshoots its cap
	// by the factor, set MaxDelay to cap×(1+Jitter). It comes after
	// JitterNone so that the other modes keep their values.
	JitterSymmetric
)

var modeNames = [...]string{
	JitterFull:         "full",
	JitterEqual:        "equal",
	JitterDecorrelated: "decorrelated",
	JitterAdditive:     "additive",
	JitterNone:         "none",
	JitterSymmetric:    "symmetric",
}

// String returns the mode's name: "full", "equal", "decorrelated",
// "additive", "none" or "symmetric"; "unknown" for a mode this package does
// not define.
func (m JitterMode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "unknown"
}

// MarshalText implements [encoding.TextMarshaler]: the mode's name, as
// String gives it. A mode this package does not define is an error rather
// than "unknown", which could not be read back.
func (m JitterMode) MarshalText() ([]byte, error) {
	if int(m) < len(modeNames) {
		return []byte(modeNames[m]), nil
	}
	return nil, fmt.Errorf("backoff: undefined jitter mode %d", uint8(m))
}

// errModeName names the accepted spellings once, for UnmarshalText: those
// of modeNames, the one list of the names.
var errModeName = errors.New(`want one of "` + strings.Join(modeNames[:], `", "`) + `"`)

// UnmarshalText implements [encoding.TextUnmarshaler]: it accepts the six
// names String gives, in any case, and leaves m unchanged with an error
// naming them otherwise. It is what lets [flag.TextVar] and encoding/json
// read a mode.
func (m *JitterMode) UnmarshalText(b []byte) error {
	for i, name := range modeNames {
		if strings.EqualFold(string(b), name) {
			*m = JitterMode(i)
			return nil
		}
	}
	return fmt.Errorf("backoff: unknown jitter mode %q: %w", b, errModeName)
}

// Value describes one backoff curve: a wait that starts at BaseDelay, grows
// by Multiplier per attempt up to MaxDelay, and is randomised by JitterMode.
// The zero Value waits nothing; set BaseDelay to make it wait. A Value is a
// plain comparable struct with no state: safe to copy, to compare and to
// share between goroutines.
type Value struct {
	// BaseDelay is the wait after the first failure. Zero or less waits
	// nothing, in every mode.
	BaseDelay time.Duration
	// MaxDelay is a hard ceiling on every wait, in every mode. Zero or less
	// means none: waits stop growing at math.MaxInt64 ns.
	MaxDelay time.Duration
	// Multiplier is the growth per attempt, normalised by NormalMultiplier:
	// zero (or anything below 1, or NaN) doubles; exactly 1 is a constant
	// wait. A Schedule with JitterDecorrelated does not read it.
	Multiplier float64
	// Jitter is the fraction JitterAdditive widens by, and JitterSymmetric
	// spreads by either side, normalised by NormalJitter into [0, 1]. The
	// other modes do not read it.
	Jitter float64
	// JitterMode chooses the randomisation. The zero is JitterFull; a mode
	// this package does not define is read as JitterFull.
	JitterMode JitterMode
}

// Delay returns the wait before the retry that follows failure number
// attempt (the first failure is attempt 1; an attempt below 1 is read as
// 1). Let g = Grow(BaseDelay, MaxDelay, Multiplier, attempt). Then
//
//   - JitterFull draws from [0, g];
//   - JitterEqual draws from [g/2, g];
//   - JitterNone returns g;
//   - JitterDecorrelated draws from Decorrelate(BaseDelay, MaxDelay, p),
//     where p, the previous wait, is the curve's own previous step
//     Grow(…, attempt−1), and BaseDelay at attempt 1: a Value has no memory.
//     Use a [Schedule] for the loop that feeds back the waits it drew;
//   - JitterAdditive widens the curve held at MaxDelay/(1+Jitter) instead of
//     MaxDelay, so that at the ceiling the waits still spread over
//     [MaxDelay/(1+Jitter), MaxDelay] instead of collapsing onto MaxDelay.
//     With no MaxDelay the curve is held at math.MaxInt64/(1+Jitter) alike;
//   - JitterSymmetric draws from [g′×(1−Jitter), g′×(1+Jitter)], g′ the
//     curve held at MaxDelay/(1+Jitter) as for JitterAdditive, so that the
//     upper end reaches MaxDelay at the ceiling and never passes it.
//
// Every draw is uniform over whole nanoseconds, both ends included, and lies
// in [Value.Bounds](attempt). No wait is negative or above MaxDelay (or
// math.MaxInt64 without one). Delay is O(1) in attempt, does not allocate,
// and is safe for concurrent use.
func (v Value) Delay(attempt int) time.Duration {
	return delay(v.BaseDelay, v.MaxDelay, v.Multiplier, v.Jitter, v.JitterMode, attempt)
}

// delay is Value.Delay, and Schedule.Next's draw from the package-level
// source, on scalars so that Delay inlines into its caller (Value has five
// fields, one more than Go keeps in registers). Every mode goes through
// Bounds and one draw, except the defaults, which take two shortcuts
// (callgrind, benchmarks/instructions.sh: 132 instructions a call with
// full jitter, 64 without; 180 and 106 through Bounds):
//   - a doubling curve under a ceiling is a shift, without a call to Grow
//     (18% of the call with full jitter, 40% without);
//   - full jitter's draw, uniform(nil, 0, g), is written out: Lemire's
//     multiply-and-reject, as rand.Uint64N does it, with only rand.Uint64
//     called (10%: 132 instructions against 147).
func delay(base, ceiling time.Duration, multiplier, jitter float64, mode JitterMode, attempt int) time.Duration {
	if g, ok := doubled(base, ceiling, multiplier, attempt); ok {
		switch mode {
		case JitterFull:
			n := uint64(g) + 1 // uniform(nil, 0, g)
			x, frac := bits.Mul64(rand.Uint64(), n)
			if frac < n {
				x = reject(n, x, frac)
			}
			return time.Duration(x)
		case JitterNone:
			return g
		}
	}
	lo, hi := Value{base, ceiling, multiplier, jitter, mode}.Bounds(attempt)
	return uniform(nil, lo, hi)
}

// Bounds returns the closed interval [lo, hi] that Delay(attempt) draws
// from, computed without drawing: lo = hi = g for JitterNone, [0, g] for
// JitterFull, and so on (see [Value.Delay]). 0 ≤ lo ≤ hi ≤ the ceiling.
// Bounds is O(1) in attempt, does not allocate, and is safe for concurrent
// use.
//
// For planning a timeout around Value.Delay, the longest n retries can wait
// is the sum of the his of attempts 1 to n. That sum does not bound a
// [Schedule] with JitterDecorrelated, whose waits grow from the waits it
// drew (up to 3× per wait, to MaxDelay), nor waits set by
// [Schedule.Override]: bound those with Schedule.MaxElapsed or
// Schedule.Deadline.
func (v Value) Bounds(attempt int) (lo, hi time.Duration) {
	switch v.JitterMode {
	case JitterDecorrelated:
		// The curve's previous step stands in for the previous wait; before
		// attempt 2 that is Grow's attempt 0, read as 1: BaseDelay.
		prev := Grow(v.BaseDelay, v.MaxDelay, v.Multiplier, max(attempt, 1)-1)
		return decorrelateRange(v.BaseDelay, v.MaxDelay, prev)
	case JitterAdditive, JitterSymmetric:
		return v.heldRange(attempt)
	}
	g := Grow(v.BaseDelay, v.MaxDelay, v.Multiplier, attempt)
	switch v.JitterMode {
	case JitterNone:
		return g, g
	case JitterEqual:
		return g / 2, g
	}
	return 0, g // JitterFull, and modes this package does not define
}

// heldRange holds the curve at limit/(1+j), and widens it within limit
// (JitterAdditive) or spreads it either side (JitterSymmetric).
func (v Value) heldRange(attempt int) (lo, hi time.Duration) {
	limit := v.MaxDelay
	if limit <= 0 {
		limit = maxDuration
	}
	j := NormalJitter(v.Jitter)
	held := limit
	// float64(limit) may round up to 2^63, and 1+j may round to 1: hold
	// the float below the bound before converting, and at limit after.
	// It stays at least 1ns, which Grow would otherwise read as no ceiling.
	if h := float64(limit) / (1 + j); h < float64(limit) {
		held = max(min(time.Duration(h), limit), 1)
	}
	g := Grow(v.BaseDelay, held, v.Multiplier, attempt)
	if v.JitterMode == JitterSymmetric {
		return symmetricRange(g, j, limit)
	}
	return widenRange(g, j, limit)
}

// doubled is Grow for delay's common case, small enough to inline: a
// positive base doubling (the zero multiplier, or 2) under a set ceiling is
// a shift, or the ceiling once the shift would pass it. It reports false
// for every other case, which Grow answers. An attempt below 1 is read as
// 1, as in Grow.
func doubled(base, ceiling time.Duration, multiplier float64, attempt int) (time.Duration, bool) {
	if base <= 0 || ceiling <= 0 || !(multiplier == 2 || multiplier == 0) {
		return 0, false
	}
	// Past 62 doublings base > ceiling>>n; the bound also spares the shift
	// the masking Go's semantics need for a count of 64 or more.
	if n := uint(max(attempt, 1) - 1); n < 63 && base <= ceiling>>n {
		return base << n, true
	}
	return ceiling, true
}

// reject redraws while the draw falls among the 2^64 mod n values that would
// bias delay's written-out draw; it is reached with probability below
// n/2^64.
func reject(n, x, frac uint64) uint64 {
	thresh := -n % n
	for frac < thresh {
		x, frac = bits.Mul64(rand.Uint64(), n)
	}
	return x
}
