// Package retry calls a function until it succeeds, waiting between attempts
// as a [backoff.Schedule] says, and gives up with the last real error.
//
// Most code needs one call:
//
//	err := retry.Do(ctx, retry.Policy{}, func(ctx context.Context) error {
//		return db.PingContext(ctx)
//	})
//
// The zero Policy is "200ms×2 up to 30s, full jitter, 5 retries", in
// [backoff.Schedule]'s policy text: it retries every error 5 times at most,
// waiting a draw from [0, 200ms], then [0, 400ms], and so on, never above
// 30s. Each zero field of a Policy's curve is the default's, so
// Curve: backoff.Value{MaxDelay: time.Minute} waits "200ms×2 up to 1m0s";
// a negative BaseDelay never waits. A [Loop] is the same waiting for a loop
// of one's own, such as a supervisor that reconnects, and [Sleep] is one
// wait.
//
// Four rules set this package apart from a hand-written loop:
//
//   - The context decides cancellation, not the error: fn's error matching
//     [context.Canceled] while ctx is live came from another context, and is
//     an ordinary fault.
//   - The last real error survives: giving up returns an [*Error] that wraps
//     it and says how many attempts and how long.
//   - No wait that cannot be followed by an attempt: under a context
//     deadline, a wait that would leave less time than the failed attempt
//     took is not started; Do returns the real error at once.
//   - The other end's word wins, within limits: [After] names a wait that
//     replaces the computed one; the retry and time limits still apply.
//
// A [Budget], set as Policy.Budget, bounds the retries of many calls
// together, so that under load that keeps coming the retries cannot keep
// an overloaded dependency down, while bad luck is retried: a retry that
// succeeds is given back, one that fails is earned back only by calls
// that did not fail, and a call that finds none left gives up at once.
//
// A Policy with a Name is counted in the process-wide table [Stats], with
// nothing else to set up: calls by outcome, attempts, waits, and why they
// stopped, readable by code and as JSON (expvar.Publish("retry",
// retry.Stats)). Policy.OnDone hears the end of every call, beside
// OnRetry.
//
// It waits on a [time.Timer] in the caller's goroutine, starts no goroutine,
// and reads the clock with [time.Now] only, so testing/synctest runs a whole
// retry sequence in virtual time, with no clock to inject. A Policy is safe
// for concurrent use when its Schedule's Rand is nil; a Loop is not.
package retry

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/internal/stats"
)

// The mistakes Do, DoValue, Sleep and a Loop report instead of panicking.
var (
	errNilFunc    = errors.New("retry: Do or DoValue called with a nil func")
	errNilContext = errors.New("retry: nil Context")
)

// Do calls fn until it returns nil, and returns nil; or gives up and returns
// an [*Error] that wraps the last error fn returned.
//
// If ctx is already done, fn is not called, and Do returns
// context.Cause(ctx) as is: the one case of a bare context error, since no
// attempt was made. Otherwise fn is called with ctx, and after each failed
// attempt, in this order:
//
//  1. ctx is done: give up, with its cause in the Error (whatever fn
//     returned: an error matching context.Canceled while ctx is live came
//     from another context, and is retried like any other);
//  2. the error is [Permanent] or [GiveUp], or p.Retryable says no: give
//     up;
//  3. the next wait is the one [After] names, if the error carries one,
//     else the Schedule's next; the Schedule saying no gives up, with its
//     Err (backoff.ErrMaxRetries, ErrMaxElapsed or ErrDeadline) as Cause;
//  4. ctx has a deadline, and now + the wait + how long the failed attempt
//     took is after it: give up now, without waiting, with
//     backoff.ErrDeadline as Cause (it matches context.DeadlineExceeded);
//  5. p.Budget, when set, has no whole retry left: give up now, without
//     waiting, with [ErrBudget] as Cause; else the retry takes one;
//  6. p.OnRetry and p.Logger are told, then Do waits on a timer, cut short
//     by ctx (give up at once, its cause as Cause).
//
// With p.Budget set, a call that succeeds, or gives up on an error not
// worth retrying ([Permanent], or Retryable said no), earns it Ratio as it
// returns, and gives back the retry its last attempt took, if it retried;
// a call that gives up on a retryable failure (rules 1, 3, 4, 5, 6, or
// [GiveUp]) earns nothing and gives nothing back.
//
// fn is never called on a done ctx: however short the wait (zero
// included), and whatever ended ctx (a hook, the deadline, another
// goroutine), Do looks at ctx once more before each attempt, and gives up
// instead.
//
// Do works on its own copy of p.Schedule; see [Policy] for the defaults. A
// nil fn or a nil ctx returns an error that says so, without calling fn. A
// panic in fn, Retryable or OnRetry is not recovered. Do allocates nothing
// when fn succeeds at once, and nothing per retry without a wait; it makes
// at most one timer, however many waits, stops it on every path, and
// starts no goroutine.
func Do(ctx context.Context, p Policy, fn func(context.Context) error) error {
	switch {
	case fn == nil:
		return errNilFunc
	case ctx == nil:
		return errNilContext
	case ctx.Err() != nil:
		if p.Name != "" || p.OnDone != nil {
			p.ended(FailedWithoutRetry, &call{}, time.Time{}, 0, nil, context.Cause(ctx))
		}
		return context.Cause(ctx)
	}
	start := time.Now()
	err := fn(ctx)
	if a, ok := succeeded(err); ok {
		p.earn()
		if p.Name != "" || p.OnDone != nil {
			p.ended(SucceededAtOnce, &call{attempts: 1, hedges: a.Hedges(), class: a.Class()}, start, -1, nil, nil)
		}
		return nil
	}
	return retrying(ctx, &p, fn, start, err)
}

// DoValue is [Do] for a function that returns a value: it returns fn's value
// with a nil error once fn succeeds, and the zero T with Do's error
// otherwise.
func DoValue[T any](ctx context.Context, p Policy, fn func(context.Context) (T, error)) (T, error) {
	var v T
	if fn == nil {
		return v, errNilFunc
	}
	err := Do(ctx, p, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// retrying is Do after its first attempt failed with err: the part that
// needs a Schedule and, perhaps, a timer. It reads the clock per retry only
// for what needs it: the deadline rule (ctx has a deadline) and the Event
// (OnRetry or Logger set); giving up reads it once for Error.Elapsed.
func retrying(ctx context.Context, p *Policy, fn func(context.Context) error, start time.Time, err error) error {
	s := p.schedule(true)
	deadline, hasDeadline := ctx.Deadline()
	hooked := p.OnRetry != nil || p.Logger != nil
	var row *stats.Row // p.Name's: it counts each wait as waited
	if p.Name != "" {
		row = p.row()
	}
	var timer *time.Timer
	c, attemptStart := call{attempts: 1, hedges: hedgesOf(row, err)}, start
	for {
		if cause, final := p.final(ctx, err, c.attempts > 1); final { // 1, 2
			return p.giveUp(ctx, err, &c, start, cause)
		}
		if d, ok := waitOf(err); ok { // 3
			s.Override(d)
		}
		wait, ok := s.Next()
		if !ok {
			return p.giveUp(ctx, err, &c, start, s.Err())
		}
		var now time.Time
		if hasDeadline || hooked || row != nil {
			now = time.Now()
		}
		if hasDeadline && !fits(now, wait, now.Sub(attemptStart), deadline) { // 4
			return p.giveUp(ctx, err, &c, start, backoff.ErrDeadline)
		}
		if p.Budget != nil && !p.Budget.Allow() { // 5
			return p.giveUp(ctx, err, &c, start, ErrBudget)
		}
		if hooked { // 6
			p.notify(ctx, Event{Attempt: c.attempts, Err: err, Wait: wait, Elapsed: now.Sub(start)})
			if row != nil { // the hooks' time is not the wait's
				now = time.Now()
			}
		}
		cause := sleep(ctx, &timer, wait)
		c.waits++
		if row != nil {
			d := time.Since(now)
			row.Waited(d)
			c.delay += d
		}
		if cause != nil { // a wait started: a call with a retry, though none was attempted
			return p.giveUp(ctx, err, &c, start, cause)
		}
		c.attempts++
		if hasDeadline {
			// The attempt starts as the wait ends: a timer that fires late
			// counts against the attempt, on the safe side of rule 4.
			attemptStart = now.Add(wait)
		}
		err = fn(ctx)
		if a, ok := succeeded(err); ok {
			p.earn()
			p.Budget.giveBack()
			if p.Name != "" || p.OnDone != nil {
				c.hedges, c.class = c.hedges+a.Hedges(), a.Class()
				p.ended(SucceededAfterRetries, &c, start, -1, nil, nil)
			}
			return nil
		}
		c.hedges += hedgesOf(row, err)
	}
}

// succeeded reports whether fn's err is a success: nil, or the Answer
// that httpretry's attempt returns for a response, which says its class
// and hedges for the table.
func succeeded(err error) (stats.Answer, bool) {
	if err == nil {
		return 0, true
	}
	a, ok := err.(stats.Answer)
	return a, ok
}

// hedgesOf is the hedges of the attempt that failed with err, as its
// row's Facts say: httpretry's.
func hedgesOf(row *stats.Row, err error) int {
	if row == nil || row.Facts() == nil {
		return 0
	}
	_, hedges := row.Facts()(err)
	return hedges
}

// final reports whether Do gives up on err whatever the Schedule says, and
// why: ctx is done (rule 1: its cause), or err is not to be retried (rule
// 2: no cause). A Permanent error, or one Retryable refuses, earns the
// Budget, as a call that did not fail, and gives back the retry before it,
// when retried; a GiveUp error does neither.
func (p *Policy) final(ctx context.Context, err error, retried bool) (cause error, final bool) {
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx), true
	case given(err):
		return nil, true
	case IsPermanent(err) || (p.Retryable != nil && !p.Retryable(err)):
		p.earn()
		if retried {
			p.Budget.giveBack()
		}
		return nil, true
	}
	return nil, false
}

// sleep is the one wait of Do and a Loop: d on *timer, made on first use
// and reused after, cut short by ctx. It returns nil, or the context's
// cause when ctx ends first, was done before, or ends as the wait does: no
// attempt follows a wait on a dead context. A d of zero or less does not
// wait, but still looks at ctx. The timer is stopped on every path.
func sleep(ctx context.Context, timer **time.Timer, d time.Duration) error {
	if d > 0 {
		if *timer == nil {
			*timer = time.NewTimer(d)
		} else {
			(*timer).Reset(d)
		}
		select {
		case <-ctx.Done():
			(*timer).Stop()
		case <-(*timer).C:
		}
	}
	// A deadline that has passed cancels its context from a timer of its
	// own, which may not have run yet (it fires in the same instant as
	// ours): wait for it, so that the context's own cause is the answer.
	if deadline, ok := ctx.Deadline(); ok && ctx.Err() == nil && !time.Now().Before(deadline) {
		if done := ctx.Done(); done != nil { // a Context may report a deadline it never enforces
			<-done
		}
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// fits reports whether a wait starting at now, followed by an attempt as
// long as the last one took, ends by deadline. It saturates rather than
// wraps: a wait near math.MaxInt64 never fits a real deadline.
func fits(now time.Time, wait, took time.Duration, deadline time.Time) bool {
	need := wait + max(took, 0)
	if need < 0 { // both are ≥ 0, so a wrap shows as a negative sum
		return false
	}
	return need <= deadline.Sub(now)
}

// earn adds to the Budget, when there is one, for a call that did not
// fail.
func (p *Policy) earn() {
	if p.Budget != nil {
		p.Budget.earn()
	}
}

// notify tells OnRetry and the Logger that a wait is about to start.
func (p *Policy) notify(ctx context.Context, e Event) {
	if p.OnRetry != nil {
		p.OnRetry(e)
	}
	if p.Logger != nil && p.Logger.Enabled(ctx, slog.LevelInfo) {
		attrs := [4]slog.Attr{
			slog.Int("attempt", e.Attempt),
			slog.Duration("wait", e.Wait),
			slog.Duration("elapsed", e.Elapsed),
		}
		n := 3
		if e.Err != nil {
			attrs[n], n = slog.Any("err", e.Err), n+1
		}
		p.Logger.LogAttrs(ctx, slog.LevelInfo, "retrying", attrs[:n]...)
	}
}

// giveUp builds the Error that ends a sequence after waits started, and
// logs it.
func (p *Policy) giveUp(ctx context.Context, err error, c *call, start time.Time, cause error) error {
	e := &Error{Err: err, Attempts: c.attempts, Elapsed: time.Since(start), Cause: cause}
	if p.Name != "" || p.OnDone != nil {
		p.ended(outcome(c.waits), c, start, e.Elapsed, err, cause)
	}
	if p.Logger != nil && p.Logger.Enabled(ctx, slog.LevelWarn) {
		attrs := [4]slog.Attr{slog.Int("attempts", e.Attempts), slog.Duration("elapsed", e.Elapsed)}
		n := 2
		if err != nil {
			attrs[n], n = slog.Any("err", err), n+1
		}
		if cause != nil {
			attrs[n], n = slog.Any("cause", cause), n+1
		}
		p.Logger.LogAttrs(ctx, slog.LevelWarn, "giving up", attrs[:n]...)
	}
	return e
}

// Sleep waits d on a timer in the caller's goroutine, and returns nil. It
// returns context.Cause(ctx) at once when ctx ends first, stopping the
// timer; and [backoff.ErrDeadline] at once, without waiting, when ctx has a
// deadline that d would pass (as [rate.Limiter.Wait] does): a wait ending
// exactly at the deadline is started. A context that ends as the timer
// fires returns its cause too, so that no attempt follows on a dead
// context. A d of zero or less returns nil at once, or ctx's cause when ctx
// is already done. A nil ctx returns an error that says so. Sleep allocates
// nothing beyond its one timer, and nothing for d ≤ 0.
//
// It is the wait for a loop of one's own over a [backoff.Schedule]:
//
//	wait, ok := s.Next()
//	if !ok {
//		return fmt.Errorf("giving up (%w): %w", s.Err(), lastErr)
//	}
//	if err := retry.Sleep(ctx, wait); err != nil {
//		return fmt.Errorf("%w; last error: %w", err, lastErr)
//	}
//
// [rate.Limiter.Wait]: https://pkg.go.dev/golang.org/x/time/rate#Limiter.Wait
func Sleep(ctx context.Context, d time.Duration) error {
	if ctx == nil {
		return errNilContext
	}
	if deadline, ok := ctx.Deadline(); ok && d > 0 && ctx.Err() == nil && d > time.Until(deadline) {
		return backoff.ErrDeadline
	}
	var timer *time.Timer
	return sleep(ctx, &timer, d)
}
