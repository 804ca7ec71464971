package httpretry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/internal/stats"
	"github.com/unherd/backoff/retry"
)

// request is what one RoundTrip sends, and through what: the part of its
// state a flight copies, so that the rest need not escape to the heap.
type request struct {
	t      *Transport
	base   http.RoundTripper
	req    *http.Request
	budget *retry.Budget // the Policy's, or the host's: retries and hedges take from it
	hedge  *hedgeHost    // what the Hedge keeps of the host: its allowance, its latency
	lat    *latency      // the host's latency, for an adaptive Hedge
	row    *stats.Row    // the Policy's Name's row for the host, where hedges and timeouts count
}

// roundTrip is the state of one RoundTrip.
type roundTrip struct {
	request
	attempts int
	sends    int            // requests sent, copies and retries together
	next     io.ReadCloser  // the body of the next attempt, from GetBody
	resp     *http.Response // the response to return, when an attempt ends the sequence with one
	last     *StatusError   // the last attempt's retried status, nil after a transport error
	bare     error          // an error to return as Base gave it: an HTTP server on an https URL
}

// attempt sends the request once: nil means rt.resp is the answer; an
// error is a failure for retry.Do to judge.
func (rt *roundTrip) attempt(ctx context.Context) error {
	req, body := rt.req, rt.req.Body
	if rt.next != nil { // a retry's fresh body
		body, rt.next = rt.next, nil
	}
	rt.attempts++
	rt.last = nil
	var resp *http.Response
	var err error
	answer, delay, hedges := false, rt.hedgeDelay(), 0
	if delay > 0 || rt.t.AttemptTimeout > 0 || rt.lat != nil {
		var sends int
		resp, answer, sends, err = rt.fly(ctx, req, body, delay, rt.sends)
		rt.sends += sends
		hedges = sends - 1
	} else {
		if rt.sends > 0 { // a retry: a shallow copy with the fresh body, that says it is a resend
			req = req.WithContext(withResend(ctx, rt.sends))
			req.Body = body
		}
		rt.sends++
		resp, err = send(rt.base, req)
	}
	switch {
	case err != nil:
		if err = rt.failed(ctx, err); hedges > 0 {
			err = &hedgedError{err, hedges}
		}
		return err
	case delay == 0:
		answer = rt.answers(ctx, resp)
	}
	if answer {
		rt.resp = resp
		return stats.AnswerOf(stats.ClassOf(resp.StatusCode), hedges) // retry.Do's success, with its class
	}
	return rt.answered(ctx, resp, hedges)
}

// hedgedError is the error of an attempt whose copies all failed without
// a response, when it sent hedges: it says how many, for the call's
// count of hedges, and is otherwise the error as judged (errors.Is and
// errors.As see through it, as retry.Do's own tests of an error do).
type hedgedError struct {
	error
	hedges int
}

func (e *hedgedError) Unwrap() error { return e.error }

// facts says, for an error an attempt returned, what RoundTrip returns
// should the call end on it, by class, and the hedges the attempt sent:
// the stats.Facts of the rows httpretry counts in. It follows RoundTrip's
// choice after retry.Do: the response of a status error, unless a wait
// began after it; no response for any other error.
func facts(err error) (class, hedges int) {
	var he *hedgedError
	if errors.As(err, &he) {
		hedges = he.hedges
	}
	var se *StatusError
	if !errors.As(err, &se) {
		return stats.NoResponse, hedges
	}
	if se.waited {
		return stats.NoResponse, se.hedges
	}
	return stats.ClassOf(se.Response.StatusCode), se.hedges
}

// firstWait is the first wait of a Policy whose Curve leaves BaseDelay
// zero, scaled to a bounded attempt: a tenth of AttemptTimeout, or
// without one the hedge delay (fixed, or the host's estimate), at most
// the 200ms of retry's default curve; 0, that default, for an attempt
// that nothing bounds.
func (rt *request) firstWait() time.Duration {
	var d time.Duration
	switch t := rt.t; {
	case t.AttemptTimeout > 0:
		d = max(t.AttemptTimeout/10, 1)
	case t.Hedge != nil:
		d = rt.hedgeDelay()
	}
	if d <= 0 {
		return 0
	}
	return max(min(d, maxFirstWait), 1)
}

// maxFirstWait is the first wait of retry's default curve.
const maxFirstWait = 200 * time.Millisecond

// answers reports whether resp is the answer: not a failure Retryable
// retries, and the request's context not done.
func (rt *request) answers(ctx context.Context, resp *http.Response) bool {
	return ctx.Err() == nil && !rt.retryable(resp, nil)
}

// failed judges a transport error.
func (rt *roundTrip) failed(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return err // retry.Do gives up on it: the context is done
	case schemeMismatch(err):
		rt.bare = err
		return retry.Permanent(err)
	case !rt.retryable(nil, err):
		return retry.Permanent(err)
	}
	if gerr := rt.rewind(); gerr != nil {
		return retry.GiveUp(fmt.Errorf("%w; and for a retry, %w", err, gerr))
	}
	return err
}

// answered judges a response that is not the answer: the retried status
// as an error, with a Retry-After's wait when it names one.
func (rt *roundTrip) answered(ctx context.Context, resp *http.Response, hedges int) error {
	se := &StatusError{Response: resp, hedges: hedges}
	if ctx.Err() != nil {
		rt.last = se // retry.Do gives up on it, and RoundTrip returns it as is
		return se
	}
	wait, obey := rt.retryAfter(resp)
	// Asked to wait too long, or unable to send the body again: the caller
	// sees the answer as is, and the call, a failure, earns no budget.
	if wait > rt.maxRetryAfter() {
		rt.resp = resp
		return retry.GiveUp(se)
	}
	if gerr := rt.rewind(); gerr != nil {
		rt.resp = resp
		return retry.GiveUp(fmt.Errorf("%w; and for a retry, %w", se, gerr))
	}
	se.drain(ctx)
	rt.last = se
	if ctx.Err() != nil { // ended during the drain: retry.Do gives up, and RoundTrip returns no response
		se.waited = true
		resp.Body.Close()
		return se
	}
	if obey {
		return retry.After(backoff.AddJitter(wait, max(wait/2, time.Second)), se)
	}
	return se
}

// rewind asks GetBody for the body of the next attempt, when the request
// has one. A nil body from GetBody fails, as net/http's own rewind does
// not check: sent in its place, it would panic net/http's write loop.
func (rt *roundTrip) rewind() error {
	req := rt.req
	if req.Body == nil || req.Body == http.NoBody { // else replayable saw GetBody
		return nil
	}
	body, err := req.GetBody()
	switch {
	case err != nil:
		return fmt.Errorf("httpretry: rewinding the request body: %w", err)
	case body == nil:
		return errors.New("httpretry: rewinding the request body: GetBody returned a nil body")
	}
	rt.next = body
	return nil
}

// retryAfter reads a 429's or 503's Retry-After: the wait it asks for, and
// whether there is one.
func (rt *request) retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	return backoff.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
}

func (rt *roundTrip) maxRetryAfter() time.Duration {
	if limit := rt.t.MaxRetryAfter; limit > 0 {
		return limit
	}
	return defaultMaxRetryAfter
}

// retryable asks the Transport's Retryable, or DefaultRetryable.
func (rt *request) retryable(resp *http.Response, err error) bool {
	if f := rt.t.Retryable; f != nil {
		return f(resp, err)
	}
	return DefaultRetryable(resp, err)
}

// waiting runs as OnRetry, just before each wait: it closes the retried
// response's body, which drops the connection of a body longer than the
// drain read, so that a context that ends during the wait leaves nothing
// open. It finds the response in the Event, so that RoundTrip's own state
// need not escape to the heap.
func waiting(e retry.Event) {
	var se *StatusError
	if errors.As(e.Err, &se) && !se.waited {
		se.waited = true
		se.Response.Body.Close()
	}
}
