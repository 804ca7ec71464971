package retry_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/retry"
)

// doubling is 1s, 2s, 4s, … exactly.
var doubling = backoff.Value{BaseDelay: time.Second, JitterMode: backoff.JitterNone}

// TestLoopWaits: the first Wait at once, each later one the Schedule's next
// wait; Attempt counts the trues.
func TestLoopWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loop := retry.NewLoop(retry.Policy{Schedule: backoff.Schedule{Curve: doubling}})
		start := time.Now()
		var at []time.Duration
		for loop.Wait(context.Background()) {
			at = append(at, time.Since(start))
			if loop.Attempt() != len(at) {
				t.Fatalf("Attempt() = %d after %d trues", loop.Attempt(), len(at))
			}
			if loop.Err() != nil {
				t.Fatalf("Err() = %v while Wait returns true", loop.Err())
			}
			if len(at) == 5 {
				break
			}
		}
		want := []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second}
		if fmt.Sprint(at) != fmt.Sprint(want) {
			t.Fatalf("Wait returned true at %v, want %v", at, want)
		}
	})
}

// TestLoopNoDefaultLimit: unlike Do, a Loop with no limit goes on.
func TestLoopNoDefaultLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loop := retry.NewLoop(retry.Policy{}) // the default curve, no limit
		for loop.Wait(context.Background()) && loop.Attempt() < 100 {
		}
		if loop.Attempt() != 100 || loop.Err() != nil {
			t.Fatalf("zero Policy Loop stopped at attempt %d: %v; want no limit", loop.Attempt(), loop.Err())
		}
	})
}

// TestLoopReset: after Reset the next Wait waits the curve's first wait,
// jittered: not at once, and not the same instant for every loop.
func TestLoopReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loop := retry.NewLoop(retry.Policy{Schedule: backoff.Schedule{Curve: doubling}})
		for range 4 {
			loop.Wait(context.Background()) // 0, 1s, 2s, 4s
		}
		loop.Reset()
		if loop.Attempt() != 0 || loop.Err() != nil {
			t.Fatalf("after Reset: Attempt %d, Err %v; want 0, nil", loop.Attempt(), loop.Err())
		}
		start := time.Now()
		loop.Wait(context.Background())
		if time.Since(start) != time.Second || loop.Attempt() != 1 {
			t.Fatalf("Wait after Reset took %v, Attempt %d; want the curve's first wait, 1s, and 1", time.Since(start), loop.Attempt())
		}

		// Full jitter: each loop's first wait after Reset lies in [0, 1s],
		// and a fleet's are spread.
		distinct := map[time.Duration]bool{}
		for range 100 {
			loop := retry.NewLoop(retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: time.Second}}})
			loop.Wait(context.Background())
			loop.Wait(context.Background())
			loop.Reset()
			start := time.Now()
			loop.Wait(context.Background())
			d := time.Since(start)
			if d < 0 || d > time.Second {
				t.Fatalf("first wait after Reset = %v, want in [0, 1s]", d)
			}
			distinct[d] = true
		}
		if len(distinct) < 90 {
			t.Fatalf("100 loops reset together wait %d distinct times: they reconnect together", len(distinct))
		}

		// Reset before the first Wait leaves the first Wait at once.
		loop = retry.NewLoop(retry.Policy{Schedule: backoff.Schedule{Curve: doubling}})
		loop.Reset()
		start = time.Now()
		if !loop.Wait(context.Background()) || time.Since(start) != 0 {
			t.Fatalf("first Wait after an early Reset took %v, want at once", time.Since(start))
		}
	})
}

// TestLoopOverride: the next wait is d, above MaxDelay too; then the curve
// goes on where it was.
func TestLoopOverride(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		curve := doubling
		curve.MaxDelay = 4 * time.Second
		loop := retry.NewLoop(retry.Policy{Schedule: backoff.Schedule{Curve: curve}})
		loop.Wait(context.Background())
		loop.Override(10 * time.Second)
		var gaps []time.Duration
		for range 3 {
			start := time.Now()
			loop.Wait(context.Background())
			gaps = append(gaps, time.Since(start))
		}
		loop.Override(-time.Second)
		start := time.Now()
		loop.Wait(context.Background())
		gaps = append(gaps, time.Since(start))
		if want := "[10s 1s 2s 0s]"; fmt.Sprint(gaps) != want {
			t.Fatalf("waits %v, want %v", gaps, want)
		}
	})
}

// TestLoopStops: each way a Loop ends, with Err saying why, at once when
// it should be, and sticky until Reset.
func TestLoopStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cause := errors.New("shutting down")
		for _, tt := range []struct {
			name     string
			p        retry.Policy
			ctx      func() (context.Context, func())
			trues    int
			took     time.Duration // from the last true to the false
			want     error
			attempts int
		}{
			{"MaxRetries", retry.Policy{Schedule: backoff.Schedule{Curve: doubling, MaxRetries: 2}}, background, 3, 0, backoff.ErrMaxRetries, 3},
			{"MaxElapsed", retry.Policy{Schedule: backoff.Schedule{Curve: doubling, MaxElapsed: 5 * time.Second}}, background, 3, 0, backoff.ErrMaxElapsed, 3},
			{"context deadline, without waiting", retry.Policy{Schedule: backoff.Schedule{Curve: doubling}}, timeout(5 * time.Second), 3, 0, backoff.ErrDeadline, 3},
			{"cancelled mid-wait, at once", retry.Policy{Schedule: backoff.Schedule{Curve: doubling}}, cancelAt(4*time.Second, cause), 3, time.Second, cause, 3},
			{"cancelled before the first Wait", retry.Policy{}, cancelAt(0, cause), 0, 0, cause, 0},
		} {
			ctx, stop := tt.ctx()
			if tt.name == "cancelled before the first Wait" {
				synctest.Wait()
			}
			loop := retry.NewLoop(tt.p)
			trues := 0
			var last time.Time
			for loop.Wait(ctx) && trues < 1000 { // bounded: a test does not trust the code it tests to end
				trues++
				last = time.Now()
			}
			if trues > 0 && time.Since(last) != tt.took {
				t.Errorf("%s: false came %v after the last true, want %v", tt.name, time.Since(last), tt.took)
			}
			var e *retry.Error
			if !errors.As(loop.Err(), &e) || e.Cause != tt.want || e.Err != nil || e.Attempts != tt.attempts || trues != tt.trues {
				t.Errorf("%s: %d trues, Err() = %#v; want %d trues and an *Error of %d attempts, nil Err, Cause %v", tt.name, trues, loop.Err(), tt.trues, tt.attempts, tt.want)
			}
			if !errors.Is(loop.Err(), tt.want) {
				t.Errorf("%s: errors.Is(Err(), %v) = false", tt.name, tt.want)
			}
			start := time.Now()
			if loop.Wait(context.Background()) || time.Since(start) != 0 {
				t.Errorf("%s: Wait after false returned true or waited: want false at once until Reset", tt.name)
			}
			loop.Reset()
			if loop.Err() != nil {
				t.Errorf("%s: Err() after Reset = %v, want nil", tt.name, loop.Err())
			}
			if tt.name == "MaxRetries" && !loop.Wait(context.Background()) {
				t.Errorf("%s: Wait after Reset = false, want a new sequence", tt.name)
			}
			stop()
		}
	})
}

func background() (context.Context, func()) { return context.Background(), func() {} }

func timeout(d time.Duration) func() (context.Context, func()) {
	return func() (context.Context, func()) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		return ctx, cancel
	}
}

func cancelAt(d time.Duration, cause error) func() (context.Context, func()) {
	return func() (context.Context, func()) {
		ctx, cancel := context.WithCancelCause(context.Background())
		t := time.AfterFunc(d, func() { cancel(cause) })
		return ctx, func() { t.Stop(); cancel(nil) }
	}
}

// TestLoopDeadlineEdge: a wait ending exactly at the deadline is started.
func TestLoopDeadlineEdge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		loop := retry.NewLoop(retry.Policy{Schedule: backoff.Schedule{Curve: doubling}})
		loop.Wait(ctx) // at once
		loop.Wait(ctx) // 1s
		start := time.Now()
		loop.Wait(ctx) // 2s, ending at the deadline: started
		if time.Since(start) != 2*time.Second {
			t.Fatalf("a wait ending exactly at the deadline took %v, want 2s", time.Since(start))
		}
	})
}

// TestLoopHooks: OnRetry before each wait with a nil Err, never after the
// Loop stops; the Logger gets "retrying" and one "giving up".
func TestLoopHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []retry.Event
		var log strings.Builder
		p := retry.Policy{
			Schedule: backoff.Schedule{Curve: doubling, MaxRetries: 2},
			OnRetry:  func(e retry.Event) { events = append(events, e) },
			Logger:   slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{ReplaceAttr: dropTime})),
		}
		loop := retry.NewLoop(p)
		waitOut(context.Background(), loop)
		want := []retry.Event{{Attempt: 1, Wait: time.Second}, {Attempt: 2, Wait: 2 * time.Second, Elapsed: time.Second}}
		if fmt.Sprint(events) != fmt.Sprint(want) {
			t.Fatalf("events %+v, want %+v", events, want)
		}
		wantLog := `level=INFO msg=retrying attempt=1 wait=1s elapsed=0s
level=INFO msg=retrying attempt=2 wait=2s elapsed=1s
level=WARN msg="giving up" attempts=3 elapsed=3s cause="backoff: no retries left"
`
		if log.String() != wantLog {
			t.Fatalf("log:\n%s\nwant:\n%s", log.String(), wantLog)
		}
		// After a Reset, the attempt that had succeeded and then ended is 1.
		loop.Reset()
		events = nil
		loop.Wait(context.Background())
		if len(events) != 1 || events[0].Attempt != 1 || events[0].Wait != time.Second || events[0].Elapsed != 0 {
			t.Fatalf("event after Reset %+v, want attempt 1, the curve's first wait, elapsed from the Reset", events)
		}
	})
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// TestLoopWaitAllocs: a Loop waits on one timer, however many waits, and
// a wait of zero allocates nothing.
func TestLoopWaitAllocs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loop := retry.NewLoop(retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: time.Millisecond, Multiplier: 1}}})
		loop.Wait(context.Background())
		loop.Wait(context.Background()) // the timer is made here
		if n := testing.AllocsPerRun(50, func() { loop.Wait(context.Background()) }); n != 0 {
			t.Errorf("Loop.Wait with its timer made: %v allocations a wait, want 0", n)
		}
		loop = retry.NewLoop(retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}}})
		if n := testing.AllocsPerRun(50, func() { loop.Wait(context.Background()) }); n != 0 {
			t.Errorf("Loop.Wait, no wait: %v allocations, want 0", n)
		}
	})
}

// TestPolicyText: String writes the curve a Policy uses, UnmarshalText
// reads it back into Schedule and leaves the code alone.
func TestPolicyText(t *testing.T) {
	var zero retry.Policy
	if got, want := zero.String(), "200ms×2 up to 30s, full jitter"; got != want {
		t.Errorf("Policy{}.String() = %q, want %q (the default curve; Do's 5 retries are not text)", got, want)
	}
	if b, err := zero.MarshalText(); string(b) != zero.String() || err != nil {
		t.Errorf("MarshalText() = %q, %v; want String's form", b, err)
	}
	onRetry := func(retry.Event) {}
	retryable := func(error) bool { return false }
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	src := rand.New(rand.NewPCG(1, 1))
	deadline := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	budget := &retry.Budget{}
	p := retry.Policy{OnRetry: onRetry, Retryable: retryable, Logger: logger, Budget: budget}
	p.Schedule.Rand, p.Schedule.Deadline = src, deadline
	if err := p.UnmarshalText([]byte("1s x1.5 up to 1m, equal jitter, 4 retries, 2m of waiting")); err != nil {
		t.Fatal(err)
	}
	if got, want := p.String(), "1s×1.5 up to 1m0s, equal jitter, 4 retries, 2m0s of waiting"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if p.OnRetry == nil || p.Retryable == nil || p.Logger != logger || p.Budget != budget || p.Schedule.Rand != src || !p.Schedule.Deadline.Equal(deadline) {
		t.Errorf("UnmarshalText changed what is not text: %+v", p)
	}
	before := p.String()
	// A typo, and text that is not UTF-8 (which panicked: issue 21).
	for _, text := range []string{"1s, fulll jitter", strings.Repeat("\xb5", 41)} {
		if err := p.UnmarshalText([]byte(text)); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", text)[1:10]) {
			t.Errorf("UnmarshalText(%q) = %v, want an error quoting it", text, err)
		}
		if p.String() != before {
			t.Errorf("UnmarshalText(%q) changed the Policy: %q", text, p.String())
		}
	}
	// "no wait" reads as a Policy that never waits, not as the zero Curve,
	// which means the default.
	if err := p.UnmarshalText([]byte("no wait, 3 retries")); err != nil || p.String() != "no wait, full jitter, 3 retries" || p.Schedule.Curve.BaseDelay >= 0 {
		t.Errorf(`"no wait, 3 retries" reads as %q (BaseDelay %v), %v; want a Policy that never waits`, p.String(), p.Schedule.Curve.BaseDelay, err)
	}
	// "uncapped", or no ceiling at all, is a MaxDelay of math.MaxInt64, not
	// a zero one, which means 30s.
	for _, text := range []string{"1s uncapped", "1s×2", "1s"} {
		if err := p.UnmarshalText([]byte(text)); err != nil || p.Schedule.Curve.MaxDelay != math.MaxInt64 || p.String() != "1s×2 uncapped, full jitter" {
			t.Errorf("%q reads as %q (MaxDelay %v), %v; want uncapped", text, p.String(), p.Schedule.Curve.MaxDelay, err)
		}
	}
	// Each zero field of a Curve is the default's, in String as in the
	// waits.
	for _, tt := range []struct {
		curve backoff.Value
		want  string
	}{
		{backoff.Value{MaxDelay: time.Second}, "200ms×2 up to 1s, full jitter"},
		{backoff.Value{BaseDelay: time.Second}, "1s×2 up to 30s, full jitter"},
		{backoff.Value{JitterMode: 99}, "200ms×2 up to 30s, full jitter"},
		{backoff.Value{JitterMode: backoff.JitterNone}, "200ms×2 up to 30s, no jitter"},
		{backoff.Value{BaseDelay: -1, MaxDelay: time.Second}, "no wait, full jitter"},
		{backoff.Value{BaseDelay: time.Second, MaxDelay: -1}, "1s×2 uncapped, full jitter"},
		{backoff.Value{BaseDelay: time.Second, MaxDelay: math.MaxInt64}, "1s×2 uncapped, full jitter"},
	} {
		p := retry.Policy{Schedule: backoff.Schedule{Curve: tt.curve, MaxRetries: 2}}
		if got := p.String(); got != tt.want+", 2 retries" {
			t.Errorf("Policy with Curve %+v: String() = %q, want %q", tt.curve, got, tt.want+", 2 retries")
		}
	}
}

// TestPolicyTextSameWaitsEverywhere is issue 21's eleventh fault: a text
// read by backoff.Schedule and put in a Policy waited by the Policy's
// defaults where the text left a zero ("no wait, 3 retries" waited
// "200ms×2 up to 30s"; "20s, no jitter, 3 retries" was held at 30s). The
// same text gives the same waits in the Schedule, in a Policy that holds
// that Schedule, and in a Policy that read it, in virtual time.
func TestPolicyTextSameWaitsEverywhere(t *testing.T) {
	for _, tt := range []struct {
		text  string
		waits []time.Duration
	}{
		{"no wait, 3 retries", []time.Duration{0, 0, 0}},
		{"20s, no jitter, 3 retries", []time.Duration{20 * time.Second, 40 * time.Second, 80 * time.Second}},
	} {
		var s backoff.Schedule
		var read retry.Policy
		if err := s.UnmarshalText([]byte(tt.text)); err != nil {
			t.Fatal(err)
		}
		if err := read.UnmarshalText([]byte(tt.text)); err != nil {
			t.Fatal(err)
		}
		policies := map[string]retry.Policy{"a Policy holding it": {Schedule: s}, "a Policy reading it": read}
		var own []time.Duration
		for d, ok := s.Next(); ok; d, ok = s.Next() {
			own = append(own, d)
		}
		if fmt.Sprint(own) != fmt.Sprint(tt.waits) {
			t.Errorf("%q: the Schedule waits %v, want %v", tt.text, own, tt.waits)
		}
		for name, p := range policies {
			if p.String() != s.String() {
				t.Errorf("%q in %s: String() = %q, want the Schedule's %q", tt.text, name, p.String(), s.String())
			}
			t.Run(tt.text+" in "+name, func(t *testing.T) { // synctest.Test ends the test it fails
				synctest.Test(t, func(t *testing.T) {
					var waits []time.Duration
					p.OnRetry = func(e retry.Event) { waits = append(waits, e.Wait) }
					_ = retry.Do(context.Background(), p, func(context.Context) error { return errFault })
					if fmt.Sprint(waits) != fmt.Sprint(tt.waits) {
						t.Errorf("%q in %s: Do waits %v, want %v", tt.text, name, waits, tt.waits)
					}
				})
			})
		}
	}
}

// TestPolicyTextRoundTrip: what String writes reads back as a Policy with
// the same waits, the same Bounds at every attempt, for curves with every
// field zero, negative, huge or hostile.
func TestPolicyTextRoundTrip(t *testing.T) {
	durations := []time.Duration{math.MinInt64, -time.Second, -1, 0, 1, time.Millisecond, time.Second, time.Minute, 1 << 62, math.MaxInt64}
	floats := []float64{math.NaN(), math.Inf(1), -1, 0, 0.5, 1, 1.5, 2, 3}
	modes := []backoff.JitterMode{backoff.JitterFull, backoff.JitterEqual, backoff.JitterDecorrelated, backoff.JitterAdditive, backoff.JitterNone, backoff.JitterSymmetric, 6, 255}
	for _, mode := range modes {
		for _, base := range durations {
			for _, ceiling := range durations {
				for _, m := range floats {
					p := retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: base, MaxDelay: ceiling, Multiplier: m, Jitter: m / 4, JitterMode: mode}, MaxRetries: 3}}
					text, _ := p.MarshalText()
					var got retry.Policy
					if err := got.UnmarshalText(text); err != nil {
						t.Fatalf("UnmarshalText(%q) = %v, for %+v", text, err, p.Schedule.Curve)
					}
					if got.String() != string(text) {
						t.Fatalf("%q reads back as %q", text, got.String())
					}
					for _, attempt := range []int{1, 2, 3, 10, 70} {
						if lo, hi := effective(p).Bounds(attempt); fmt.Sprint(effective(got).Bounds(attempt)) != fmt.Sprint(lo, hi) {
							t.Fatalf("%+v, written %q: attempt %d draws from [%v, %v] before, %v after", p.Schedule.Curve, text, attempt, lo, hi, fmt.Sprint(effective(got).Bounds(attempt)))
						}
					}
				}
			}
		}
	}
}

// effective is the curve a Policy waits by, as the package doc says: each
// zero field the default's.
func effective(p retry.Policy) backoff.Value {
	c := p.Schedule.Curve
	if c.BaseDelay == 0 {
		c.BaseDelay = 200 * time.Millisecond
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = 30 * time.Second
	}
	return c
}

// TestPolicyFlagAndJSON: a Policy is one flag, or one JSON string.
func TestPolicyFlagAndJSON(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var p retry.Policy
	fs.TextVar(&p, "retry", retry.Policy{}, "retry policy")
	if err := fs.Parse([]string{"-retry", "50ms×3 up to 5s, decorrelated jitter, 7 retries"}); err != nil {
		t.Fatal(err)
	}
	if p.Schedule.MaxRetries != 7 || p.Schedule.Curve.JitterMode != backoff.JitterDecorrelated {
		t.Errorf("flag.TextVar: %v", p)
	}
	// "0 retries" cannot mean none; the error says what leaving it out
	// means for Do, not only "no limit", which here is 5 retries.
	if err := fs.Parse([]string{"-retry", "50ms, 0 retries"}); err == nil || !strings.Contains(err.Error(), "retry.Do then stops after 5") || strings.Contains(err.Error(), "out for no limit)") {
		t.Errorf("flag with 0 retries: %v, want an error that says Do's default of 5", err)
	}
	var config struct{ Retry retry.Policy }
	if err := json.Unmarshal([]byte(`{"Retry": "1s, 2 retries"}`), &config); err != nil || config.Retry.Schedule.MaxRetries != 2 {
		t.Errorf("json: %v, %v", config.Retry, err)
	}
	if b, err := json.Marshal(config); err != nil || string(b) != `{"Retry":"1s×2 uncapped, full jitter, 2 retries"}` {
		t.Errorf("json.Marshal = %s, %v", b, err)
	}
}

// TestLoopEnds: a Loop with no wait and a limit stops, under a watchdog: a
// loop that kept returning true would never end.
func TestLoopEnds(t *testing.T) {
	loop := retry.NewLoop(retry.Policy{Schedule: noWait(3)})
	trues := 0
	for loop.Wait(context.Background()) && trues < 100 {
		trues++
	}
	if trues != 4 || !errors.Is(loop.Err(), backoff.ErrMaxRetries) {
		t.Errorf("noWait(3): %d trues, Err %v; want 4 and ErrMaxRetries", trues, loop.Err())
	}
}

// TestLoopHookAlone: OnRetry without a Logger, and a Logger without
// OnRetry, each hear every wait.
func TestLoopHookAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var waits []time.Duration
		loop := retry.NewLoop(retry.Policy{Schedule: backoff.Schedule{Curve: doubling, MaxRetries: 2}, OnRetry: func(e retry.Event) { waits = append(waits, e.Wait) }})
		waitOut(context.Background(), loop)
		if fmt.Sprint(waits) != "[1s 2s]" {
			t.Errorf("OnRetry alone heard %v, want [1s 2s]", waits)
		}
		var log strings.Builder
		loop = retry.NewLoop(retry.Policy{Schedule: backoff.Schedule{Curve: doubling, MaxRetries: 2}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
		waitOut(context.Background(), loop)
		if n := strings.Count(log.String(), "msg=retrying"); n != 2 {
			t.Errorf("a Logger alone got %d retry records, want 2:\n%s", n, log.String())
		}
	})
}

// TestLoopZeroWaitNoTimer: a Loop whose waits are zero never makes a timer;
// one of a nanosecond waits it.
func TestLoopZeroWaitNoTimer(t *testing.T) {
	p := retry.Policy{Schedule: noWait(0)}
	ctx := context.Background()
	one := testing.AllocsPerRun(50, func() { retry.NewLoop(p).Wait(ctx) })
	many := testing.AllocsPerRun(50, func() {
		l := retry.NewLoop(p)
		for range 5 {
			l.Wait(ctx)
		}
	})
	if many != one {
		t.Errorf("a Loop with zero waits: %v allocations for 5 Waits, %v for 1: want no timer", many, one)
	}
	synctest.Test(t, func(t *testing.T) {
		l := retry.NewLoop(retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: 1, Multiplier: 1, JitterMode: backoff.JitterNone}}})
		start := time.Now()
		for range 3 {
			l.Wait(ctx)
		}
		if time.Since(start) != 2 {
			t.Errorf("3 Waits of a 1ns Loop took %v, want 2ns", time.Since(start))
		}
	})
}

// waitOut calls Wait until it returns false, 1,000 times at most, and
// returns how many times it returned true: a test's loop does not trust the
// code it tests to end.
func waitOut(ctx context.Context, loop *retry.Loop) int {
	n := 0
	for n < 1000 && loop.Wait(ctx) {
		n++
	}
	return n
}

// TestLoopIgnoresBudget: a Loop is one long sequence, which its own limits
// bound: it spends nothing from Policy.Budget, even one that holds none.
func TestLoopIgnoresBudget(t *testing.T) {
	none := &retry.Budget{Burst: -1}
	loop := retry.NewLoop(retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: 3}, Budget: none})
	n := 0
	for n < 10 && loop.Wait(context.Background()) {
		n++
	}
	if n != 4 || !errors.Is(loop.Err(), backoff.ErrMaxRetries) {
		t.Fatalf("a Loop of 3 retries on an empty Budget: %d Waits, Err %v; want 4, ended by MaxRetries", n, loop.Err())
	}
}
