package backoff_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/unherd/backoff"
)

// Each test here is named after one overflow bug the package rules out, and
// says where that bug bites in the wild. Each first shows the naive
// computation going wrong on this machine's arithmetic where Go defines it,
// then checks that the package does not.

const maxDuration = time.Duration(math.MaxInt64)

var allModes = []backoff.JitterMode{
	backoff.JitterFull, backoff.JitterEqual, backoff.JitterDecorrelated,
	backoff.JitterAdditive, backoff.JitterNone, backoff.JitterSymmetric,
}

// The hand-written `delay *= 2` loop, the first backoff most people write:
// from 100ms the 37th doubling wraps negative, and time.Sleep(negative)
// returns at once.
func TestDoublingAccumulatorWrapsOn37thDoubling(t *testing.T) {
	naive := 100 * time.Millisecond
	for range 37 {
		naive *= 2
	}
	if naive >= 0 {
		t.Fatalf("the naive accumulator did not wrap (%d): the premise of this test is wrong", naive)
	}
	// Attempt 38 is the 37th doubling.
	for _, attempt := range []int{37, 38, 39, 100, math.MaxInt} {
		if got := backoff.Grow(100*time.Millisecond, 0, 2, attempt); got < 100*time.Millisecond {
			t.Errorf("Grow(100ms, 0, 2, %d) = %v, want at least 100ms", attempt, got)
		}
	}
	if got := backoff.Grow(100*time.Millisecond, 0, 2, 38); got != maxDuration {
		t.Errorf("Grow(100ms, 0, 2, 38) = %v, want MaxInt64 (saturated)", got)
	}
	for _, mode := range allModes {
		v := backoff.Value{BaseDelay: 100 * time.Millisecond, JitterMode: mode}
		if d := v.Delay(38); d < 0 {
			t.Errorf("%v.Delay(38) = %v, want non-negative", v, d)
		}
	}
}

// `time.Duration(float64(base) * math.Pow(2, n))`, the float version of the
// same loop: from 1s the product passes 2^63 at attempt 35, and Go leaves
// the out-of-range conversion to the platform: math.MinInt64 on amd64,
// saturation on arm64. Grow decides in the float domain, before converting.
func TestFloatConversionAtAttempt35From1s(t *testing.T) {
	f := float64(time.Second) * math.Pow(2, 34)
	if f < 0x1p63 {
		t.Fatalf("1s×2^34 = %g is below 2^63: the premise of this test is wrong", f)
	}
	for _, mult := range []float64{2, 1.5, 3, 1.0001} {
		for _, attempt := range []int{34, 35, 36, 64, 1 << 40} {
			got := backoff.Grow(time.Second, 0, mult, attempt)
			want := float64(time.Second) * math.Pow(mult, float64(attempt-1))
			if want >= 0x1p63 && got != maxDuration {
				t.Errorf("Grow(1s, 0, %v, %d) = %d, want MaxInt64 (saturated)", mult, attempt, got)
			}
			if got < time.Second {
				t.Errorf("Grow(1s, 0, %v, %d) = %v, want at least 1s", mult, attempt, got)
			}
		}
	}
}

// A configuration that says "as long as you like": BaseDelay = MaxDelay =
// MaxInt64. Any arithmetic on the base itself (doubling, adding jitter,
// d+1 for a draw) overflows at attempt 1.
func TestMaxInt64BaseAndCeilingAtAttempt1(t *testing.T) {
	for _, mode := range allModes {
		v := backoff.Value{BaseDelay: maxDuration, MaxDelay: maxDuration, Jitter: 1, JitterMode: mode}
		for range 100 {
			if d := v.Delay(1); d < 0 {
				t.Fatalf("%v.Delay(1) = %d, want non-negative", v, d)
			}
		}
		if lo, hi := v.Bounds(1); lo < 0 || hi != maxDuration {
			t.Errorf("%v.Bounds(1) = [%d, %d], want [≥0, MaxInt64]", v, lo, hi)
		}
	}
	v := backoff.Value{BaseDelay: maxDuration, MaxDelay: maxDuration, JitterMode: backoff.JitterNone}
	if d := v.Delay(1); d != maxDuration {
		t.Errorf("%v.Delay(1) = %d, want MaxInt64", v, d)
	}
}

// `if f > float64(max) { f = float64(max) }; d := time.Duration(f)`:
// float64(math.MaxInt64) is exactly 2^63, one past the largest int64, so
// the clamp itself produces the out-of-range value. Ceilings just below
// MaxInt64 round up the same way.
func TestFloat64OfMaxInt64RoundsUpTo2Pow63(t *testing.T) {
	if float64(math.MaxInt64) != 0x1p63 {
		t.Fatal("float64(MaxInt64) is not 2^63: the premise of this test is wrong")
	}
	for _, ceiling := range []time.Duration{maxDuration, maxDuration - 1, maxDuration - 511, maxDuration - 512, maxDuration - 1025, 1<<62 + 1} {
		for _, mult := range []float64{1.5, 1.9999999, math.Nextafter(2, 3), 3} {
			for _, base := range []time.Duration{ceiling/2 - 1, ceiling / 3, ceiling/3 + 1, 1 << 61} {
				for attempt := 1; attempt < 5; attempt++ {
					if got := backoff.Grow(base, ceiling, mult, attempt); got < 0 || got > ceiling {
						t.Errorf("Grow(%d, %d, %v, %d) = %d, want in [0, %d]", base, ceiling, mult, attempt, got, ceiling)
					}
				}
			}
		}
	}
	// The additive curve is held at MaxDelay/(1+Jitter), computed in floats.
	for _, ceiling := range []time.Duration{maxDuration, maxDuration - 1, 1<<53 + 1, 3} {
		for _, j := range []float64{0x1p-1074, 1e-17, 0.1, 1} {
			v := backoff.Value{BaseDelay: 1, MaxDelay: ceiling, Jitter: j, JitterMode: backoff.JitterAdditive}
			if lo, hi := v.Bounds(1 << 20); lo < 0 || hi > ceiling || lo > hi {
				t.Errorf("%v.Bounds(1<<20) = [%d, %d], want within [0, %d]", v, lo, hi, ceiling)
			}
		}
	}
}

// `if m < 1 { m = 2 }` and `if d > max { d = max }` are both false for NaN,
// so a NaN multiplier (a division by zero upstream, a bad config parse)
// sails past such guards and converts to math.MinInt64 on amd64.
func TestNaNMultiplierPassesGreaterThanGuards(t *testing.T) {
	nan := math.NaN()
	naiveMultiplier := func(m float64) float64 {
		if m < 1 {
			m = 2
		}
		return m
	}
	if m := naiveMultiplier(nan); !math.IsNaN(m) {
		t.Fatalf("the naive guard turned NaN into %v: the premise of this test is wrong", m)
	}
	if got := backoff.NormalMultiplier(nan); got != 2 {
		t.Errorf("NormalMultiplier(NaN) = %v, want 2", got)
	}
	for attempt := 1; attempt < 70; attempt++ {
		want := backoff.Grow(time.Second, time.Minute, 2, attempt)
		if got := backoff.Grow(time.Second, time.Minute, nan, attempt); got != want {
			t.Errorf("Grow(1s, 1m, NaN, %d) = %v, want %v (doubling)", attempt, got, want)
		}
	}
	v := backoff.Value{BaseDelay: time.Second, MaxDelay: time.Minute, Multiplier: nan, Jitter: nan, JitterMode: backoff.JitterAdditive}
	for attempt := 1; attempt < 70; attempt++ {
		if d := v.Delay(attempt); d < time.Second || d > time.Minute {
			t.Errorf("%v.Delay(%d) = %v, want in [1s, 1m]", v, attempt, d)
		}
	}
}

// `d + time.Duration(rand.Float64()*jitter*float64(d))`: next to MaxInt64
// the sum wraps negative, and a clamp after it piles every wait onto the
// bound. The spread must stay below MaxInt64 without collapsing.
func TestJitterAddedNextToMaxInt64(t *testing.T) {
	near := maxDuration - 1000
	var atBound int
	for range 2000 {
		d := backoff.Widen(near, 1)
		if d < near {
			t.Fatalf("Widen(MaxInt64-1000, 1) = %d, want in [MaxInt64-1000, MaxInt64]", d)
		}
		if d == maxDuration {
			atBound++
		}
		if d := backoff.AddJitter(near, time.Hour); d < near {
			t.Fatalf("AddJitter(MaxInt64-1000, 1h) = %d, want in [MaxInt64-1000, MaxInt64]", d)
		}
	}
	// Uniform over 1001 values: ~2 of 2000 land on the bound; a clamp puts
	// nearly all of them there.
	if atBound > 20 {
		t.Errorf("Widen(MaxInt64-1000, 1) hit MaxInt64 %d times in 2000, want about 2: the spread piles up on the bound", atBound)
	}
	v := backoff.Value{BaseDelay: near, Jitter: 1, JitterMode: backoff.JitterAdditive}
	for attempt := range 70 {
		if d := v.Delay(attempt); d < 0 {
			t.Fatalf("%v.Delay(%d) = %d, want non-negative", v, attempt, d)
		}
	}
}

// `min(ceiling, 3*previous)` in the AWS decorrelated loop: with no ceiling
// (or a huge one) and a long previous wait, 3*previous wraps negative, the
// min picks it, and the draw range inverts.
func TestDecorrelateTriplePreviousSaturates(t *testing.T) {
	prev := maxDuration/3 + 1
	if 3*prev >= 0 {
		t.Fatal("3×previous did not wrap: the premise of this test is wrong")
	}
	for _, ceiling := range []time.Duration{0, -1, maxDuration} {
		for range 200 {
			if d := backoff.Decorrelate(time.Second, ceiling, prev); d < time.Second {
				t.Fatalf("Decorrelate(1s, %d, MaxInt64/3+1) = %d, want at least 1s", ceiling, d)
			}
		}
	}
	s := backoff.Schedule{
		Curve: backoff.Value{BaseDelay: maxDuration / 2, JitterMode: backoff.JitterDecorrelated},
		Rand:  rand.New(rand.NewPCG(1, 2)),
	}
	for range 100 {
		if d, ok := s.Next(); d < maxDuration/2 || !ok {
			t.Fatalf("Schedule.Next() = %d, %v, want at least MaxInt64/2", d, ok)
		}
	}
}

// `rand.Int64N(int64(d) + 1)` draws [0, d] inclusive, until d = MaxInt64,
// where d+1 wraps to MinInt64 and Int64N panics.
func TestInt63nOfDPlus1AtMaxInt64(t *testing.T) {
	func() {
		defer func() {
			if recover() == nil {
				t.Error("rand.Int64N(MaxInt64+1) did not panic: the premise of this test is wrong")
			}
		}()
		d := maxDuration
		rand.Int64N(int64(d) + 1)
	}()
	for range 1000 {
		if d := backoff.Full(maxDuration); d < 0 {
			t.Fatalf("Full(MaxInt64) = %d, want in [0, MaxInt64]", d)
		}
		if d := backoff.Equal(maxDuration); d < maxDuration/2 {
			t.Fatalf("Equal(MaxInt64) = %d, want in [MaxInt64/2, MaxInt64]", d)
		}
	}
}

// `time.Duration(n) * time.Second` for a Retry-After of "99999999999999"
// seconds wraps to 200376419520689664ns, a 55,660-hour wait; one popular
// HTTP client did exactly this. The wait saturates instead, and a Schedule
// with a MaxElapsed gives up rather than hold the goroutine for it.
func TestRetryAfterHugeSecondsWraps(t *testing.T) {
	const header = "99999999999999"
	n := int64(99999999999999)
	naive := time.Duration(n) * time.Second
	if naive != 200376419520689664 {
		t.Fatalf("naive Retry-After = %d: the premise of this test is wrong", naive)
	}
	d, ok := backoff.ParseRetryAfter(header, time.Time{})
	if d != maxDuration || !ok {
		t.Fatalf("ParseRetryAfter(%q) = %d, %v, want MaxInt64, true", header, d, ok)
	}
	s := backoff.Schedule{Curve: backoff.Value{BaseDelay: time.Second}, MaxElapsed: time.Hour}
	s.Override(d)
	if got, ok := s.Next(); ok {
		t.Errorf("Schedule.Next() after Override(%v) = %v, true, want false (past MaxElapsed)", d, got)
	}
}
