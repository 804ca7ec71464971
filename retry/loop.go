package retry

import (
	"context"
	"time"

	"github.com/unherd/backoff"
)

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
// consulted, and OnRetry, OnDone and the Logger get a nil Err. Under a
// Policy.Name it counts each run as a call: one that Reset ends as a
// success, one that Wait's false ends as a failure, with its cause; each
// attempt as Wait returns true, so that a run that never ends shows its
// attempts; and each wait as a retry (Counts.Retries: waits started), the
// one that starts a run after a Reset too. Unlike Do, it applies
// no default limit: with none set, it waits for the life of ctx. Nor does
// it spend from Policy.Budget, which bounds the retries of many calls
// together: a Loop is one long sequence, which its own limits bound.
//
// The zero Loop, declared rather than made by NewLoop, is NewLoop(Policy{}):
// "200ms×2 up to 30s, full jitter", for as long as ctx lasts. A Loop is not
// safe for concurrent use; it starts no goroutine and keeps at most one
// timer.
type Loop struct {
	p       Policy
	s       backoff.Schedule
	made    bool          // by NewLoop, or by the first use of a zero Loop
	start   time.Time     // NewLoop or the last Reset
	attempt int           // Wait returned true this many times since start
	waits   int           // waits started since start
	delay   time.Duration // their time, as waited, under a Name
	started bool          // the first Wait is over: every later one waits
	err     error
	timer   *time.Timer
}

// NewLoop returns a Loop that waits as p says, on its own copy of
// p.Schedule, reset, on the curve [Policy] describes; no limit is added.
func NewLoop(p Policy) *Loop {
	return &Loop{p: p, s: p.schedule(false), made: true, start: time.Now()}
}

// make makes a zero Loop what NewLoop(Policy{}) returns.
func (l *Loop) make() {
	if !l.made {
		*l = *NewLoop(Policy{})
	}
}

// Wait returns true when the next attempt should start. The first Wait
// returns true at once; every later one waits the Schedule's next wait
// (or the one Override set) on a timer, then returns true.
//
// It returns false, and Err says why, when ctx is done (at once, mid-wait
// included), when the Schedule says no, or when the wait would end after
// ctx's deadline (at once, without waiting: a Loop does not see its
// attempts, so only the wait counts). It never returns true on a done ctx:
// not when the timer and the deadline fire in the same instant, nor after
// a zero wait whose OnRetry ended ctx. A nil ctx returns false, with an Err
// that says so. Once it has returned false it keeps returning false until
// Reset.
func (l *Loop) Wait(ctx context.Context) bool {
	l.make()
	switch {
	case l.err != nil:
		return false
	case ctx == nil: // a misuse, as for Do: told in Err, not counted as a run
		l.err = &Error{Attempts: l.attempt, Elapsed: time.Since(l.start), Cause: errNilContext}
		return false
	case ctx.Err() != nil:
		return l.stop(ctx, context.Cause(ctx))
	case !l.started:
		l.started = true
		l.attempted()
		return true
	}
	wait, ok := l.s.Next()
	if !ok {
		return l.stop(ctx, l.s.Err())
	}
	deadline, hasDeadline := ctx.Deadline()
	hooked := l.p.OnRetry != nil || l.p.Logger != nil
	var now time.Time
	if hasDeadline || hooked || l.p.Name != "" {
		now = time.Now()
	}
	if hasDeadline && !fits(now, wait, 0, deadline) {
		return l.stop(ctx, backoff.ErrDeadline)
	}
	if hooked {
		l.p.notify(ctx, Event{Attempt: l.s.Attempt(), Wait: wait, Elapsed: now.Sub(l.start)})
		if l.p.Name != "" { // the hooks' time is not the wait's
			now = time.Now()
		}
	}
	l.waits++
	cause := sleep(ctx, &l.timer, wait)
	if l.p.Name != "" {
		d := time.Since(now)
		l.p.row().Waited(d)
		l.delay += d
	}
	if cause != nil { // a wait started
		return l.stop(ctx, cause)
	}
	l.attempted()
	return true
}

// attempted counts an attempt about to start: under a Name, in the table
// at once, so that a run that never ends (a supervisor's) shows its
// attempts as they are made.
func (l *Loop) attempted() {
	l.attempt++
	if l.p.Name != "" {
		l.p.row().Attempt(1)
	}
}

// call is the run's, for its End: its attempts counted as they started.
func (l *Loop) call() *call {
	return &call{attempts: l.attempt, counted: true, waits: l.waits, delay: l.delay}
}

// stop ends the loop with cause, and returns false.
func (l *Loop) stop(ctx context.Context, cause error) bool {
	l.err = l.p.giveUp(ctx, nil, l.call(), l.start, cause)
	return false
}

// Reset starts the curve over, as after a success: the next Wait waits the
// curve's first wait (jittered, so that a fleet that lost the same broker
// does not reconnect in the same instant), and Attempt, Err and the elapsed
// time start again from zero. A pending Override is dropped. Before the
// first Wait, Reset changes nothing that Wait does. A Reset after the
// Loop's Wait returned true ends a run that succeeded, for Policy.Name's
// counts and Policy.OnDone: at once, after one Wait, or after retries.
func (l *Loop) Reset() {
	l.make()
	if l.attempt > 0 && l.err == nil && (l.p.Name != "" || l.p.OnDone != nil) {
		o := SucceededAtOnce
		if l.waits > 0 { // as the table counts retries: the waits started
			o = SucceededAfterRetries
		}
		l.p.ended(o, l.call(), l.start, -1, nil, nil)
	}
	l.s.Reset()
	l.attempt, l.waits, l.delay, l.err, l.start = 0, 0, 0, nil, time.Now()
}

// Override makes the next wait d instead of the Schedule's: a server's
// Retry-After, a broker's backpressure ([backoff.Schedule.Override]). The
// limits still apply; Curve.MaxDelay does not cap d. A d below zero is 0.
func (l *Loop) Override(d time.Duration) {
	l.make()
	l.s.Override(d)
}

// Attempt returns how many times Wait has returned true since NewLoop or
// the last Reset.
func (l *Loop) Attempt() int { return l.attempt }

// Err returns nil while Wait returns true; after it returns false, why: an
// [*Error] with a nil Err, whose Cause is the context's cause or the
// Schedule's Err (backoff.ErrMaxRetries, ErrMaxElapsed, or ErrDeadline for
// a wait that would end after the Schedule's or the context's deadline).
func (l *Loop) Err() error { return l.err }
