package retry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/retry"
)

// Every test that waits runs in a synctest bubble: time is virtual, a wait
// of a minute takes none, and time.Now inside the bubble starts at
// 2000-01-01 00:00:00 UTC.

var errFault = errors.New("connection refused")

// constant is a Schedule of n retries that waits d each time, exactly.
func constant(d time.Duration, n int) backoff.Schedule {
	return backoff.Schedule{Curve: backoff.Value{BaseDelay: d, MaxDelay: d, Multiplier: 1, JitterMode: backoff.JitterNone}, MaxRetries: n}
}

// noWait is a Schedule of n retries that does not wait: a negative
// BaseDelay, since a zero one means the default, 200ms.
func noWait(n int) backoff.Schedule {
	return backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: n}
}

// recorder is an operation that fails with the errors it is given, in turn,
// then succeeds, recording when each call started (virtual time since the
// recorder was made) and how long it takes.
type recorder struct {
	t0    time.Time
	errs  []error
	took  time.Duration // each call takes this long, in virtual time
	calls []time.Duration
}

func newRecorder(took time.Duration, errs ...error) *recorder {
	return &recorder{t0: time.Now(), errs: errs, took: took}
}

func (r *recorder) fn(ctx context.Context) error {
	r.calls = append(r.calls, time.Since(r.t0))
	if r.took > 0 {
		time.Sleep(r.took)
	}
	if i := len(r.calls) - 1; i < len(r.errs) {
		return r.errs[i]
	}
	return nil
}

func repeat(err error, n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// asError returns err as a *retry.Error, failing the test if it is not one.
func asError(t *testing.T, err error) *retry.Error {
	t.Helper()
	var e *retry.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T): want a *retry.Error", err, err)
	}
	return e
}

func TestDoSucceedsAtOnce(t *testing.T) {
	calls := 0
	err := retry.Do(context.Background(), retry.Policy{}, func(context.Context) error { calls++; return nil })
	if err != nil || calls != 1 {
		t.Fatalf("Do(succeeds at once) = %v after %d calls, want nil after 1", err, calls)
	}
}

// TestDoPassesContext: fn is called with Do's own ctx, not a derived one.
func TestDoPassesContext(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "v")
	var got context.Context
	retry.Do(ctx, retry.Policy{}, func(ctx context.Context) error { got = ctx; return nil })
	if got != ctx {
		t.Fatalf("fn got ctx %v, want Do's own", got)
	}
}

// TestDoContextDoneFirst: with ctx already done, fn is not called and Do
// returns context.Cause(ctx) as is, the one bare context error.
func TestDoContextDoneFirst(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("shutting down")
	cancel(cause)
	called := false
	err := retry.Do(ctx, retry.Policy{}, func(context.Context) error { called = true; return nil })
	if called || err != cause {
		t.Fatalf("Do(done ctx) = %v, called %v; want the cause %v as is, fn not called", err, called, cause)
	}
	v, err := retry.DoValue(ctx, retry.Policy{}, func(context.Context) (int, error) { called = true; return 7, nil })
	if called || err != cause || v != 0 {
		t.Fatalf("DoValue(done ctx) = %v, %v, called %v; want 0, %v", v, err, called, cause)
	}
	ctx, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if err := retry.Do(ctx, retry.Policy{}, func(context.Context) error { return nil }); err != context.Canceled {
		t.Fatalf("Do(cancelled ctx) = %v, want context.Canceled as is", err)
	}
}

// TestDoRule1ContextDecides: once ctx is done, Do gives up, with the last
// error and the context's cause both in the chain, and Retryable is not
// asked.
func TestDoRule1ContextDecides(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		cause := errors.New("user pressed ^C")
		asked := 0
		p := retry.Policy{
			Schedule:  constant(time.Second, 10),
			Retryable: func(error) bool { asked++; return true },
		}
		calls := 0
		err := retry.Do(ctx, p, func(ctx context.Context) error {
			calls++
			if calls == 2 {
				cancel(cause) // the context ends during the second attempt
				return fmt.Errorf("query: %w", context.Cause(ctx))
			}
			return errFault
		})
		e := asError(t, err)
		if calls != 2 || asked != 1 {
			t.Fatalf("calls %d, Retryable asked %d times; want 2 and 1 (not after ctx ended)", calls, asked)
		}
		if e.Cause != cause || !errors.Is(err, cause) || e.Attempts != 2 {
			t.Fatalf("Error %+v: want Cause %v, 2 attempts", e, cause)
		}
	})
}

// TestDoRule1ForeignCancel: an error matching context.Canceled while ctx is
// live came from another context (an inner timeout, a request's own), and
// is an ordinary fault: it is retried.
func TestDoRule1ForeignCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner, cancel := context.WithCancel(context.Background())
		cancel()
		r := newRecorder(0, inner.Err(), context.DeadlineExceeded, fmt.Errorf("attempt: %w", context.Canceled))
		err := retry.Do(context.Background(), retry.Policy{Schedule: constant(time.Second, 5)}, r.fn)
		if err != nil || len(r.calls) != 4 {
			t.Fatalf("Do = %v after %d calls; want nil after 4: another context's error is retried", err, len(r.calls))
		}
	})
}

// TestDoRule2Permanent: a Permanent error is never retried, whatever
// Retryable says, through %w and errors.Join; Retryable's no ends it too.
func TestDoRule2Permanent(t *testing.T) {
	perm := retry.Permanent(errors.New("401 Unauthorized"))
	for _, err := range []error{
		perm,
		fmt.Errorf("building the request: %w", perm),
		errors.Join(errFault, perm),
		fmt.Errorf("outer: %w", errors.Join(errors.New("a"), fmt.Errorf("b: %w", perm))),
		retry.After(time.Second, perm),
	} {
		asked := 0
		p := retry.Policy{Schedule: constant(time.Second, 5), Retryable: func(error) bool { asked++; return true }}
		calls := 0
		got := retry.Do(context.Background(), p, func(context.Context) error { calls++; return err })
		e := asError(t, got)
		if calls != 1 || asked != 0 || e.Cause != nil || e.Err != err || !errors.Is(got, perm) {
			t.Errorf("Do(%v): %d calls, Retryable asked %d, Error %+v; want 1 call, not asked, Cause nil, Err as returned", err, calls, asked, e)
		}
	}
	var seen error
	p := retry.Policy{Schedule: constant(time.Second, 5), Retryable: func(err error) bool { seen = err; return false }}
	calls := 0
	got := retry.Do(context.Background(), p, func(context.Context) error { calls++; return errFault })
	if e := asError(t, got); calls != 1 || seen != errFault || e.Cause != nil || e.Err != errFault || e.Attempts != 1 {
		t.Errorf("Do, Retryable says no: %d calls, Retryable saw %v, Error %+v; want 1 call, errFault, Cause nil", calls, seen, e)
	}
}

// TestDoRetryableNilRetriesEverything: a package named retry retries.
func TestDoRetryableNilRetriesEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(0, errFault, io.ErrUnexpectedEOF, errors.New("x"))
		if err := retry.Do(context.Background(), retry.Policy{}, r.fn); err != nil || len(r.calls) != 4 {
			t.Fatalf("Do(zero Policy) = %v after %d calls, want nil after 4", err, len(r.calls))
		}
	})
}

// TestDoRule3After: a wait After names replaces the computed one, exactly,
// above MaxDelay too, and the curve does not advance.
func TestDoRule3After(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := backoff.Schedule{Curve: backoff.Value{BaseDelay: time.Second, MaxDelay: 4 * time.Second, JitterMode: backoff.JitterNone}, MaxRetries: 10}
		r := newRecorder(0, errFault, retry.After(7*time.Second, errFault), fmt.Errorf("wrapped: %w", retry.After(-time.Second, errFault)), errFault, errFault)
		var waits []time.Duration
		p := retry.Policy{Schedule: s, OnRetry: func(e retry.Event) { waits = append(waits, e.Wait) }}
		if err := retry.Do(context.Background(), p, r.fn); err != nil {
			t.Fatal(err)
		}
		want := []time.Duration{time.Second, 7 * time.Second, 0, 2 * time.Second, 4 * time.Second}
		if fmt.Sprint(waits) != fmt.Sprint(want) {
			t.Fatalf("waits %v, want %v: an override replaces one wait and the curve goes on where it was", waits, want)
		}
		var at []time.Duration
		var sum time.Duration
		for _, w := range append([]time.Duration{0}, want...) {
			sum += w
			at = append(at, sum)
		}
		if fmt.Sprint(r.calls) != fmt.Sprint(at) {
			t.Fatalf("attempts at %v, want %v", r.calls, at)
		}
	})
}

// TestDoRule3ScheduleSaysNo: the Schedule's refusal ends Do, with its reason
// as Cause; the hook ran once per wait and never after the final attempt.
func TestDoRule3ScheduleSaysNo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tt := range []struct {
			name     string
			s        backoff.Schedule
			errs     []error
			attempts int
			cause    error
			deadline time.Duration // from the start of the row, when set
		}{
			{"MaxRetries", constant(time.Second, 3), repeat(errFault, 10), 4, backoff.ErrMaxRetries, 0},
			{"MaxElapsed", backoff.Schedule{Curve: constant(time.Second, 0).Curve, MaxElapsed: 3500 * time.Millisecond}, repeat(errFault, 10), 4, backoff.ErrMaxElapsed, 0},
			{"After past MaxElapsed", backoff.Schedule{Curve: constant(time.Second, 0).Curve, MaxElapsed: time.Minute}, []error{errFault, retry.After(time.Hour, errFault)}, 2, backoff.ErrMaxElapsed, 0},
			{"After past MaxRetries", constant(time.Second, 1), []error{errFault, retry.After(time.Second, errFault)}, 2, backoff.ErrMaxRetries, 0},
			{"Schedule.Deadline", backoff.Schedule{Curve: constant(time.Second, 0).Curve}, repeat(errFault, 10), 3, backoff.ErrDeadline, 2500 * time.Millisecond},
		} {
			start := time.Now()
			if tt.deadline != 0 {
				tt.s.Deadline = start.Add(tt.deadline)
			}
			r := newRecorder(0, tt.errs...)
			hooks := 0
			p := retry.Policy{Schedule: tt.s, OnRetry: func(e retry.Event) {
				hooks++
				if e.Attempt != hooks {
					t.Errorf("%s: OnRetry #%d got Attempt %d", tt.name, hooks, e.Attempt)
				}
			}}
			err := retry.Do(context.Background(), p, r.fn)
			e := asError(t, err)
			if e.Attempts != tt.attempts || len(r.calls) != tt.attempts || e.Cause != tt.cause || !errors.Is(err, tt.cause) {
				t.Errorf("%s: Error %+v after %d calls; want %d attempts, Cause %v", tt.name, e, len(r.calls), tt.attempts, tt.cause)
			}
			if hooks != tt.attempts-1 {
				t.Errorf("%s: OnRetry called %d times for %d attempts, want %d: never after the final attempt", tt.name, hooks, tt.attempts, tt.attempts-1)
			}
			if e.Err != tt.errs[tt.attempts-1] || !errors.Is(err, errFault) {
				t.Errorf("%s: Err %v, want the last error fn returned", tt.name, e.Err)
			}
			if e.Elapsed != time.Since(start) {
				t.Errorf("%s: Elapsed %v, want %v", tt.name, e.Elapsed, time.Since(start))
			}
		}
	})
}

// TestDoRule4DeadlineFastFailure: the case, a 1.5s context, a fast
// failure, then a 2s wait: Do returns the real error at once, not a bare
// context.DeadlineExceeded 1.5s later.
func TestDoRule4DeadlineFastFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		start := time.Now()
		hooks := 0
		p := retry.Policy{Schedule: constant(2*time.Second, 5), OnRetry: func(retry.Event) { hooks++ }}
		err := retry.Do(ctx, p, func(context.Context) error { return errFault })
		e := asError(t, err)
		if time.Since(start) != 0 {
			t.Fatalf("Do returned after %v, want at once", time.Since(start))
		}
		if e.Err != errFault || e.Cause != backoff.ErrDeadline || e.Attempts != 1 || hooks != 0 {
			t.Fatalf("Error %+v, %d hooks; want Err %v, Cause ErrDeadline, 1 attempt, no hook", e, hooks, errFault)
		}
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, errFault) {
			t.Fatalf("errors.Is(%v, DeadlineExceeded / the fault) = false, want both", err)
		}
		if ctx.Err() != nil {
			t.Fatalf("ctx ended before Do returned: Do slept into the deadline")
		}
	})
}

// TestDoRule4DeadlineSlowAttempt: the attempt took 400ms; a wait of 300ms
// at 400ms would leave 300ms of a 1s budget, less than the attempt needs:
// give up now. With attempts of 100ms the same wait fits, and Do retries.
func TestDoRule4DeadlineSlowAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r := newRecorder(400*time.Millisecond, repeat(errFault, 10)...)
		err := retry.Do(ctx, retry.Policy{Schedule: constant(300*time.Millisecond, 5)}, r.fn)
		e := asError(t, err)
		if len(r.calls) != 1 || e.Cause != backoff.ErrDeadline || e.Elapsed != 400*time.Millisecond {
			t.Fatalf("slow attempt: %d calls, Error %+v; want 1 call, ErrDeadline, 400ms", len(r.calls), e)
		}

		ctx, cancel = context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r = newRecorder(100*time.Millisecond, repeat(errFault, 10)...)
		err = retry.Do(ctx, retry.Policy{Schedule: constant(300*time.Millisecond, 5)}, r.fn)
		e = asError(t, err)
		// 0–100 fail, wait to 400, 400–500 fail, wait to 800: 800+100 ≤ 1000,
		// so attempt 3 runs to 900; then 900+300+100 > 1000.
		if len(r.calls) != 3 || e.Cause != backoff.ErrDeadline || e.Elapsed != 900*time.Millisecond {
			t.Fatalf("fast attempts: %d calls at %v, Error %+v; want 3, ErrDeadline at 900ms", len(r.calls), r.calls, e)
		}
	})
}

// TestDoRule4Edge: a wait and attempt that end exactly at the deadline are
// started; a nanosecond more is not. A wait near math.MaxInt64 does not
// wrap into one that fits.
func TestDoRule4Edge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tt := range []struct {
			wait  time.Duration
			calls int
		}{{time.Second - 200*time.Millisecond, 2}, {time.Second - 200*time.Millisecond + 1, 1}} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			r := newRecorder(100*time.Millisecond, errFault)
			retry.Do(ctx, retry.Policy{Schedule: constant(tt.wait, 5)}, r.fn)
			if len(r.calls) != tt.calls {
				t.Errorf("wait %v after a 100ms attempt, 1s deadline: %d calls, want %d", tt.wait, len(r.calls), tt.calls)
			}
			cancel()
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		r := newRecorder(time.Millisecond, retry.After(math.MaxInt64, errFault))
		err := retry.Do(ctx, retry.Policy{Schedule: constant(time.Second, 5)}, r.fn)
		if e := asError(t, err); e.Cause != backoff.ErrDeadline {
			t.Errorf("After(MaxInt64) under an hour's deadline: Cause %v, want ErrDeadline", e.Cause)
		}
	})
}

// TestDoCancelMidWait: the context ends during a wait; Do returns at once,
// with the last real error and the cause.
func TestDoCancelMidWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		cause := errors.New("shutdown")
		time.AfterFunc(1500*time.Millisecond, func() { cancel(cause) })
		start := time.Now()
		r := newRecorder(0, repeat(errFault, 10)...)
		err := retry.Do(ctx, retry.Policy{Schedule: constant(time.Second, 10)}, r.fn)
		e := asError(t, err)
		if time.Since(start) != 1500*time.Millisecond || len(r.calls) != 2 {
			t.Fatalf("returned after %v and %d calls, want 1.5s and 2", time.Since(start), len(r.calls))
		}
		if e.Err != errFault || e.Cause != cause || e.Attempts != 2 || e.Elapsed != 1500*time.Millisecond {
			t.Fatalf("Error %+v: want Err %v, Cause %v, 2 attempts in 1.5s", e, errFault, cause)
		}
		want := "retry: giving up after 2 attempts in 1.5s (shutdown): connection refused"
		if err.Error() != want {
			t.Fatalf("Error() = %q, want %q", err.Error(), want)
		}
	})
}

// TestDoDeadlineMidWait: a wait that ends exactly at the context's deadline
// is allowed (the attempt took no time). The deadline and the timer fire in
// the same instant, so either the context is seen done first (1 call) or
// an attempt of no time runs at the deadline (2 calls); both end with the
// fault and the deadline in the chain, and no sleeping past it.
func TestDoDeadlineMidWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r := newRecorder(0, repeat(errFault, 10)...)
		err := retry.Do(ctx, retry.Policy{Schedule: constant(time.Second, 10)}, r.fn)
		e := asError(t, err)
		if len(r.calls) > 2 || !errors.Is(err, context.DeadlineExceeded) || e.Err != errFault || e.Elapsed != time.Second {
			t.Fatalf("Error %+v after %d calls; want 1 or 2 calls and the deadline in the chain beside the fault, at 1s", e, len(r.calls))
		}
	})
}

// TestErrorMessage: attempts in the singular and plural, time to three
// digits, the cause only when it adds something.
func TestErrorMessage(t *testing.T) {
	for _, tt := range []struct {
		e    retry.Error
		want string
	}{
		{retry.Error{Err: errFault, Attempts: 4, Elapsed: 7312345678}, "retry: giving up after 4 attempts in 7.31s: connection refused"},
		{retry.Error{Err: errFault, Attempts: 1, Elapsed: 20 * time.Millisecond}, "retry: giving up after 1 attempt in 20ms: connection refused"},
		{retry.Error{Err: errFault, Attempts: 6, Elapsed: 83456 * time.Millisecond, Cause: backoff.ErrMaxRetries}, "retry: giving up after 6 attempts in 1m23.5s (backoff: no retries left): connection refused"},
		{retry.Error{Err: context.Canceled, Attempts: 2, Elapsed: 999, Cause: context.Canceled}, "retry: giving up after 2 attempts in 999ns: context canceled"},
		{retry.Error{Attempts: 3, Elapsed: 1234567, Cause: backoff.ErrDeadline}, "retry: giving up after 3 attempts in 1.23ms (backoff: the next wait would end after the deadline)"},
		{retry.Error{Attempts: 0, Cause: context.Canceled}, "retry: giving up after 0 attempts in 0s (context canceled)"},
		{retry.Error{Err: errFault, Attempts: math.MaxInt, Elapsed: math.MaxInt64}, fmt.Sprintf("retry: giving up after %d attempts in 2561111h6m40s: connection refused", math.MaxInt)},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("%+v.Error() = %q, want %q", tt.e, got, tt.want)
		}
	}
}

func TestErrorUnwrap(t *testing.T) {
	cause := errors.New("cause")
	for _, tt := range []struct {
		e    *retry.Error
		want []error
	}{
		{&retry.Error{}, nil},
		{&retry.Error{Err: errFault}, []error{errFault}},
		{&retry.Error{Cause: cause}, []error{cause}},
		{&retry.Error{Err: errFault, Cause: cause}, []error{errFault, cause}},
	} {
		if got := tt.e.Unwrap(); fmt.Sprint(got) != fmt.Sprint(tt.want) || len(got) != len(tt.want) {
			t.Errorf("%+v.Unwrap() = %v, want %v", tt.e, got, tt.want)
		}
	}
	var target *net
	if err := error(&retry.Error{Err: fmt.Errorf("dial: %w", &net{"refused"}), Cause: backoff.ErrDeadline}); !errors.As(err, &target) || target.s != "refused" {
		t.Errorf("errors.As did not reach the last error through Error")
	}
}

type net struct{ s string }

func (n *net) Error() string { return n.s }

// TestDoValue: fn's value with nil, or the zero T with the error.
func TestDoValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		v, err := retry.DoValue(context.Background(), retry.Policy{Schedule: constant(time.Second, 5)}, func(context.Context) (string, error) {
			calls++
			if calls < 3 {
				return "partial", errFault
			}
			return "ok", nil
		})
		if v != "ok" || err != nil || calls != 3 {
			t.Fatalf("DoValue = %q, %v after %d calls; want ok, nil after 3", v, err, calls)
		}
		v, err = retry.DoValue(context.Background(), retry.Policy{Schedule: constant(time.Second, 2)}, func(context.Context) (string, error) {
			return "partial", errFault
		})
		if v != "" || asError(t, err).Attempts != 3 {
			t.Fatalf("DoValue giving up = %q, %v; want the zero string and an Error of 3 attempts", v, err)
		}
	})
}

// TestNilFunc: a nil fn is an error that says so, not a panic.
func TestNilFunc(t *testing.T) {
	err := retry.Do(context.Background(), retry.Policy{}, nil)
	if err == nil || !strings.Contains(err.Error(), "nil func") {
		t.Errorf("Do(nil) = %v, want an error naming the nil func", err)
	}
	if _, err := retry.DoValue[int](context.Background(), retry.Policy{}, nil); err == nil || !strings.Contains(err.Error(), "nil func") {
		t.Errorf("DoValue(nil) = %v, want an error naming the nil func", err)
	}
}

// TestPanicsReachTheCaller: retry recovers nothing.
func TestPanicsReachTheCaller(t *testing.T) {
	for name, p := range map[string]retry.Policy{
		"fn":        {Schedule: noWait(3)},
		"Retryable": {Schedule: noWait(3), Retryable: func(error) bool { panic("in Retryable") }},
		"OnRetry":   {Schedule: noWait(3), OnRetry: func(retry.Event) { panic("in OnRetry") }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("panic in %s did not reach the caller", name)
				}
			}()
			retry.Do(context.Background(), p, func(context.Context) error {
				if name == "fn" {
					panic("in fn")
				}
				return errFault
			})
		}()
	}
}

// TestZeroPolicy: 6 attempts, waits of full jitter over 200ms×2, never a
// wait above its doubling.
func TestZeroPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for range 50 {
			var waits []time.Duration
			r := newRecorder(0, repeat(errFault, 100)...)
			err := retry.Do(context.Background(), retry.Policy{OnRetry: func(e retry.Event) { waits = append(waits, e.Wait) }}, r.fn)
			if e := asError(t, err); e.Attempts != 6 || e.Cause != backoff.ErrMaxRetries || len(waits) != 5 {
				t.Fatalf("zero Policy: Error %+v, %d waits; want 6 attempts, ErrMaxRetries, 5 waits", e, len(waits))
			}
			for i, w := range waits {
				if hi := 200 * time.Millisecond << i; w < 0 || w > hi {
					t.Fatalf("zero Policy: wait %d = %v, want in [0, %v]", i+1, w, hi)
				}
			}
		}
		// A limit of any kind replaces the default of 5 retries.
		r := newRecorder(0, repeat(errFault, 100)...)
		err := retry.Do(context.Background(), retry.Policy{Schedule: backoff.Schedule{MaxElapsed: time.Minute}}, r.fn)
		if e := asError(t, err); e.Cause != backoff.ErrMaxElapsed || e.Attempts <= 6 {
			t.Fatalf("MaxElapsed 1m only: Error %+v, want more than 6 attempts, ended by MaxElapsed", e)
		}
	})
}

// TestNoWaitIsNoTimer: "no wait, no jitter" retries without waiting, and
// time does not move.
func TestNoWaitIsNoTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p retry.Policy
		if err := p.UnmarshalText([]byte("no wait, no jitter, 3 retries")); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r := newRecorder(0, repeat(errFault, 10)...)
		err := retry.Do(context.Background(), p, r.fn)
		if e := asError(t, err); e.Attempts != 4 || time.Since(start) != 0 {
			t.Fatalf("no wait: Error %+v after %v, want 4 attempts at once", e, time.Since(start))
		}
	})
}

// TestOnRetryEvent: each Event says which attempt failed, with what, the
// wait about to start, and the time so far, in the caller's goroutine.
func TestOnRetryEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []retry.Event
		e1, e2 := errors.New("one"), errors.New("two")
		r := newRecorder(100*time.Millisecond, e1, e2)
		p := retry.Policy{
			Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: time.Second, JitterMode: backoff.JitterNone}, MaxRetries: 5},
			OnRetry:  func(e retry.Event) { events = append(events, e) },
		}
		if err := retry.Do(context.Background(), p, r.fn); err != nil {
			t.Fatal(err)
		}
		want := []retry.Event{
			{Attempt: 1, Err: e1, Wait: time.Second, Elapsed: 100 * time.Millisecond},
			{Attempt: 2, Err: e2, Wait: 2 * time.Second, Elapsed: 1200 * time.Millisecond},
		}
		if fmt.Sprint(events) != fmt.Sprint(want) {
			t.Fatalf("events %+v, want %+v", events, want)
		}
	})
}

// TestLogger: one Info record before each wait, one Warn on giving up, with
// the attributes the doc names; a nil Logger logs nothing and panics not.
func TestLogger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
		p := retry.Policy{Schedule: constant(time.Second, 2), Logger: logger}
		retry.Do(context.Background(), p, func(context.Context) error { return errFault })
		want := `level=INFO msg=retrying attempt=1 wait=1s elapsed=0s err="connection refused"
level=INFO msg=retrying attempt=2 wait=1s elapsed=1s err="connection refused"
level=WARN msg="giving up" attempts=3 elapsed=2s err="connection refused" cause="backoff: no retries left"
`
		if buf.String() != want {
			t.Fatalf("log:\n%s\nwant:\n%s", buf.String(), want)
		}
		buf.Reset()
		p.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError}))
		retry.Do(context.Background(), p, func(context.Context) error { return errFault })
		if buf.Len() != 0 {
			t.Fatalf("a logger at Error level got %q", buf.String())
		}
	})
}

// TestPermanentAndAfter: the marks, their messages, nil and negatives.
func TestPermanentAndAfter(t *testing.T) {
	if retry.Permanent(nil) != nil {
		t.Errorf("Permanent(nil) != nil")
	}
	if retry.IsPermanent(nil) || retry.IsPermanent(errFault) || retry.IsPermanent(retry.After(1, errFault)) {
		t.Errorf("IsPermanent of an unmarked error is true")
	}
	p := retry.Permanent(errFault)
	if !errors.Is(p, errFault) || p.Error() != errFault.Error() || !retry.IsPermanent(p) {
		t.Errorf("Permanent(err): Is %v, message %q, IsPermanent %v", errors.Is(p, errFault), p.Error(), retry.IsPermanent(p))
	}
	if !retry.IsPermanent(fmt.Errorf("a: %w", fmt.Errorf("b: %w", p))) || !retry.IsPermanent(errors.Join(nil, errFault, p)) {
		t.Errorf("IsPermanent lost the mark through %%w or errors.Join")
	}
	a := retry.After(2*time.Second, errFault)
	if !errors.Is(a, errFault) || a.Error() != errFault.Error() {
		t.Errorf("After(2s, err): Is %v, message %q", errors.Is(a, errFault), a.Error())
	}
	if a := retry.After(2*time.Second, nil); a == nil || !strings.Contains(a.Error(), "2s") {
		t.Errorf("After(2s, nil) = %v, want a non-nil error naming 2s", a)
	}
	if a := retry.After(-time.Second, nil); !strings.Contains(a.Error(), " 0s") {
		t.Errorf("After(-1s, nil) = %q, want a wait of 0s", a.Error())
	}
}

// TestAfterFirstInChainWins: with two waits named in one chain, the one
// errors.As would find first is obeyed.
func TestAfterFirstInChainWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tt := range []struct {
			err  error
			want time.Duration
		}{
			{retry.After(3*time.Second, retry.After(5*time.Second, errFault)), 3 * time.Second},
			{errors.Join(errFault, retry.After(4*time.Second, nil), retry.After(5*time.Second, nil)), 4 * time.Second},
			{errors.Join(errFault, fmt.Errorf("x: %w", errFault)), time.Second},
			{fmt.Errorf("%w and %w", errFault, retry.After(6*time.Second, nil)), 6 * time.Second},
			{fmt.Errorf("x: %w", retry.Permanent(errFault)), 0},
		} {
			var got time.Duration
			calls := 0
			retry.Do(context.Background(), retry.Policy{Schedule: constant(time.Second, 1), OnRetry: func(e retry.Event) { got = e.Wait }},
				func(context.Context) error { calls++; return tt.err })
			if got != tt.want {
				t.Errorf("Do(%v): wait %v, want %v", tt.err, got, tt.want)
			}
		}
	})
}

// TestSleep: every rule of Sleep, in virtual time.
func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := retry.Sleep(context.Background(), 3*time.Second); err != nil || time.Since(start) != 3*time.Second {
			t.Fatalf("Sleep(3s) = %v after %v", err, time.Since(start))
		}
		for _, d := range []time.Duration{0, -1, math.MinInt64} {
			start = time.Now()
			if err := retry.Sleep(context.Background(), d); err != nil || time.Since(start) != 0 {
				t.Fatalf("Sleep(%v) = %v after %v, want nil at once", d, err, time.Since(start))
			}
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		cause := errors.New("bye")
		time.AfterFunc(time.Second, func() { cancel(cause) })
		start = time.Now()
		if err := retry.Sleep(ctx, time.Hour); err != cause || time.Since(start) != time.Second {
			t.Fatalf("Sleep(1h), cancelled at 1s = %v after %v, want the cause at 1s", err, time.Since(start))
		}
		for _, d := range []time.Duration{0, -1, time.Second} {
			if err := retry.Sleep(ctx, d); err != cause {
				t.Fatalf("Sleep(done ctx, %v) = %v, want the cause", d, err)
			}
		}
		dctx, dcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer dcancel()
		start = time.Now()
		if err := retry.Sleep(dctx, 2*time.Second+1); err != backoff.ErrDeadline || time.Since(start) != 0 {
			t.Fatalf("Sleep past the deadline = %v after %v, want ErrDeadline at once", err, time.Since(start))
		}
		if err := retry.Sleep(dctx, math.MaxInt64); err != backoff.ErrDeadline {
			t.Fatalf("Sleep(MaxInt64) under a deadline = %v, want ErrDeadline", err)
		}
		if err := retry.Sleep(dctx, time.Second); err != nil || time.Since(start) != time.Second {
			t.Fatalf("Sleep(1s) within the deadline = %v after %v", err, time.Since(start))
		}
		if err := retry.Sleep(dctx, time.Second); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Sleep ending exactly at the deadline = %v, want it started (nil, or the deadline as it fires)", err)
		}
		if time.Since(start) != 2*time.Second {
			t.Fatalf("Sleep ending exactly at the deadline was not started: %v", time.Since(start))
		}
	})
}

// TestSleepAllocs: nothing for d ≤ 0; the timer only otherwise.
func TestSleepAllocs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if n := testing.AllocsPerRun(100, func() { retry.Sleep(ctx, 0); retry.Sleep(ctx, -time.Second) }); n != 0 {
		t.Errorf("Sleep(d ≤ 0): %v allocations, want 0", n)
	}
	synctest.Test(t, func(t *testing.T) {
		timer := testing.AllocsPerRun(20, func() { <-time.NewTimer(time.Millisecond).C })
		if n := testing.AllocsPerRun(20, func() { retry.Sleep(context.Background(), time.Millisecond) }); n > timer {
			t.Errorf("Sleep(1ms): %v allocations, want at most the timer's %v", n, timer)
		}
	})
}

// TestAllocs: nothing on the happy path, nothing per retry without a wait,
// and one timer however many waits.
func TestAllocs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	ok := func(context.Context) error { return nil }
	okValue := func(context.Context) (int, error) { return 1, nil }
	p := retry.Policy{Retryable: func(error) bool { return true }, OnRetry: func(retry.Event) {}}
	for name, f := range map[string]func(){
		"Do":                   func() { retry.Do(context.Background(), retry.Policy{}, ok) },
		"Do, deadline, hooks":  func() { retry.Do(ctx, p, ok) },
		"DoValue":              func() { retry.DoValue(ctx, p, okValue) },
		"IsPermanent":          func() { retry.IsPermanent(errFault) },
		"Policy.UnmarshalText": nil,
	} {
		if f == nil {
			continue
		}
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s, succeeding at once: %v allocations, want 0", name, n)
		}
	}

	// Per retry: the difference between 2 and 12 failures, so that the one
	// Error and the one timer per call cancel out.
	failing := func(n int) func(context.Context) error {
		calls := 0
		return func(context.Context) error {
			if calls++; calls <= n {
				return errFault
			}
			return nil
		}
	}
	allocs := func(p retry.Policy, failures int) float64 {
		var n float64
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			n = testing.AllocsPerRun(20, func() { retry.Do(ctx, p, failing(failures)) })
		})
		return n
	}
	noWaitP := retry.Policy{Schedule: noWait(100), Retryable: func(error) bool { return true }, OnRetry: func(retry.Event) {}}
	waitP := retry.Policy{Schedule: constant(time.Millisecond, 100)}
	if a, b, c := allocs(noWaitP, 0), allocs(noWaitP, 2), allocs(noWaitP, 12); b != a || c != a {
		t.Errorf("retries without a wait: %v allocations for none, %v for 2, %v for 12: want no allocation for them, not even a timer", a, b, c)
	}
	var timer float64
	synctest.Test(t, func(t *testing.T) {
		timer = testing.AllocsPerRun(20, func() { <-time.NewTimer(time.Millisecond).C })
	})
	if a, b, c := allocs(waitP, 2), allocs(waitP, 12), allocs(noWaitP, 2); b != a || a-c > timer {
		t.Errorf("retries with waits: %v allocations for 2, %v for 12, %v without a wait, a timer %v: want one timer however many waits", a, b, c, timer)
	}
}

// TestPolicySharedRace: one Policy, many goroutines, under -race.
func TestPolicySharedRace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		events := 0
		p := retry.Policy{
			Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: time.Millisecond, MaxDelay: 50 * time.Millisecond}, MaxRetries: 8},
			OnRetry:  func(retry.Event) { mu.Lock(); events++; mu.Unlock() },
		}
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				calls := 0
				err := retry.Do(context.Background(), p, func(context.Context) error {
					if calls++; calls <= i%8 {
						return errFault
					}
					return nil
				})
				if err != nil {
					t.Errorf("goroutine %d: %v", i, err)
				}
				loop := retry.NewLoop(p)
				for loop.Wait(context.Background()) && loop.Attempt() < 3 {
				}
			})
		}
		wg.Wait()
		if events == 0 {
			t.Fatal("no retries ran")
		}
		if p.Schedule.Attempt() != 0 {
			t.Fatalf("the shared Policy's Schedule was advanced: Attempt %d", p.Schedule.Attempt())
		}
	})
}

// TestNoGoroutineLeft: Do, Sleep and a Loop start no goroutine, and leave
// none behind on any path.
func TestNoGoroutineLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	synctest.Test(t, func(t *testing.T) {
		inBubble := runtime.NumGoroutine()
		ctx, cancel := context.WithCancel(context.Background())
		seen := 0
		retry.Do(ctx, retry.Policy{Schedule: constant(time.Second, 3)}, func(context.Context) error {
			seen = max(seen, runtime.NumGoroutine())
			return errFault
		})
		time.AfterFunc(500*time.Millisecond, cancel)
		retry.Do(ctx, retry.Policy{Schedule: constant(time.Second, 3)}, func(context.Context) error { return errFault })
		retry.Sleep(context.Background(), time.Second)
		loop := retry.NewLoop(retry.Policy{Schedule: constant(time.Second, 3)})
		waitOut(context.Background(), loop)
		if seen != inBubble || runtime.NumGoroutine() != inBubble {
			t.Errorf("goroutines: %d in the bubble, %d during Do, %d after; want no more", inBubble, seen, runtime.NumGoroutine())
		}
	})
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("goroutines: %d before, %d after", before, after)
	}
}

// TestScheduleRandReproducible: with Rand set, the waits repeat from the seed.
func TestScheduleRandReproducible(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		run := func() []time.Duration {
			var waits []time.Duration
			p := retry.Policy{
				Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: time.Second}, MaxRetries: 6, Rand: rand.New(rand.NewPCG(1, 2))},
				OnRetry:  func(e retry.Event) { waits = append(waits, e.Wait) },
			}
			retry.Do(context.Background(), p, func(context.Context) error { return errFault })
			return waits
		}
		a, b := run(), run()
		if fmt.Sprint(a) != fmt.Sprint(b) || len(a) != 6 {
			t.Fatalf("seeded runs differ: %v and %v", a, b)
		}
	})
}

// modest is an error with an Is method of its own and a wrapped error: the
// walk goes on past it.
type modest struct{ err error }

func (m modest) Error() string { return "modest" }
func (m modest) Is(error) bool { return false }
func (m modest) Unwrap() error { return m.err }

// TestIsPermanentChains: the mark is found wherever it is in the chain, and
// nowhere else; a chain that never ends in it ends the walk.
func TestIsPermanentChains(t *testing.T) {
	p := retry.Permanent(errFault)
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errFault, false},
		{p, true},
		{modest{p}, true},
		{modest{errFault}, false},
		{modest{nil}, false},
		{fmt.Errorf("a: %w", modest{fmt.Errorf("b: %w", p)}), true},
		{errors.Join(errFault, modest{nil}), false},
		{errors.Join(errFault, errors.Join(errFault, p)), true},
		{fmt.Errorf("%w %w", errFault, p), true},
		{fmt.Errorf("%w %w", errFault, errFault), false},
		{retry.After(time.Second, p), true},
		{&retry.Error{Err: errFault, Cause: p}, true},
	} {
		if got := retry.IsPermanent(tt.err); got != tt.want {
			t.Errorf("IsPermanent(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
	if errors.Is(p, io.EOF) || !errors.Is(p, errFault) {
		t.Errorf("errors.Is on Permanent(err) matches only err's chain")
	}
}

// TestOneRetryLimit: a Policy's own limit of 1 retry is its limit, not a
// reason to apply Do's default of 5.
func TestOneRetryLimit(t *testing.T) {
	r := newRecorder(0, repeat(errFault, 10)...)
	err := retry.Do(context.Background(), retry.Policy{Schedule: noWait(1)}, r.fn)
	if e := asError(t, err); e.Attempts != 2 || len(r.calls) != 2 {
		t.Fatalf("MaxRetries 1: %d attempts, want 2", e.Attempts)
	}
}

// TestErrorMessageRounding: three significant digits, rounded at the
// boundary where the unit grows.
func TestErrorMessageRounding(t *testing.T) {
	for _, tt := range []struct {
		elapsed time.Duration
		want    string
	}{
		{999, "999ns"}, {1000, "1µs"}, {1005, "1.01µs"}, {1004, "1µs"}, {12345, "12.3µs"},
		{1000500, "1ms"}, {1005000, "1.01ms"}, {999499999, "999ms"}, {7312345678, "7.31s"},
	} {
		e := &retry.Error{Attempts: 2, Elapsed: tt.elapsed}
		if got, want := e.Error(), "retry: giving up after 2 attempts in "+tt.want; got != want {
			t.Errorf("Elapsed %d: %q, want %q", tt.elapsed, got, want)
		}
	}
}

// TestScheduleNoEndsDo: when the Schedule says no, Do gives up at once,
// without waits to follow, even when no time passes between attempts.
func TestScheduleNoEndsDo(t *testing.T) {
	calls := 0
	err := retry.Do(context.Background(), retry.Policy{Schedule: noWait(3)}, func(context.Context) error { calls++; return errFault })
	if calls != 4 || asError(t, err).Cause != backoff.ErrMaxRetries {
		t.Errorf("noWait(3): %d calls, %v; want 4 and ErrMaxRetries", calls, err)
	}
}

// TestDeadlineZeroWaits: under a deadline, a retry with no wait measures
// each attempt from its own start: attempts of 300ms with 1s fit three.
func TestDeadlineZeroWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r := newRecorder(300*time.Millisecond, repeat(errFault, 10)...)
		err := retry.Do(ctx, retry.Policy{Schedule: noWait(10)}, r.fn)
		if e := asError(t, err); len(r.calls) != 3 || e.Cause != backoff.ErrDeadline || e.Elapsed != 900*time.Millisecond {
			t.Fatalf("%d attempts at %v, %v; want 3, given up at 900ms with ErrDeadline", len(r.calls), r.calls, err)
		}
		// Attempts that take no time, with no wait, always fit.
		ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
		defer cancel2()
		r = newRecorder(0, repeat(errFault, 3)...)
		if err := retry.Do(ctx2, retry.Policy{Schedule: noWait(10)}, r.fn); err != nil || len(r.calls) != 4 {
			t.Fatalf("instant attempts, no wait, under a deadline: %v after %d; want success after 4", err, len(r.calls))
		}
	})
}

// TestShortestWait: a wait of one nanosecond is waited.
func TestShortestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(0, errFault, errFault)
		retry.Do(context.Background(), retry.Policy{Schedule: constant(1, 5)}, r.fn)
		if fmt.Sprint(r.calls) != "[0s 1ns 2ns]" {
			t.Fatalf("1ns waits: attempts at %v", r.calls)
		}
	})
}

// endsAt is a context whose Err turns non-nil at a moment of virtual time,
// while its Done channel never closes: it tells whether Do looks at the
// context after a wait, before the next attempt, whichever case of its
// select won.
type endsAt struct {
	context.Context
	at time.Time
}

func (c endsAt) Done() <-chan struct{} { return nil }
func (c endsAt) Err() error {
	if !time.Now().Before(c.at) {
		return context.Canceled
	}
	return nil
}

// TestNoAttemptOnDeadContext: a context that ends as the wait does is seen
// before fn is called again.
func TestNoAttemptOnDeadContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := endsAt{context.Background(), time.Now().Add(time.Second)}
		r := newRecorder(0, repeat(errFault, 5)...)
		err := retry.Do(ctx, retry.Policy{Schedule: constant(time.Second, 5)}, r.fn)
		if len(r.calls) != 1 || !errors.Is(err, context.Canceled) {
			t.Fatalf("%d attempts, %v; want 1: no attempt once the context has ended", len(r.calls), err)
		}
	})
}

// TestAfterChainsTerminate: the search for a wait named by After ends on
// every shape of chain, found or not. No wait is longer than a nanosecond
// here, so it runs in real time, under a watchdog.
func TestAfterChainsTerminate(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want time.Duration
	}{
		{modest{fmt.Errorf("x: %w", retry.After(1, nil))}, 1},
		{modest{errFault}, 0},
		{modest{nil}, 0},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", errFault)), 0},
		{errors.Join(modest{errFault}, fmt.Errorf("c: %w", retry.After(1, errFault))), 1},
	} {
		var got time.Duration = -1
		retry.Do(context.Background(), retry.Policy{Schedule: noWait(1), OnRetry: func(e retry.Event) { got = e.Wait }},
			func(context.Context) error { return tt.err })
		if got != tt.want {
			t.Errorf("Do(%v): wait %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestSleepShortest: a sleep of one nanosecond is slept.
func TestSleepShortest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := retry.Sleep(context.Background(), 1); err != nil || time.Since(start) != 1 {
			t.Fatalf("Sleep(1ns) = %v after %v, want nil after 1ns", err, time.Since(start))
		}
	})
}

// TestTinyMaxElapsed: a MaxElapsed of a nanosecond is a limit, so Do adds
// no default of 5 retries: with no wait, it retries until fn succeeds.
func TestTinyMaxElapsed(t *testing.T) {
	r := newRecorder(0, repeat(errFault, 10)...)
	p := retry.Policy{Schedule: backoff.Schedule{Curve: noWait(0).Curve, MaxElapsed: 1}}
	if err := retry.Do(context.Background(), p, r.fn); err != nil || len(r.calls) != 11 {
		t.Fatalf("MaxElapsed 1ns, no wait: %v after %d calls; want success after 11", err, len(r.calls))
	}
}

// TestNoAttemptAfterZeroWaitOnDoneContext: an OnRetry that cancels ctx
// before a wait of zero ends Do there; fn never sees a done ctx.
func TestNoAttemptAfterZeroWaitOnDoneContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls, dead := 0, 0
	err := retry.Do(ctx, retry.Policy{Schedule: noWait(3), OnRetry: func(retry.Event) { cancel() }}, func(ctx context.Context) error {
		calls++
		if ctx.Err() != nil {
			dead++
		}
		return errFault
	})
	if e := asError(t, err); calls != 1 || dead != 0 || e.Cause != context.Canceled || e.Err != errFault {
		t.Fatalf("%d calls, %d on a done ctx, %v; want 1 call and the cancellation as Cause, errFault kept", calls, dead, err)
	}
}

// TestNoAttemptOnDeadlineAtTheWaitsEnd: a wait that ends in the instant the
// deadline passes is followed by no attempt, whichever of the timer and the
// context the select saw first.
func TestNoAttemptOnDeadlineAtTheWaitsEnd(t *testing.T) {
	for range 20 { // the select picks at random between two ready cases
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			calls, dead := 0, 0
			err := retry.Do(ctx, retry.Policy{Schedule: constant(time.Second, 3)}, func(ctx context.Context) error {
				calls++
				if ctx.Err() != nil {
					dead++
				}
				return errFault
			})
			if e := asError(t, err); calls != 1 || dead != 0 || !errors.Is(e, context.DeadlineExceeded) {
				t.Fatalf("%d calls, %d on a done ctx, %v; want 1 call and the deadline in the chain", calls, dead, err)
			}
		})
	}
}

// TestNilContext: a nil ctx is an error that says so, from every call that
// takes one, and fn is not called; nothing panics.
func TestNilContext(t *testing.T) {
	called := false
	//lint:ignore SA1012 the nil ctx is the point of the test
	err := retry.Do(nil, retry.Policy{}, func(context.Context) error { called = true; return nil })
	if err == nil || called || !strings.Contains(err.Error(), "nil Context") {
		t.Errorf("Do(nil ctx) = %v, called %v; want an error naming the nil Context, fn not called", err, called)
	}
	//lint:ignore SA1012 the nil ctx is the point of the test
	v, err := retry.DoValue(nil, retry.Policy{}, func(context.Context) (int, error) { called = true; return 1, nil })
	if err == nil || called || v != 0 {
		t.Errorf("DoValue(nil ctx) = %v, %v, called %v; want 0 and an error, fn not called", v, err, called)
	}
	//lint:ignore SA1012 the nil ctx is the point of the test
	if err := retry.Sleep(nil, time.Hour); err == nil || !strings.Contains(err.Error(), "nil Context") {
		t.Errorf("Sleep(nil ctx) = %v, want an error naming the nil Context", err)
	}
	loop := retry.NewLoop(retry.Policy{})
	//lint:ignore SA1012 the nil ctx is the point of the test
	if loop.Wait(nil) || loop.Err() == nil || !strings.Contains(loop.Err().Error(), "nil Context") {
		t.Errorf("Loop.Wait(nil ctx) = true or Err %v; want false and an Err naming the nil Context", loop.Err())
	}
}

// TestZeroCurveFieldsTakeDefaults: a Curve that sets MaxDelay but not
// BaseDelay waits 200ms×2 up to it, not 0 in a tight loop.
func TestZeroCurveFieldsTakeDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{MaxDelay: time.Second, JitterMode: backoff.JitterNone}, MaxRetries: 4}}
		r := newRecorder(0, repeat(errFault, 10)...)
		retry.Do(context.Background(), p, r.fn)
		if got := fmt.Sprint(r.calls); got != "[0s 200ms 600ms 1.4s 2.4s]" {
			t.Fatalf("MaxDelay 1s alone: attempts at %v, want [0s 200ms 600ms 1.4s 2.4s]", got)
		}
		loop := retry.NewLoop(retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{MaxDelay: time.Second}}})
		start, n := time.Now(), 0
		for n < 1000 && loop.Wait(context.Background()) {
			n++
		}
		if time.Since(start) < 100*time.Second {
			t.Fatalf("a Loop on MaxDelay 1s alone: 1000 Waits in %v of virtual time, want about 500s", time.Since(start))
		}
	})
}

// TestZeroLoop: a Loop declared, not made by NewLoop, is NewLoop(Policy{}):
// the first Wait at once, later ones on the default curve, for as long as
// ctx lasts.
func TestZeroLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var loop retry.Loop
		start := time.Now()
		if !loop.Wait(ctx) || time.Since(start) != 0 || loop.Attempt() != 1 {
			t.Fatalf("first Wait of a zero Loop: took %v, Attempt %d; want true at once, 1", time.Since(start), loop.Attempt())
		}
		start = time.Now()
		if !loop.Wait(ctx) || time.Since(start) > 200*time.Millisecond {
			t.Fatalf("second Wait of a zero Loop took %v, want at most 200ms", time.Since(start))
		}
		n := 2
		for n < 1000 && loop.Wait(ctx) {
			n++
		}
		if e := loop.Err(); n >= 1000 || !errors.Is(e, backoff.ErrDeadline) {
			t.Fatalf("a zero Loop under a minute's deadline: %d Waits, Err %v; want it to stop at the deadline", n, e)
		}
		var o retry.Loop // Override and Reset before the first Wait are kept
		o.Override(time.Hour)
		o.Wait(ctx)
		if o.Wait(ctx) || !errors.Is(o.Err(), backoff.ErrDeadline) {
			t.Fatalf("a zero Loop overridden to an hour under a minute's deadline: Err %v, want ErrDeadline", o.Err())
		}
	})
}

// TestLoopNeverTrueOnDoneContext: a wait that ends as the deadline passes,
// and a zero wait whose hook ended ctx, both return false.
func TestLoopNeverTrueOnDoneContext(t *testing.T) {
	for range 20 { // the select picks at random between two ready cases
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			loop := retry.NewLoop(retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: time.Second, Multiplier: 1, JitterMode: backoff.JitterNone}}})
			loop.Wait(ctx)
			if loop.Wait(ctx) || ctx.Err() == nil || !errors.Is(loop.Err(), context.DeadlineExceeded) {
				t.Fatalf("Wait as the deadline passed = true or Err %v; want false, with the deadline", loop.Err())
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loop := retry.NewLoop(retry.Policy{Schedule: noWait(0), OnRetry: func(retry.Event) { cancel() }})
	loop.Wait(ctx)
	if loop.Wait(ctx) || !errors.Is(loop.Err(), context.Canceled) {
		t.Fatalf("zero wait after a hook that cancelled: Wait = true or Err %v; want false, cancelled", loop.Err())
	}
}

// deadlineOnly reports a deadline its Done never enforces (Done is nil),
// which the Context contract allows.
type deadlineOnly struct {
	context.Context
	d time.Time
}

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.d, true }

// TestDeadlineWithNoDone: Sleep to a deadline whose context has no Done
// channel returns when the wait is over: it waited on that nil channel
// for ever.
func TestDeadlineWithNoDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := deadlineOnly{context.Background(), time.Now().Add(time.Second)}
		if err := retry.Sleep(ctx, time.Second); err != nil {
			t.Fatalf("Sleep to a deadline with no Done: %v, want nil", err)
		}
	})
}
