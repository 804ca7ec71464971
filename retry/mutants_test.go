package retry_test

// Tests that pin behaviour the rest of the suite left loose, found by
// mutation testing (each names the rule of the contract it checks).
//
// The mutants no test can kill, and why they change nothing
// (shared/tools/mutate, run on every mutant of the package):
//
//   - budget.go milli, !(x > 0) → !(x >= 0): x == 0 has returned already.
//   - budget.go Tokens, math.Inf(1) → Inf(2), Inf(0): Inf(sign) is +Inf
//     for every sign ≥ 0.
//   - budget.go update, hi != 0 || lo >= milliMax → &&, and >= → >: the
//     sum held + lo is below 2^64 (held ≤ 2^52, lo < 2^58 for the at most
//     64 calls between two reckonings), so it saturates to milliMax
//     anyway; only some 4,000 earning calls between two reckonings, at a
//     Ratio near +Inf, racing one lock, could tell.
//   - budget.go update, dt < 0 → <= 0, < 1: at dt == 0 the body assigns
//     what is already there.
//   - budget.go update, dt < 0 → < −1, and each change to its body
//     (deleted, 0 → 1, 0 → −1): unreachable, since Allow and earn read
//     time.Now() after taking b.mu, and Tokens after copying the state
//     under it, so each update's now is no earlier on the monotonic clock
//     than the last one's: dt ≥ 0.
//   - budget.go update, max(dt, 0) → max(dt, −1): dt ≥ 0 there.
//   - budget.go refill, rate == 0 → == −1, and its return deleted: with
//     rate 0 the rest adds 0 and keeps b.part as it was.
//   - errors.go waitOf, return 0, false → 1 or −1: its one caller reads
//     the wait only when ok.
//   - loop.go Wait, fits(now, wait, 0, …) → −1; retry.go fits,
//     max(took, 0) → max(took, −1): took is never below 0 (a Loop passes 0,
//     and Do's next now is read after the wait's timer fired and fn ran).
//   - loop.go Reset, retry.go Do and retrying, ended(…, −1, …) → −2:
//     ended reads any took below 0 as "not measured".
//   - retry.go fits, need < 0 → need < −1: the sum of two durations in
//     [0, MaxInt64] wraps to at most −2, never to −1.
//   - retry.go notify and giveUp, [4]slog.Attr → [5]: at most 4 are set,
//     and only attrs[:n] is logged.
//   - loop.go stop and Reset, uncounted 0 → −1: the table's Attempt adds
//     nothing for a count of zero or less.
//   - stats.go ended, uncounted == 1 → == 2: a call that succeeded at once
//     is then counted by Done (its call, its one attempt, no time) instead
//     of the striped count: the same counts, only slower.
//   - stats.go causeOf, Is(Canceled) || Is(DeadlineExceeded) → &&: the
//     case it falls to returns stats.Context, as this one does.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/retry"
)

// TestBudgetFirstUseIsFirstEarn: a Budget's Burst fades from its first
// use, and a call that earns is a use: a success, then ten quiet seconds,
// leave the new Budget's 10 faded by e. A Budget whose Ratio is negative
// earns nothing, so a success does not touch it (Do's happy path adds
// nothing to it): its 10 fade from its first retry (reading Tokens is
// no use).
func TestBudgetFirstUseIsFirstEarn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{}
		good(b)
		time.Sleep(10 * time.Second)
		if got, want := b.Tokens(), math.Floor(10000/math.E)/1000; got != want {
			t.Errorf("a success, then 10s: %v, want the 10 faded by e, %v", got, want)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{Ratio: -0.5}
		good(b)
		time.Sleep(10 * time.Second)
		if got := b.Tokens(); got != 10 {
			t.Errorf("Ratio -0.5: a success, then 10s, then a read: %v, want 10", got)
		}
	})
}

// TestBudgetReckonedEvery64: the room counts each earning call by its
// age, reckoned every 64 calls, the calls since the last reckoning taken
// as evenly spread between the two. One success at 0 (the first use,
// reckoned), 63 more at 10s (the 64th reckons them as spread over the 10s),
// and a read at 20s: the room is Ratio/2 × (e⁻¹ + 63(1 − e⁻¹)) × e⁻¹ ≈ 1.479,
// above the new Budget's 10 faded twice (1.353).
func TestBudgetReckonedEvery64(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{}
		good(b)
		time.Sleep(10 * time.Second)
		for range 63 {
			good(b)
		}
		time.Sleep(10 * time.Second)
		want := 0.1 * (1/math.E + 63*(1-1/math.E)) / math.E
		if got := b.Tokens(); math.Abs(got-want) > 0.002 {
			t.Errorf("1 success, 63 more 10s later, read 10s after: %v, want %.3f", got, want)
		}
	})
}

// TestBudgetNeverRefusesAtMilliMax: a Burst of 2^52 thousandths exactly
// is a Budget that never refuses, as more is: Tokens is +Inf, and Allow
// says yes however long it sat idle (an idle Budget's room fades to one
// retry, but this one has no room to fade).
func TestBudgetNeverRefusesAtMilliMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{Burst: float64(1<<52) / 1000}
		if got := b.Tokens(); !math.IsInf(got, 1) {
			t.Fatalf("Burst 2^52 thousandths: Tokens() = %v, want +Inf", got)
		}
		b.Allow()
		time.Sleep(time.Hour)
		for i := range 3 {
			if !b.Allow() {
				t.Fatalf("Burst 2^52 thousandths, an hour idle: Allow %d refused", i+1)
			}
		}
		if got := b.Tokens(); !math.IsInf(got, 1) {
			t.Fatalf("Burst 2^52 thousandths, after retries: Tokens() = %v, want +Inf", got)
		}
	})
}

// TestBudgetRefillPast64Bits: the clock's refill is counted in 128 bits,
// exactly, however large: at 18,446,744.073 retries a second (its rate in
// 10⁻¹² retry a nanosecond, times a second, is just short of 2^64), the
// part of a thousandth kept from an earlier refill carries the next one
// past 2^64, and the second earns its 18,446,744.073 retries all the same;
// and a refill of 2^64 × 10⁹ exactly, at 2^52 thousandths a second for
// 4096 seconds, fills it to the most it counts, 2^52 thousandths.
func TestBudgetRefillPast64Bits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{Ratio: -1, Burst: -1, PerSecond: 18446744.073}
		b.Allow()                       // the clock earns from the first use (reading Tokens is none); none held, none taken
		time.Sleep(2 * time.Nanosecond) // 36.893488146 thousandths: 0.036 held, 893488146 × 10⁻¹² kept
		if b.Allow() {                  // a reckoning, which keeps the part
			t.Fatal("0.036 of a retry held, and Allow took one")
		}
		if got := b.Tokens(); got != 0.036 {
			t.Fatalf("2ns at 18446744.073/s: %v, want 0.036", got)
		}
		time.Sleep(time.Second) // 18446744073 thousandths and the part kept: 893488146 × 10⁻¹² again
		if got, want := b.Tokens(), 18446744.109; got != want {
			t.Fatalf("then a second: %v, want %v", got, want)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{Ratio: -1, Burst: -1, PerSecond: float64(1<<52) / 1000}
		b.Allow()
		time.Sleep(4096 * time.Second)
		if got, want := b.Tokens(), float64(1<<52)/1000; got != want {
			t.Fatalf("4096s at 2^52 thousandths a second: %v, want %v", got, want)
		}
	})
}

// timeoutErr is an error that says whether it timed out, as net.Error
// does.
type timeoutErr bool

func (e timeoutErr) Error() string { return fmt.Sprintf("timeout %v", bool(e)) }
func (e timeoutErr) Timeout() bool { return bool(e) }

// TestErrorTimeout: an Error is a timeout when its last error timed out,
// through wrapping, whatever its Cause; or when its Cause is a deadline.
// An error whose Timeout says false, or no Timeout at all, leaves it to
// the Cause.
func TestErrorTimeout(t *testing.T) {
	for _, tt := range []struct {
		e    *retry.Error
		want bool
	}{
		{&retry.Error{Err: timeoutErr(true), Cause: backoff.ErrMaxRetries}, true},
		{&retry.Error{Err: fmt.Errorf("fetching: %w", timeoutErr(true))}, true},
		{&retry.Error{Err: errors.Join(errFault, timeoutErr(true)), Cause: errSentinel}, true},
		{&retry.Error{Err: timeoutErr(false), Cause: backoff.ErrMaxRetries}, false},
		{&retry.Error{Err: timeoutErr(false), Cause: backoff.ErrDeadline}, true},
		{&retry.Error{Err: errFault, Cause: context.DeadlineExceeded}, true},
		{&retry.Error{Err: errFault, Cause: context.Canceled}, false},
		{&retry.Error{Err: errFault}, false},
		{&retry.Error{Cause: retry.ErrBudget}, false},
	} {
		if got := tt.e.Timeout(); got != tt.want {
			t.Errorf("%v: Timeout() = %v, want %v", tt.e, got, tt.want)
		}
	}
}

var errSentinel = errors.New("sentinel")

// TestLoopOnDoneRuns: a Loop's run ends, for OnDone, at a Reset after a
// Wait that returned true (a success) and at the Wait that returns false
// (a failure); a Reset before any Wait, a second Reset in a row, and a
// Reset after the Loop stopped end no run.
func TestLoopOnDoneRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []retry.Done
		loop := retry.NewLoop(retry.Policy{Schedule: constant(time.Second, 0), OnDone: func(d retry.Done) { got = append(got, d) }})
		ctx := context.Background()
		loop.Reset() // before the first Wait: no run
		loop.Wait(ctx)
		loop.Reset() // a run that succeeded at once
		loop.Reset() // no Wait since: no run
		// The curve's first wait, 1s, then attempt 1 of a new run.
		if !loop.Wait(ctx) || loop.Attempt() != 1 {
			t.Fatalf("Wait after a Reset: attempt %d, %v", loop.Attempt(), loop.Err())
		}
		done, cancel := context.WithCancel(ctx)
		cancel()
		if loop.Wait(done) {
			t.Fatal("Wait on a done ctx returned true")
		}
		loop.Reset() // after the Loop stopped: its run was counted as it stopped
		want := []retry.Done{
			{Outcome: retry.SucceededAtOnce, Attempts: 1},
			{Outcome: retry.FailedAfterRetries, Attempts: 1, Elapsed: time.Second, Cause: context.Canceled}, // after a wait: with a retry
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("OnDone heard\n%v\nwant\n%v", got, want)
		}
	})
}

// TestOnDoneEveryEnd: OnDone, with no Name, hears a call whose ctx was
// done before fn ran (no attempt, no time) and one that succeeded after
// retries (with the time it took).
func TestOnDoneEveryEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []retry.Done
		p := retry.Policy{Schedule: constant(time.Second, 3), OnDone: func(d retry.Done) { got = append(got, d) }}
		done, cancel := context.WithCancel(context.Background())
		cancel()
		retry.Do(done, p, func(context.Context) error { return nil })
		r := newRecorder(0, errFault, errFault)
		retry.Do(context.Background(), p, r.fn)
		want := []retry.Done{
			{Outcome: retry.FailedWithoutRetry, Cause: context.Canceled},
			{Outcome: retry.SucceededAfterRetries, Attempts: 3, Elapsed: 2 * time.Second},
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("OnDone heard\n%v\nwant\n%v", got, want)
		}
	})
}

// TestLiveContextWithoutDeadline: a context that can be cancelled, has no
// deadline and stays live does not hold a wait: Do retries after its
// waits and succeeds, and a Loop waits and goes on.
func TestLiveContextWithoutDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r := newRecorder(0, errFault, errFault)
		if err := retry.Do(ctx, retry.Policy{Schedule: constant(time.Second, 3)}, r.fn); err != nil || len(r.calls) != 3 {
			t.Fatalf("Do on a live ctx: %v after %d calls, want nil after 3", err, len(r.calls))
		}
		r = newRecorder(0, errFault, errFault)
		if err := retry.Do(ctx, retry.Policy{Schedule: noWait(3)}, r.fn); err != nil || len(r.calls) != 3 {
			t.Fatalf("Do on a live ctx, no wait: %v after %d calls, want nil after 3", err, len(r.calls))
		}
		loop := retry.NewLoop(retry.Policy{Schedule: constant(time.Second, 0)})
		for i := range 3 {
			if !loop.Wait(ctx) {
				t.Fatalf("Wait %d on a live ctx: %v", i+1, loop.Err())
			}
		}
	})
}

// TestDeadlineZeroWaitInstantAttempts: under a deadline, a retry with no
// wait after an attempt that took no time fits, however close the
// deadline: it needs no time at all.
func TestDeadlineZeroWaitInstantAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
		defer cancel()
		calls := 0
		err := retry.Do(ctx, retry.Policy{Schedule: noWait(3)}, func(context.Context) error { calls++; return errFault })
		if e := asError(t, err); calls != 4 || e.Cause != backoff.ErrMaxRetries {
			t.Fatalf("no wait, instant attempts, under a deadline: %d calls, %v; want 4, ended by MaxRetries", calls, err)
		}
	})
}

// TestSleepUnenforcedDeadline: on a live context whose deadline has
// passed without ending it (a Context may report a deadline it never
// enforces), Sleep of zero or less returns nil at once, and any wait
// longer than none, a nanosecond included, would pass the deadline:
// backoff.ErrDeadline, at once.
func TestSleepUnenforcedDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, deadline := range []time.Time{time.Now(), time.Now().Add(-time.Second)} {
			ctx := deadlineOnly{context.Background(), deadline}
			for _, d := range []time.Duration{0, -time.Second} {
				if err := retry.Sleep(ctx, d); err != nil {
					t.Errorf("Sleep(%v) at or past a deadline that is not enforced: %v, want nil", d, err)
				}
			}
			for _, d := range []time.Duration{time.Nanosecond, time.Second} {
				start := time.Now()
				if err := retry.Sleep(ctx, d); err != backoff.ErrDeadline || time.Since(start) != 0 {
					t.Errorf("Sleep(%v) at or past a deadline that is not enforced: %v after %v, want ErrDeadline at once", d, err, time.Since(start))
				}
			}
		}
	})
}

// TestBudgetFractionalNegativeFields: a field below zero means none of it,
// however little below: PerSecond −0.5 earns nothing by the clock, and a
// Burst of −0.5 holds nothing of its own, so a success at Ratio 1 on a new
// Budget leaves it exactly the room the one call made, half a retry.
func TestBudgetFractionalNegativeFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{PerSecond: -0.5, Burst: 2}
		drain(t, b)
		time.Sleep(10 * time.Second)
		if got := b.Tokens(); got != 0 {
			t.Errorf("PerSecond −0.5, drained, 10s later: %v, want 0", got)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{Burst: -0.5, Ratio: 1}
		good(b)
		if got := b.Tokens(); got != 0.5 {
			t.Errorf("Burst −0.5, Ratio 1, one success: %v, want 0.5", got)
		}
	})
}

// TestBudgetZeroPerSecondEarnsNothing: the default PerSecond is none: a
// drained zero Budget left alone earns nothing by the clock, in a second
// or in an hour.
func TestBudgetZeroPerSecondEarnsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b retry.Budget
		drain(t, &b)
		for _, d := range []time.Duration{time.Second, time.Hour} {
			time.Sleep(d)
			if got := b.Tokens(); got != 0 {
				t.Fatalf("a drained zero Budget, %v later: %v, want 0", d, got)
			}
		}
	})
}
