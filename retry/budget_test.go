package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/retry"
)

// good is a call that succeeds at once, and so earns.
func good(b *retry.Budget) error {
	return retry.Do(context.Background(), retry.Policy{Budget: b}, func(context.Context) error { return nil })
}

// bad is a call that fails every attempt and may retry n times without
// waiting: it returns how many retries the Budget allowed it.
func bad(b *retry.Budget, n int) (retries int, err error) {
	calls := 0
	err = retry.Do(context.Background(), retry.Policy{Schedule: noWait(n), Budget: b}, func(context.Context) error {
		calls++
		return errFault
	})
	return calls - 1, err
}

// drain spends every whole retry b holds.
func drain(t *testing.T, b *retry.Budget) {
	t.Helper()
	if _, err := bad(b, 1000); !errors.Is(err, retry.ErrBudget) {
		t.Fatalf("draining a Budget: %v, want it to end on ErrBudget", err)
	}
}

// TestBudgetDefaults: the zero Budget holds 10 retries, refuses the 11th
// with ErrBudget and the last error kept, and earns 0.2 a call that
// succeeds: five buy one whole retry, exactly. Its room grows with the
// calls that earned (Ratio/2 × them, each fading by e every 10 seconds),
// and fades when they stop, the new Budget's 10 with it, to one retry.
func TestBudgetDefaults(t *testing.T) {
	synctest.Test(t, testBudgetDefaults)
}

func testBudgetDefaults(t *testing.T) {
	var b retry.Budget
	if got := b.Tokens(); got != 10 {
		t.Fatalf("a new Budget holds %v, want 10", got)
	}
	retries, err := bad(&b, 1000)
	var e *retry.Error
	if retries != 10 || !errors.As(err, &e) || e.Cause != retry.ErrBudget || e.Err != errFault || e.Attempts != 11 || b.Tokens() != 0 {
		t.Fatalf("a failing call on a new Budget: %d retries, %v, %v left; want 10, then ErrBudget with the last error kept", retries, err, b.Tokens())
	}
	if err.Error() != "retry: giving up after 11 attempts in 0s (retry: budget exhausted): connection refused" {
		t.Errorf("message %q", err)
	}
	for i := 1; i <= 5; i++ {
		good(&b)
		if got, want := b.Tokens(), float64(i)/5; got != want {
			t.Fatalf("after %d successes: %v, want exactly %v", i, got, want)
		}
	}
	if retries, _ := bad(&b, 1000); retries != 1 {
		t.Fatalf("five successes at 0.2 bought %d retries, want exactly 1", retries)
	}
	// 45 more in the same instant: 9 earned, within the new Budget's 10.
	for range 45 {
		good(&b)
	}
	if got := b.Tokens(); got != 9 {
		t.Fatalf("after 50 successes: %v, want 9", got)
	}
	// 250 more: 300 calls have earned, room for 30 (a tenth of them),
	// which it holds, though they earned 60.
	for range 250 {
		good(&b)
	}
	if got := b.Tokens(); got != 30 {
		t.Fatalf("after 300 successes: %v, want 30", got)
	}
	// 400 more: room for 70, and it holds 70.
	for range 400 {
		good(&b)
	}
	if got := b.Tokens(); got != 70 {
		t.Fatalf("after 700 successes: %v, want 70", got)
	}
	// Ten seconds without a call. The room was last reckoned at the 640th
	// earning call (every 64th reckons; reading Tokens does not), so the
	// 640 weigh 640/e, and the 60 since, taken as spread evenly over the
	// 10s, 60 × (1 − 1/e): room for 27.337.
	time.Sleep(10 * time.Second)
	if got, want := b.Tokens(), math.Floor((640/math.E+60*(1-1/math.E))*100)/1000; got != want {
		t.Fatalf("10s after the last success: %v, want %v", got, want)
	}
	// A minute more: room for one retry, and no more.
	time.Sleep(time.Minute)
	if got := b.Tokens(); got != 1 {
		t.Fatalf("70s after the last success: %v, want 1", got)
	}
	if retries, _ := bad(&b, 1000); retries != 1 || b.Tokens() != 0 {
		t.Fatalf("a Budget back at its least room: %d retries, %v left; want 1, 0", retries, b.Tokens())
	}
	// A new Budget left alone after its first use (reading Tokens is
	// none): its 10 fade, by e every 10 seconds, to 1.
	var idle retry.Budget
	good(&idle)
	time.Sleep(10 * time.Second)
	if got, want := idle.Tokens(), math.Floor(10000/math.E)/1000; got != want {
		t.Fatalf("a new Budget 10s later: %v, want %v", got, want)
	}
	time.Sleep(time.Minute)
	if got := idle.Tokens(); got != 1 {
		t.Fatalf("a new Budget 70s later: %v, want 1", got)
	}
	// The last thousandth is earned too.
	thin := &retry.Budget{Ratio: 0.001, Burst: 1}
	bad(thin, 1)
	for range 999 {
		good(thin)
	}
	if thin.Tokens() != 0.999 {
		t.Fatalf("999 successes at 0.001: %v, want 0.999", thin.Tokens())
	}
	good(thin)
	if thin.Tokens() != 1 {
		t.Fatalf("1000 successes at 0.001: %v, want 1", thin.Tokens())
	}
}

// lucky is a call that fails its first n attempts and then succeeds,
// allowed n retries without waiting: it returns how many it made.
func lucky(b *retry.Budget, n int) (retries int, err error) {
	calls := 0
	err = retry.Do(context.Background(), retry.Policy{Schedule: noWait(n), Budget: b}, func(context.Context) error {
		if calls++; calls <= n {
			return errFault
		}
		return nil
	})
	return calls - 1, err
}

// TestBudgetGivesBackWhatSucceeds: bad luck costs nothing. A retry whose
// attempt succeeds, or ends on an error not worth retrying, is given back
// as the call returns, and the call earns; a retry that failed is not,
// even in a call that then succeeds; a call that gives up keeps every
// retry it took. Each retry given back makes room for 3 more while it is
// recent, fading as the calls do.
func TestBudgetGivesBackWhatSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{Burst: 2}
		for i := range 20 { // a new Budget's 2, and 20 calls that each fail once
			if n, err := lucky(b, 1); n != 1 || err != nil {
				t.Fatalf("call %d, failing once: %d retries, %v; want 1, nil", i+1, n, err)
			}
		}
		if got := b.Tokens(); got != 2 {
			t.Fatalf("20 calls saved by a retry each: %v held, want the 2 it started with", got)
		}
		// Failing twice: the first retry failed and is spent, the second
		// is given back, and the call earns 0.2.
		if n, err := lucky(b, 2); n != 2 || err != nil || b.Tokens() != 1.2 {
			t.Fatalf("a call failing twice: %d retries, %v, %v held; want 2, nil, 1.2", n, err, b.Tokens())
		}
		// Permanent after a retry: given back, and earned.
		calls := 0
		retry.Do(context.Background(), retry.Policy{Schedule: noWait(3), Budget: b}, func(context.Context) error {
			if calls++; calls == 1 {
				return errFault
			}
			return retry.Permanent(errFault)
		})
		if got := b.Tokens(); calls != 2 || got != 1.4 {
			t.Fatalf("a fault, then a Permanent error: %d calls, %v held; want 2, 1.4", calls, got)
		}
		// GiveUp after a retry: not given back, nothing earned.
		calls = 0
		retry.Do(context.Background(), retry.Policy{Schedule: noWait(3), Budget: b}, func(context.Context) error {
			if calls++; calls == 1 {
				return errFault
			}
			return retry.GiveUp(errFault)
		})
		if got := b.Tokens(); calls != 2 || got != 0.4 {
			t.Fatalf("a fault, then GiveUp: %d calls, %v held; want 2, 0.4", calls, got)
		}
	})
	// The room luck makes: a Budget whose Burst has faded (100s idle)
	// and whose 60 calls make room for 6 holds 10 after 5 retries given
	// back (3 each, up to Burst), which ten quiet seconds do not fade, as
	// the calls' room fades; 1,000 calls with no bad luck fade it.
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{}
		b.Allow()
		time.Sleep(100 * time.Second)
		for range 60 {
			good(b)
		}
		// The first of them, reckoned first after the quiet, counts as
		// spread over it: (1 − e⁻¹⁰)/10 of a call.
		if got, want := b.Tokens(), math.Floor(100*(59+(1-math.Exp(-10))/10))/1000; got != want {
			t.Fatalf("60 successes on a Budget 100s old: %v held, want their room, %v", got, want)
		}
		for range 5 {
			lucky(b, 1)
		}
		for range 20 {
			good(b)
		}
		if got := b.Tokens(); got != 10 {
			t.Fatalf("5 retries given back, then 20 successes: %v held, want the room of the luck, 10 (the calls' is 8.5)", got)
		}
		time.Sleep(10 * time.Second)
		if got := b.Tokens(); got != 10 {
			t.Fatalf("10s later: %v held, want 10 still: luck fades by calls, not time", got)
		}
		time.Sleep(time.Hour)
		for range 1000 {
			good(b)
		}
		time.Sleep(time.Hour)
		if got := b.Tokens(); got != 1 {
			t.Fatalf("an hour, 1,000 successes without bad luck, an hour: %v held, want 1", got)
		}
	})
}

// TestBudgetFields: each field read to three places, the rest dropped; zero the default;
// negative or NaN none; +Inf Burst never refuses.
func TestBudgetFields(t *testing.T) {
	const most = float64(1<<52) / 1000 // milliMax: the most a Budget counts
	for _, tt := range []struct {
		b       *retry.Budget
		tokens  float64
		retries int     // of a failing call allowed 100
		earned  float64 // by one success, after
	}{
		{&retry.Budget{}, 10, 10, 0.2},
		{&retry.Budget{Burst: 3, Ratio: 0.25}, 3, 3, 0.25},
		{&retry.Budget{Burst: 2.5}, 2.5, 2, 0.2},
		{&retry.Budget{Burst: 1.0004}, 1, 1, 0.2},
		{&retry.Budget{Burst: 0.9999}, 0.999, 0, 0},  // the fourth place dropped: never more than given
		{&retry.Budget{Burst: 1.001}, 1.001, 1, 0.2}, // 1000.9999999999999 thousandths in float64: read as written
		{&retry.Budget{Burst: 0.999}, 0.999, 0, 0},   // full: nothing to earn
		{&retry.Budget{Burst: -1}, 0, 0, 0.1},        // no room of its own: the one call's, Ratio/2
		{&retry.Budget{Burst: math.NaN()}, 0, 0, 0.1},
		{&retry.Budget{Ratio: -1}, 10, 10, 0},
		{&retry.Budget{Ratio: math.NaN()}, 10, 10, 0},
		{&retry.Budget{Ratio: 0.0004}, 10, 10, 0},
		{&retry.Budget{Ratio: 0.0005}, 10, 10, 0},
		{&retry.Budget{Ratio: 0.0019}, 10, 10, 0.001},
		{&retry.Budget{Ratio: math.Inf(1), Burst: 4}, 4, 4, most / 2}, // the room of one call, Ratio/2
		{&retry.Budget{PerSecond: -5}, 10, 10, 0.2},
		{&retry.Budget{Burst: math.Inf(1)}, math.Inf(1), 100, 0},
		{&retry.Budget{Burst: 1e300}, math.Inf(1), 100, 0},
		{&retry.Budget{Burst: 4.5e12}, 4.5e12, 100, 0.2}, // about the largest Burst counted, 2^52 thousandths
		{&retry.Budget{Burst: 4.51e12}, math.Inf(1), 100, 0},
		{&retry.Budget{Burst: -0.5}, 0, 0, 0.1},
		{&retry.Budget{Ratio: -0.5}, 10, 10, 0},
	} {
		synctest.Test(t, func(t *testing.T) {
			b, name := tt.b, fields(tt.b)
			if got := b.Tokens(); got != tt.tokens {
				t.Errorf("%s: Tokens() = %v, want %v", name, got, tt.tokens)
			}
			retries, _ := bad(b, 100)
			if retries != tt.retries {
				t.Errorf("%s: %d retries of 100, want %d", name, retries, tt.retries)
			}
			before := b.Tokens()
			good(b)
			if got := b.Tokens() - before; !(math.Abs(got-tt.earned) < 1e-9*max(before, 1) || math.IsInf(before, 1)) {
				t.Errorf("%s: a success earned %v, want %v", name, got, tt.earned)
			}
		})
	}
}

// TestBudgetNegativeRatio: a Ratio below zero earns nothing, however
// little below: it never spends on a success.
func TestBudgetNegativeRatio(t *testing.T) {
	b := &retry.Budget{Ratio: -0.5, Burst: 20}
	bad(b, 5)
	good(b)
	if got := b.Tokens(); got != 15 {
		t.Fatalf("Ratio -0.5, 5 retries spent, then a success: %v left, want 15", got)
	}
}

// TestBudgetWhichCallsEarn: a success, a Permanent error and a Retryable
// that says no earn; the limits, the deadline rule, a refusal, a done
// context and GiveUp earn nothing.
func TestBudgetWhichCallsEarn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{Burst: 5}
		drain(t, b)
		do := func(ctx context.Context, p retry.Policy, fn func(context.Context) error) {
			p.Budget = b
			retry.Do(ctx, p, fn)
		}
		fail := func(context.Context) error { return errFault }
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		soon, cancel2 := context.WithTimeout(context.Background(), time.Second)
		defer cancel2()
		for _, tt := range []struct {
			name string
			call func()
			earn bool
		}{
			{"success", func() { do(context.Background(), retry.Policy{}, func(context.Context) error { return nil }) }, true},
			{"success after a retry", func() {
				n := 0
				do(context.Background(), retry.Policy{Schedule: noWait(3)}, func(context.Context) error {
					if n++; n == 1 {
						return errFault
					}
					return nil
				})
			}, true},
			{"Permanent", func() {
				do(context.Background(), retry.Policy{}, func(context.Context) error { return retry.Permanent(errFault) })
			}, true},
			{"Retryable says no", func() {
				do(context.Background(), retry.Policy{Retryable: func(error) bool { return false }}, fail)
			}, true},
			{"GiveUp", func() {
				do(context.Background(), retry.Policy{}, func(context.Context) error { return retry.GiveUp(errFault) })
			}, false},
			{"MaxElapsed", func() {
				do(context.Background(), retry.Policy{Schedule: backoff.Schedule{Curve: constant(time.Second, 0).Curve, MaxElapsed: 1}}, fail)
			}, false},
			{"MaxRetries of 1", func() {
				do(context.Background(), retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: 1}}, fail)
			}, false},
			{"the deadline rule", func() { do(soon, retry.Policy{Schedule: constant(time.Hour, 3)}, fail) }, false},
			{"a done context, before fn", func() { do(cancelled, retry.Policy{}, func(context.Context) error { return nil }) }, false},
			{"a context ended by fn", func() {
				ctx, cancel := context.WithCancel(context.Background())
				do(ctx, retry.Policy{}, func(context.Context) error { cancel(); return errFault })
			}, false},
			{"the Budget refuses", func() { do(context.Background(), retry.Policy{Schedule: noWait(5)}, fail) }, false},
		} {
			drain(t, b)
			if tt.name == "success after a retry" {
				for range 10 { // one whole retry, to be spent by the call
					good(b)
				}
			}
			before := b.Tokens()
			tt.call()
			after := b.Tokens()
			want := before
			switch {
			case tt.name == "success after a retry": // taken, given back, and earned
				want = before + 0.2
			case tt.earn:
				want = before + 0.2
			}
			if math.Abs(after-want) > 1e-9 {
				t.Errorf("%s: tokens %v → %v, want %v", tt.name, before, after, want)
			}
		}
	})
}

// TestBudgetSpentLast: no retry is taken when another rule gives up first,
// and none is given back when a wait is cut short.
func TestBudgetSpentLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{Burst: 5}
		fail := func(context.Context) error { return errFault }
		soon, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for _, p := range []retry.Policy{
			{Schedule: backoff.Schedule{Curve: constant(time.Second, 0).Curve, MaxElapsed: 1}, Budget: b}, // the limits say no
			{Schedule: constant(time.Hour, 3), Budget: b},                                                 // the deadline rule says no
			{Schedule: noWait(3), Budget: b, Retryable: func(error) bool { return false }},                // not retryable
		} {
			ctx := context.Background()
			if p.Schedule.Curve.BaseDelay == time.Hour {
				ctx = soon
			}
			retry.Do(ctx, p, fail)
			if b.Tokens() != 5 {
				t.Fatalf("%v: %v tokens left, want 5: no retry was made", p, b.Tokens())
			}
		}
		ctx, cancel2 := context.WithCancel(context.Background())
		go func() { time.Sleep(time.Millisecond); cancel2() }()
		retry.Do(ctx, retry.Policy{Schedule: constant(time.Hour, 3), Budget: b}, fail)
		if b.Tokens() != 4 {
			t.Fatalf("a wait cut short: %v tokens left, want 4: the retry was taken, and not given back", b.Tokens())
		}
	})
}

// TestBudgetBound: over any interval from a to a+T, the retries a Budget
// allows are at most its room at a, max(Burst, Ratio/2 × the calls that
// earned before a + 3 × the retries given back before a + PerSecond ×
// 10s), plus PerSecond×T, Ratio × the calls that earned in it and the
// retries given back in it, exactly, in thousandths, for random runs of
// calls at random moments of virtual time, some failing every attempt,
// some failing a few and then succeeding; and what it holds is never
// above max(Burst, Ratio/2 × the calls that earned, each weighing
// e^(−age/10s)), for calls evenly spread.
func TestBudgetBound(t *testing.T) {
	for _, b := range []*retry.Budget{
		{},
		{Ratio: 0.5, Burst: 3},
		{Ratio: 0.1, Burst: 10, PerSecond: 2},
		{Ratio: 0.001, Burst: 1, PerSecond: 0.001},
		{Ratio: -1, Burst: 4, PerSecond: 0.7},
		{Ratio: 0.3, Burst: -1, PerSecond: 5},
		{Ratio: 1.5, Burst: 2.5, PerSecond: -3},
	} {
		synctest.Test(t, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(max(b.Burst, 0)*1000)))
			type event struct {
				at      time.Duration
				earned  bool
				retries int
				back    bool // its last retry was given back
			}
			var events []event
			budget := &retry.Budget{Ratio: b.Ratio, Burst: b.Burst, PerSecond: b.PerSecond}
			start := time.Now()
			for range 600 {
				time.Sleep(time.Duration(r.ExpFloat64() * float64(300*time.Millisecond)))
				e := event{at: time.Since(start)}
				switch r.IntN(3) {
				case 0:
					e.retries, _ = bad(budget, r.IntN(40))
				case 1:
					good(budget)
					e.earned = true
				default:
					n, err := lucky(budget, 1+r.IntN(3))
					e.retries, e.earned, e.back = n, err == nil, err == nil
				}
				events = append(events, e)
			}
			// Each field as the doc reads it: zero the default, below zero none.
			milli := func(x, def float64) int64 {
				if x == 0 {
					x = def
				}
				return int64(math.Round(max(x, 0) * 1000))
			}
			burst, ratio, rate := milli(b.Burst, 10), milli(b.Ratio, 0.2), milli(b.PerSecond, 0)
			var before, backBefore int64 // the calls that earned, and the retries given back, before event i
			for i := range events {
				var retries, earned, back int64
				for j := i; j < len(events); j++ {
					retries += int64(events[j].retries)
					if events[j].earned {
						earned++
					}
					if events[j].back {
						back++
					}
					// The calls of [i, j] lie in an interval of length at - at_i.
					room := max(burst, ratio*before/2+3000*backBefore+10*rate)
					bound := room + rate*int64(events[j].at-events[i].at)/int64(time.Second) + ratio*earned + 1000*back
					if 1000*retries > bound {
						t.Fatalf("%s: calls %d to %d, over %v: %d retries allowed, more than the bound %.3f", fields(b), i, j, events[j].at-events[i].at, retries, float64(bound)/1000)
					}
				}
				if events[i].earned {
					before++
				}
				if events[i].back {
					backBefore++
				}
			}
		})
	}
	// Evenly spread, the fading count is exact: at 100 calls a second for
	// a minute, room for 0.1 each, it holds what the last ten seconds'
	// thousand or so calls make room for, Σ e^(−k/1000) over 6,000 calls
	// ≈ 1000.5.
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{}
		for range 6000 {
			time.Sleep(10 * time.Millisecond)
			good(b)
		}
		var sum float64
		for k := range 6000 {
			sum += math.Exp(-float64(k) / 1000)
		}
		if got, want := b.Tokens(), 0.1*sum; math.Abs(got-want) > 0.1 {
			t.Fatalf("a minute at 100 successes a second: %v held, want about %.3f", got, want)
		}
	})
}

// TestBudgetPerSecond: the clock earns pro rata, keeping what is short of
// a thousandth for later, up to Burst.
func TestBudgetPerSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{Ratio: -1, Burst: 3, PerSecond: 2}
		drain(t, b)
		b.Tokens() // the clock earns from the first read
		time.Sleep(750 * time.Millisecond)
		if got := b.Tokens(); got != 1.5 {
			t.Fatalf("750ms at 2/s: %v, want 1.5", got)
		}
		time.Sleep(time.Hour)
		if got := b.Tokens(); got != 20 {
			t.Fatalf("an hour at 2/s: %v, want what 10s of it earns, 20", got)
		}
		// A refill too large to count, a huge PerSecond over hours, fills
		// the Budget to the most it counts, 2^52 thousandths, and no more.
		huge := &retry.Budget{Ratio: -1, Burst: 3, PerSecond: 1e12}
		drain(t, huge)
		time.Sleep(10 * time.Hour)
		if got := huge.Tokens(); got != float64(1<<52)/1000 {
			t.Fatalf("10 hours at 1e12/s: %v, want 2^52 thousandths", got)
		}
		// 0.001 a second, read every 100ms: each read earns a tenth of a
		// thousandth, which is kept, so that 1000 seconds earn one retry.
		slow := &retry.Budget{Ratio: -1, Burst: 1, PerSecond: 0.001}
		drain(t, slow)
		for range 10000 {
			time.Sleep(100 * time.Millisecond)
			slow.Tokens()
		}
		if got := slow.Tokens(); got != 1 {
			t.Fatalf("1000s at 0.001/s, read every 100ms: %v, want 1", got)
		}
		// A thousandth is earned in the nanosecond it is due, not one
		// before.
		drain(t, slow)
		slow.Tokens()
		time.Sleep(time.Second - 1)
		if got := slow.Tokens(); got != 0 {
			t.Fatalf("a nanosecond short of a second at 0.001/s: %v, want 0", got)
		}
		time.Sleep(time.Nanosecond)
		if got := slow.Tokens(); got != 0.001 {
			t.Fatalf("a second at 0.001/s: %v, want 0.001", got)
		}
	})
}

// TestBudgetConcurrent: 64 goroutines on one Budget, under -race: it never
// holds less than 0 or more than Ratio × the calls that earned (or Burst),
// and never allows more retries than it held and earned.
func TestBudgetConcurrent(t *testing.T) {
	b := &retry.Budget{Burst: 20, Ratio: 0.2}
	var retries, earned atomic.Int64
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for i := range 200 {
				if (g+i)%3 == 0 {
					n, _ := bad(b, 3)
					retries.Add(int64(n))
				} else {
					good(b)
					earned.Add(1)
				}
				if tokens, most := b.Tokens(), max(20, float64(earned.Load()+64)/5); tokens < 0 || tokens > most {
					t.Errorf("Tokens() = %v, want within [0, %v]", tokens, most)
				}
			}
		})
	}
	wg.Wait()
	if limit := 20 + earned.Load()/5; retries.Load() > limit {
		t.Fatalf("%d retries allowed, more than Burst + Ratio × %d successes = %d", retries.Load(), earned.Load(), limit)
	}
	if retries.Load() < 20 {
		t.Fatalf("%d retries allowed, fewer than the Burst it started with", retries.Load())
	}
}

// TestBudgetAllocs: a call that succeeds at once with a Budget allocates
// nothing, full or not.
func TestBudgetAllocs(t *testing.T) {
	b := &retry.Budget{}
	p := retry.Policy{Budget: b}
	fn := func(context.Context) error { return nil }
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { retry.Do(ctx, p, fn) }); n != 0 {
		t.Errorf("Do with a full Budget: %v allocations, want 0", n)
	}
	drain(t, b)
	if n := testing.AllocsPerRun(100, func() { retry.Do(ctx, p, fn) }); n != 0 {
		t.Errorf("Do with an empty Budget: %v allocations, want 0", n)
	}
}

// TestGiveUp: Do gives up at once on a GiveUp error, whatever Retryable
// says, through %w and errors.Join, keeping the message and the chain.
func TestGiveUp(t *testing.T) {
	if retry.GiveUp(nil) != nil {
		t.Fatal("GiveUp(nil) != nil")
	}
	for _, err := range []error{
		retry.GiveUp(errFault),
		fmt.Errorf("fetching: %w", retry.GiveUp(errFault)),
		errors.Join(errors.New("x"), retry.GiveUp(errFault)),
		retry.After(time.Second, retry.GiveUp(errFault)),
	} {
		calls, asked := 0, 0
		got := retry.Do(context.Background(), retry.Policy{Schedule: noWait(5), Retryable: func(error) bool { asked++; return true }},
			func(context.Context) error { calls++; return err })
		if e := asError(t, got); calls != 1 || asked != 0 || e.Cause != nil || !errors.Is(got, errFault) {
			t.Errorf("%v: %d calls, Retryable asked %d times, %v; want 1 call, Retryable not asked, errFault in the chain", err, calls, asked, got)
		}
	}
	if g := retry.GiveUp(errFault); g.Error() != errFault.Error() || !errors.Is(g, errFault) || retry.IsPermanent(g) {
		t.Errorf("GiveUp(err): message %q, Is %v, IsPermanent %v; want err's message, err in its chain, not Permanent", g, errors.Is(g, errFault), retry.IsPermanent(g))
	}
}

// fields names a Budget's configuration, without copying its state.
func fields(b *retry.Budget) string {
	return fmt.Sprintf("Budget{Ratio: %v, Burst: %v, PerSecond: %v}", b.Ratio, b.Burst, b.PerSecond)
}

// TestBudgetRoomByAge: the room counts each earning call by its age, even
// when no retry comes between: 10,000 successes in a second and then an
// idle spell leave the room of 10,000 calls faded by e every 10 seconds
// (it once spread them over the idle spell, and allowed 98 after 100s);
// and 10,000 in the second after an hour's quiet make room for about a
// thousand (it once allowed 2).
func TestBudgetRoomByAge(t *testing.T) {
	busy := func(b *retry.Budget) {
		for i := range 10000 {
			good(b)
			if i%100 == 99 {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	for _, idle := range []time.Duration{0, 10 * time.Second, 100 * time.Second, time.Hour} {
		synctest.Test(t, func(t *testing.T) {
			b := &retry.Budget{}
			busy(b)
			time.Sleep(idle)
			allowed := 0
			for b.Allow() {
				allowed++
			}
			// The room at the end of the busy second, 1,000 less what the
			// second's own fading and the 64-call reckoning take, faded.
			want := max(1, 1000*math.Exp(-idle.Seconds()/10))
			if float64(allowed) > want+1 || float64(allowed) < 0.9*want-1 {
				t.Errorf("10,000 successes in a second, then %v idle: %d retries allowed, want about %.0f", idle, allowed, want)
			}
		})
	}
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{}
		b.Allow()
		time.Sleep(time.Hour)
		busy(b)
		allowed := 0
		for b.Allow() {
			allowed++
		}
		if allowed < 900 {
			t.Errorf("an hour's quiet, then 10,000 successes in a second: %d retries allowed, want about 1,000", allowed)
		}
	})
}

// TestBudgetTokensReadOnly: reading the gauge, as a /debug/vars scrape or
// an OpenTelemetry collection does, changes nothing the Budget allows
// after: the same calls, read or not, get the same retries.
func TestBudgetTokensReadOnly(t *testing.T) {
	retries := func(read bool) (n int) {
		synctest.Test(t, func(t *testing.T) {
			b := &retry.Budget{Burst: -1, Ratio: 1}
			for range 10 {
				good(b)
			}
			if read {
				b.Tokens()
			}
			time.Sleep(10 * time.Second)
			n, _ = bad(b, 100)
		})
		return n
	}
	if unread, read := retries(false), retries(true); unread != read {
		t.Errorf("retries allowed: %d with the gauge unread, %d after one read", unread, read)
	}
}
