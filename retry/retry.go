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
// 30s. A [Loop] is the same waiting for a loop of one's own, such as a
// supervisor that reconnects, and [Sleep] is one wait.
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
// It waits on a [time.Timer] in the caller's goroutine, starts no goroutine,
// and reads the clock with [time.Now] only, so testing/synctest runs a whole
// retry sequence in virtual time, with no clock to inject. A Policy is safe
// for concurrent use when its Schedule's Rand is nil; a Loop is not.
package retry

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/unherd/backoff"
)

// Policy says how Do, DoValue and a Loop retry. The zero Policy is usable:
// for Do it retries every error 5 times, waiting "200ms×2 up to 30s, full
// jitter" between attempts.
//
// A Policy is read, never written, by the calls that use it: each works on
// its own copy of Schedule, reset, so one Policy can serve many goroutines
// at once, unless Schedule.Rand is set (a [rand.Rand] is not safe for
// concurrent use: leave it nil, or give each goroutine its own Policy).
type Policy struct {
	// Schedule gives the waits and the limits. A zero Schedule.Curve means
	// the default curve, "200ms×2 up to 30s, full jitter". Do and DoValue
	// on a Schedule with no limit at all (MaxRetries ≤ 0, MaxElapsed ≤ 0,
	// zero Deadline) stop after 5 retries (6 attempts): bounded work must be
	// bounded. A Loop applies no such default: a supervisor runs for the
	// life of its process.
	Schedule backoff.Schedule

	// Retryable reports whether an error is worth another attempt. Nil
	// retries every error; the limits bound it. A [Permanent] error is never
	// retried, whatever Retryable says: it is checked first. Retryable is not
	// asked once the context is done.
	Retryable func(error) bool

	// OnRetry, when set, is called once before each wait, in the caller's
	// goroutine, and never after the final attempt: metrics hang here.
	OnRetry func(Event)

	// Logger, when set, gets one record before each wait (level Info,
	// message "retrying", attributes attempt, wait, elapsed and err) and
	// one when Do gives up or a Loop stops (level Warn, message "giving up",
	// attributes attempts, elapsed, err and cause, each when set). Nil logs
	// nothing.
	Logger *slog.Logger
}

// defaultCurve is what a zero Schedule.Curve means: "200ms×2 up to 30s,
// full jitter".
var defaultCurve = backoff.Value{BaseDelay: 200 * time.Millisecond, MaxDelay: 30 * time.Second, Multiplier: 2}

// defaultRetries is how many retries Do allows when the Schedule sets no
// limit at all.
const defaultRetries = 5

// schedule returns a fresh copy of p.Schedule with the default curve in
// place of a zero one, and, for Do (bounded), 5 retries in place of no
// limit at all.
func (p *Policy) schedule(bounded bool) backoff.Schedule {
	s := p.Schedule
	s.Reset()
	if s.Curve == (backoff.Value{}) {
		s.Curve = defaultCurve
	}
	if bounded && s.MaxRetries <= 0 && s.MaxElapsed <= 0 && s.Deadline.IsZero() {
		s.MaxRetries = defaultRetries
	}
	return s
}

// String returns the policy as its Schedule's one line of text, such as
// "200ms×2 up to 30s, full jitter, 5 retries". A zero Curve is written as
// the default curve it means. Do's default of 5 retries is Do's rule, not
// the policy's, and is not written; nor are Retryable, OnRetry and Logger,
// which are code.
func (p Policy) String() string {
	s := p.Schedule
	if s.Curve == (backoff.Value{}) {
		s.Curve = defaultCurve
	}
	return s.String()
}

// MarshalText implements [encoding.TextMarshaler]: it returns String's form.
// It never returns an error.
func (p Policy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements [encoding.TextUnmarshaler], so [flag.TextVar],
// encoding/json and YAML or TOML libraries read a Policy from one line: it
// reads the text as [backoff.Schedule.UnmarshalText] does, into Schedule,
// and leaves Retryable, OnRetry and Logger as they were. A bad line is an
// error that quotes it, and leaves p unchanged.
//
// "no wait" reads as the zero Curve, which means the default curve; a retry
// with no wait at all is "no wait, no jitter, 3 retries".
func (p *Policy) UnmarshalText(b []byte) error { return p.Schedule.UnmarshalText(b) }

// Event describes one retry, for Policy.OnRetry: it is passed before each
// wait, never after the final attempt.
type Event struct {
	// Attempt is the attempt that just failed, from 1. In a Loop it counts
	// from NewLoop or the last Reset: after a Reset, the attempt that had
	// succeeded and then ended is 1.
	Attempt int
	Err     error         // what the attempt returned; nil from a Loop
	Wait    time.Duration // the wait about to start
	Elapsed time.Duration // since Do or the Loop began (or the Loop's last Reset), wall clock
}

// Error is what Do, DoValue and a Loop return when they give up once fn has
// been called: the last error fn returned, how many times it was called,
// for how long, and why it stopped. errors.Is and errors.As reach both Err
// and Cause.
type Error struct {
	Err      error         // the last error fn returned; nil from a Loop
	Attempts int           // how many times fn was called (for a Loop: Wait returned true)
	Elapsed  time.Duration // from the start to giving up, wall clock
	// Cause is why it stopped: the Schedule's Err (backoff.ErrMaxRetries,
	// ErrMaxElapsed, ErrDeadline), the context's cause, or nil when Err is
	// not retryable.
	Cause error
}

// Error returns "retry: giving up after 4 attempts in 7.31s: <Err>", with
// "1 attempt" in the singular, the time rounded to three digits, and the
// cause in parentheses before the colon when one stopped it (and Err does
// not already say it).
func (e *Error) Error() string {
	b := []byte("retry: giving up after ")
	b = strconv.AppendInt(b, int64(e.Attempts), 10)
	if e.Attempts == 1 {
		b = append(b, " attempt in "...)
	} else {
		b = append(b, " attempts in "...)
	}
	b = append(b, roundForPeople(e.Elapsed).String()...)
	if e.Cause != nil && !errors.Is(e.Err, e.Cause) {
		b = append(b, " ("...)
		b = append(b, e.Cause.Error()...)
		b = append(b, ')')
	}
	if e.Err != nil {
		b = append(b, ": "...)
		b = append(b, e.Err.Error()...)
	}
	return string(b)
}

// Unwrap returns Err and Cause, leaving out whichever is nil.
func (e *Error) Unwrap() []error {
	switch {
	case e.Err == nil && e.Cause == nil:
		return nil
	case e.Err == nil:
		return []error{e.Cause}
	case e.Cause == nil:
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}

// roundForPeople rounds d to three significant digits: 7.31s, 123ms.
func roundForPeople(d time.Duration) time.Duration {
	unit := time.Duration(1)
	for d/unit >= 1000 {
		unit *= 10
	}
	return d.Round(unit)
}

// errNilFunc is what Do, DoValue return for a nil fn.
var errNilFunc = errors.New("retry: Do or DoValue called with a nil func")

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
//  2. the error is [Permanent], or p.Retryable says no: give up;
//  3. the next wait is the one [After] names, if the error carries one,
//     else the Schedule's next; the Schedule saying no gives up, with its
//     Err (backoff.ErrMaxRetries, ErrMaxElapsed or ErrDeadline) as Cause;
//  4. ctx has a deadline, and now + the wait + how long the failed attempt
//     took is after it: give up now, without waiting, with
//     backoff.ErrDeadline as Cause (it matches context.DeadlineExceeded);
//  5. p.OnRetry and p.Logger are told, then Do waits on a timer, cut short
//     by ctx (give up at once, its cause as Cause).
//
// Do works on its own copy of p.Schedule; see [Policy] for the defaults. A
// nil fn returns an error that says so. A panic in fn, Retryable or OnRetry
// is not recovered. Do allocates nothing when fn succeeds at once, and
// nothing per retry without a wait; it makes at most one timer, however
// many waits, stops it on every path, and starts no goroutine.
func Do(ctx context.Context, p Policy, fn func(context.Context) error) error {
	if fn == nil {
		return errNilFunc
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	start := time.Now()
	err := fn(ctx)
	if err == nil {
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
	var timer *time.Timer
	attempts, attemptStart := 1, start
	for {
		var cause error
		switch {
		case ctx.Err() != nil: // 1
			cause = context.Cause(ctx)
		case IsPermanent(err) || (p.Retryable != nil && !p.Retryable(err)): // 2
		default:
			if d, ok := waitOf(err); ok { // 3
				s.Override(d)
			}
			wait, ok := s.Next()
			if !ok {
				cause = s.Err()
				break
			}
			var now time.Time
			if hasDeadline || hooked {
				now = time.Now()
			}
			if hasDeadline && !fits(now, wait, now.Sub(attemptStart), deadline) { // 4
				cause = backoff.ErrDeadline
				break
			}
			if hooked { // 5
				p.notify(ctx, Event{Attempt: attempts, Err: err, Wait: wait, Elapsed: now.Sub(start)})
			}
			attemptStart = now
			if wait > 0 {
				if timer == nil {
					timer = time.NewTimer(wait)
				} else {
					timer.Reset(wait)
				}
				select {
				case <-ctx.Done():
					timer.Stop()
					return p.giveUp(ctx, err, attempts, start, context.Cause(ctx))
				case <-timer.C:
				}
				if ctx.Err() != nil { // it ended as the timer fired: no attempt on a dead context
					return p.giveUp(ctx, err, attempts, start, context.Cause(ctx))
				}
				if hasDeadline {
					attemptStart = time.Now()
				}
			}
			attempts++
			if err = fn(ctx); err == nil {
				return nil
			}
			continue
		}
		return p.giveUp(ctx, err, attempts, start, cause)
	}
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

// giveUp builds the Error that ends a sequence, and logs it.
func (p *Policy) giveUp(ctx context.Context, err error, attempts int, start time.Time, cause error) error {
	e := &Error{Err: err, Attempts: attempts, Elapsed: time.Since(start), Cause: cause}
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

// Permanent marks err as one no retry can fix: Do gives up on it at once,
// whatever Policy.Retryable says. Permanent(nil) is nil. The mark survives
// wrapping with %w and [errors.Join]; the result's message is err's, and
// errors.Is(Permanent(err), err) holds.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// IsPermanent reports whether err, or any error in its chain (through %w
// and [errors.Join]), was marked by [Permanent]. It does not allocate.
func IsPermanent(err error) bool {
	for err != nil {
		switch e := err.(type) {
		case *permanentError:
			return true
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		case interface{ Unwrap() []error }:
			for _, err := range e.Unwrap() {
				if IsPermanent(err) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// permanentError is Permanent's mark. IsPermanent finds it by its type,
// walking the chain itself: errors.As would allocate its target, and
// errors.Is (against a sentinel) checks the target's comparability on every
// call, which costs more than the walk.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// After says that the other end named the wait before the next attempt, d:
// a Retry-After, a broker's backpressure signal. Do replaces the next
// computed wait with it ([backoff.Schedule.Override]); the curve does not
// advance. A negative d is read as 0.
//
// Do obeys d exactly: clients told the same d come back together, so widen
// it first, as [backoff.ParseRetryAfter]'s doc advises
// (backoff.AddJitter(d, max(d/2, time.Second))), as httpretry does.
// MaxRetries, MaxElapsed and the context's deadline still apply, and end the
// sequence rather than start a wait too long for them; Curve.MaxDelay does
// not cap d.
//
// The result wraps err (errors.Is(After(d, err), err) holds) and has its
// message; After(d, nil) is a non-nil error whose message names the wait.
// When a chain holds several, the first one errors.As would find wins.
func After(d time.Duration, err error) error { return &afterError{max(d, 0), err} }

type afterError struct {
	wait time.Duration
	err  error
}

func (e *afterError) Error() string {
	if e.err == nil {
		return "retry: the other end asked for a wait of " + e.wait.String()
	}
	return e.err.Error()
}

func (e *afterError) Unwrap() error { return e.err }

// waitOf returns the wait After put in err's chain, searching it in the
// order errors.As does. It is errors.As written out for one type, because
// errors.As allocates its target.
func waitOf(err error) (time.Duration, bool) {
	for err != nil {
		switch e := err.(type) {
		case *afterError:
			return e.wait, true
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		case interface{ Unwrap() []error }:
			for _, err := range e.Unwrap() {
				if d, ok := waitOf(err); ok {
					return d, true
				}
			}
			return 0, false
		default:
			return 0, false
		}
	}
	return 0, false
}

// Sleep waits d on a timer in the caller's goroutine, and returns nil. It
// returns context.Cause(ctx) at once when ctx ends first, stopping the
// timer; and [backoff.ErrDeadline] at once, without waiting, when ctx has a
// deadline that d would pass (as [rate.Limiter.Wait] does): a wait ending
// exactly at the deadline is started. A d of zero or less returns nil at
// once, or ctx's cause when ctx is already done. Sleep allocates nothing
// beyond its one timer, and nothing for d ≤ 0.
//
// It is the wait for a loop of one's own over a [backoff.Schedule]:
//
//	wait, ok := s.Next()
//	if !ok {
//		return fmt.Errorf("giving up (%w): %w", s.Err(), err)
//	}
//	if err := retry.Sleep(ctx, wait); err != nil {
//		return fmt.Errorf("%w; last error: %w", err, lastErr)
//	}
//
// [rate.Limiter.Wait]: https://pkg.go.dev/golang.org/x/time/rate#Limiter.Wait
func Sleep(ctx context.Context, d time.Duration) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if d <= 0 {
		return nil
	}
	if deadline, ok := ctx.Deadline(); ok && d > time.Until(deadline) {
		return backoff.ErrDeadline
	}
	timer := time.NewTimer(d)
	select {
	case <-ctx.Done():
		timer.Stop()
		return context.Cause(ctx)
	case <-timer.C:
		return nil
	}
}

// Loop is the waiting of a retry loop whose attempts are the caller's own,
// such as a supervisor that reconnects:
//
//	loop := retry.NewLoop(policy)
//	for loop.Wait(ctx) {
//		connected, err := conn.runOnce(ctx)
//		if connected {
//			loop.Reset() // a healthy run: start the curve over
//		}
//		if err != nil {
//			log.Warn("connection lost; reconnecting", "attempt", loop.Attempt(), "err", err)
//		}
//	}
//	return loop.Err()
//
// A Loop does not see its attempts' errors: Policy.Retryable is not
// consulted, and OnRetry and the Logger get a nil Err. Unlike Do, it applies
// no default limit: with none set, it waits for the life of ctx. A Loop is
// not safe for concurrent use; it starts no goroutine and keeps at most one
// timer.
type Loop struct {
	p       Policy
	s       backoff.Schedule
	start   time.Time // NewLoop or the last Reset
	attempt int       // Wait returned true this many times since start
	started bool      // the first Wait is over: every later one waits
	err     error
	timer   *time.Timer
}

// NewLoop returns a Loop that waits as p says, on its own copy of
// p.Schedule, reset. A zero Schedule.Curve means the default curve; no
// limit is added.
func NewLoop(p Policy) *Loop {
	return &Loop{p: p, s: p.schedule(false), start: time.Now()}
}

// Wait returns true when the next attempt should start. The first Wait
// returns true at once; every later one waits the Schedule's next wait
// (or the one Override set) on a timer, then returns true.
//
// It returns false, and Err says why, when ctx is done (at once, mid-wait
// included), when the Schedule says no, or when the wait would end after
// ctx's deadline (at once, without waiting: a Loop does not see its
// attempts, so only the wait counts). Once it has returned false it keeps
// returning false until Reset.
func (l *Loop) Wait(ctx context.Context) bool {
	if l.err != nil {
		return false
	}
	if ctx.Err() != nil {
		return l.stop(ctx, context.Cause(ctx))
	}
	if !l.started {
		l.started = true
		l.attempt++
		return true
	}
	wait, ok := l.s.Next()
	if !ok {
		return l.stop(ctx, l.s.Err())
	}
	deadline, hasDeadline := ctx.Deadline()
	hooked := l.p.OnRetry != nil || l.p.Logger != nil
	var now time.Time
	if hasDeadline || hooked {
		now = time.Now()
	}
	if hasDeadline && !fits(now, wait, 0, deadline) {
		return l.stop(ctx, backoff.ErrDeadline)
	}
	if hooked {
		l.p.notify(ctx, Event{Attempt: l.s.Attempt(), Wait: wait, Elapsed: now.Sub(l.start)})
	}
	if wait > 0 {
		if l.timer == nil {
			l.timer = time.NewTimer(wait)
		} else {
			l.timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			l.timer.Stop()
			return l.stop(ctx, context.Cause(ctx))
		case <-l.timer.C:
		}
	}
	l.attempt++
	return true
}

// stop ends the loop with cause, and returns false.
func (l *Loop) stop(ctx context.Context, cause error) bool {
	l.err = l.p.giveUp(ctx, nil, l.attempt, l.start, cause)
	return false
}

// Reset starts the curve over, as after a success: the next Wait waits the
// curve's first wait (jittered, so that a fleet that lost the same broker
// does not reconnect in the same instant), and Attempt, Err and the elapsed
// time start again from zero. A pending Override is dropped. Before the
// first Wait, Reset changes nothing that Wait does.
func (l *Loop) Reset() {
	l.s.Reset()
	l.attempt, l.err, l.start = 0, nil, time.Now()
}

// Override makes the next wait d instead of the Schedule's: a server's
// Retry-After, a broker's backpressure ([backoff.Schedule.Override]). The
// limits still apply; Curve.MaxDelay does not cap d. A d below zero is 0.
func (l *Loop) Override(d time.Duration) { l.s.Override(d) }

// Attempt returns how many times Wait has returned true since NewLoop or
// the last Reset.
func (l *Loop) Attempt() int { return l.attempt }

// Err returns nil while Wait returns true; after it returns false, why: an
// [*Error] with a nil Err, whose Cause is the context's cause or the
// Schedule's Err (backoff.ErrMaxRetries, ErrMaxElapsed, or ErrDeadline for
// a wait that would end after the Schedule's or the context's deadline).
func (l *Loop) Err() error { return l.err }
