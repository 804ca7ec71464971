package retry

import (
	"log/slog"
	"time"

	"github.com/unherd/backoff"
)

// Policy says how Do, DoValue and a Loop retry. The zero Policy is usable:
// for Do it retries every error 5 times, waiting "200ms×2 up to 30s, full
// jitter" between attempts.
//
// A Policy is read, never written, by the calls that use it: each works on
// its own copy of Schedule, reset, so one Policy can serve many goroutines
// at once, unless Schedule.Rand is set (a [math/rand/v2.Rand] is not safe for
// concurrent use: leave it nil, or give each goroutine its own Policy).
type Policy struct {
	// Name, when set, counts every call of Do and DoValue made with this
	// Policy, and every Loop made from it, in [Stats] under this name:
	// their outcomes, attempts, waits and why they stopped. The empty Name
	// counts nothing, and costs nothing. A call that succeeds at once adds
	// one atomic add to Do, and no allocation.
	Name string

	// Host, with a Name, counts the calls in a row of the name's own for
	// this host, the dependency they call (httpretry sets it to each
	// request's host); the name's counts are its rows' together. Without
	// a Name it is not read.
	Host string

	// Table, with a Name, is the table the calls count in: nil, the
	// default, is the process's [Stats]; a test gives itself a table of
	// its own ([NewTable]) to count from zero, as a Prometheus registry
	// beside the default one.
	Table *Table

	// Schedule gives the waits and the limits. Each zero field of its Curve
	// takes the default curve's, "200ms×2 up to 30s, full jitter": a zero
	// BaseDelay is 200ms and a zero MaxDelay 30s (a zero Multiplier already
	// doubles, and the zero JitterMode is full jitter), so that
	// Curve: backoff.Value{MaxDelay: time.Minute} waits "200ms×2 up to 1m0s"
	// rather than nothing, in a tight loop. A Policy that never waits says
	// so, with a negative BaseDelay ("no wait" in its text); one with no
	// ceiling has a MaxDelay of math.MaxInt64, or a negative one ("uncapped").
	// A Schedule read from policy text sets neither to zero, so it waits
	// here as it waits alone.
	//
	// Do and DoValue on a Schedule with no limit at all (MaxRetries ≤ 0,
	// MaxElapsed ≤ 0, zero Deadline) stop after 5 retries (6 attempts):
	// bounded work must be bounded. A Loop applies no such default: a
	// supervisor runs for the life of its process.
	Schedule backoff.Schedule

	// Retryable reports whether an error is worth another attempt. Nil
	// retries every error; the limits bound it. A [Permanent] or [GiveUp]
	// error is never retried, whatever Retryable says: it is checked first.
	// Retryable is not asked once the context is done.
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

	// OnDone, when set, is called once as each call ends, in the caller's
	// goroutine: as Do or DoValue returns, with its outcome, attempts,
	// elapsed time, last error and cause (see [Done]); and for a Loop at
	// each Reset and when Wait returns false. Metrics and traces hang here,
	// beside OnRetry.
	OnDone func(Done)

	// Budget, when set, bounds the retries of every call whose Policy
	// points to it, together (see [Budget]): a retry it refuses ends Do at
	// once, with ErrBudget. Nil, the default, bounds nothing beyond the
	// Schedule's limits (httpretry keeps one per host instead). A Loop does
	// not spend from it.
	Budget *Budget
}

// defaultCurve gives each zero field of a Policy's curve its value:
// "200ms×2 up to 30s, full jitter".
var defaultCurve = backoff.Value{BaseDelay: 200 * time.Millisecond, MaxDelay: 30 * time.Second}

// defaultRetries is how many retries Do allows when the Schedule sets no
// limit at all.
const defaultRetries = 5

// curve returns the curve p waits by: Schedule.Curve, each zero field with
// the default's.
func (p *Policy) curve() backoff.Value {
	c := p.Schedule.Curve
	if c.BaseDelay == 0 {
		c.BaseDelay = defaultCurve.BaseDelay
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = defaultCurve.MaxDelay
	}
	return c
}

// schedule returns a fresh copy of p.Schedule on p's curve and, for Do
// (bounded), 5 retries in place of no limit at all.
func (p *Policy) schedule(bounded bool) backoff.Schedule {
	s := p.Schedule
	s.Reset()
	s.Curve = p.curve()
	if bounded && s.MaxRetries <= 0 && s.MaxElapsed <= 0 && s.Deadline.IsZero() {
		s.MaxRetries = defaultRetries
	}
	return s
}

// String returns the policy as its Schedule's one line of text, with the
// curve it waits by: each zero field of the Curve written as the default it
// means, such as "200ms×2 up to 30s, full jitter, 5 retries" for
// Policy{Schedule: backoff.Schedule{MaxRetries: 5}}. A negative BaseDelay is
// "no wait", and a MaxDelay that is negative or math.MaxInt64 "uncapped".
// Do's default of 5 retries is Do's rule, not the policy's, and is not
// written; nor are Retryable, OnRetry and Logger, which are code.
func (p Policy) String() string {
	s := p.Schedule
	s.Curve = p.curve()
	return s.String()
}

// MarshalText implements [encoding.TextMarshaler]: it returns String's form.
// It never returns an error.
func (p Policy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements [encoding.TextUnmarshaler], so [flag.TextVar],
// encoding/json and YAML or TOML libraries read a Policy from one line: it
// reads the text as [backoff.Schedule.UnmarshalText] does, into Schedule,
// and leaves Retryable, OnRetry, Logger and Budget as they were. A bad line
// is an error that quotes it, and leaves p unchanged.
//
// The text waits as it says, here as in a backoff.Schedule, which sets no
// field to a zero this Policy would read as its default: "no wait" is a
// negative BaseDelay (a Policy that never waits), and "uncapped", or no
// ceiling written, a MaxDelay of math.MaxInt64 (not 30s). So what String
// wrote reads back as a Policy with the same waits.
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
