package retry

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// Error is what Do, DoValue and a Loop return when they give up once fn has
// been called: the last error fn returned, how many times it was called,
// for how long, and why it stopped. errors.Is and errors.As reach both Err
// and Cause.
type Error struct {
	Err      error         // the last error fn returned; nil from a Loop
	Attempts int           // how many times fn was called (for a Loop: Wait returned true)
	Elapsed  time.Duration // from the start to giving up, wall clock
	// Cause is why it stopped: the Schedule's Err (backoff.ErrMaxRetries,
	// ErrMaxElapsed, ErrDeadline), ErrBudget, the context's cause, or nil
	// when Err is not to be retried (Permanent, GiveUp, or Retryable said
	// no).
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

// Timeout reports whether the call ended on a timeout, as a [net.Error]'s
// Timeout does: its last error timed out (an error in Err's chain whose
// Timeout method reports true, such as httpretry.ErrAttemptTimeout), or its
// Cause is a deadline (the context's, or backoff.ErrDeadline). So the
// *url.Error that http.Client returns over one reports Timeout too.
func (e *Error) Timeout() bool {
	if t, ok := find[timeout](e.Err); ok && t.Timeout() {
		return true
	}
	return errors.Is(e.Cause, context.DeadlineExceeded)
}

// timeout is an error that says whether it timed out, as net.Error does.
type timeout interface {
	error
	Timeout() bool
}

// roundForPeople rounds d to three significant digits: 7.31s, 123ms.
func roundForPeople(d time.Duration) time.Duration {
	unit := time.Duration(1)
	for d/unit >= 1000 {
		unit *= 10
	}
	return d.Round(unit)
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
	_, ok := find[*permanentError](err)
	return ok
}

// find returns the first error of type E in err's chain, searched in the
// order errors.As searches it: errors.As written out for one type, because
// errors.As allocates its target.
func find[E error](err error) (E, bool) {
	for err != nil {
		if e, ok := err.(E); ok {
			return e, true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, err := range u.Unwrap() {
				if e, ok := find[E](err); ok {
					return e, true
				}
			}
			err = nil
		default:
			err = nil
		}
	}
	var zero E
	return zero, false
}

// permanentError is Permanent's mark. IsPermanent finds it by its type
// (find): errors.Is against a sentinel would check the target's
// comparability on every call, which costs more than the walk.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// GiveUp marks err as a failure Do must not retry, though another attempt
// might have fixed it: a server that asks for a longer wait than the caller
// will give, a request whose body cannot be sent again. Do gives up on it at
// once, as on a [Permanent] error, whatever Policy.Retryable says; unlike a
// Permanent error, which says the other end answered and the request was
// at fault, it counts as the retryable failure it is, so the call earns
// nothing from a [Budget]. GiveUp(nil) is nil. The mark survives wrapping
// with %w and [errors.Join]; the result's message is err's, and
// errors.Is(GiveUp(err), err) holds.
func GiveUp(err error) error {
	if err == nil {
		return nil
	}
	return &givenUp{err}
}

// givenUp is GiveUp's mark.
type givenUp struct{ err error }

func (e *givenUp) Error() string { return e.err.Error() }
func (e *givenUp) Unwrap() error { return e.err }

// given reports whether err's chain holds GiveUp's mark.
func given(err error) bool {
	_, ok := find[*givenUp](err)
	return ok
}

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

// waitOf returns the wait After put in err's chain, the first one
// errors.As would find.
func waitOf(err error) (time.Duration, bool) {
	e, ok := find[*afterError](err)
	if !ok {
		return 0, false
	}
	return e.wait, true
}
