// Package httpretry is an [http.RoundTripper] that retries what can be
// sent again, waits as a [retry.Policy] says, widens a server's Retry-After
// so that its clients do not come back together, and returns the last
// response as a client without retries would have:
//
//	client := &http.Client{Transport: &httpretry.Transport{}}
//
// It retries only requests that can be sent twice: idempotent methods, or an
// Idempotency-Key header, with a body it can rewind. It never reads a body
// into memory, never obeys a Retry-After past MaxRetryAfter, never sleeps
// into the request's deadline, and starts no goroutine.
package httpretry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/retry"
)

// Transport is an [http.RoundTripper] that retries through Base, as
// Policy and Retryable say. The zero Transport is usable: it sends through
// [http.DefaultTransport], retries DefaultRetryable's failures 5 times with
// the waits "200ms×2 up to 30s, full jitter", and obeys a Retry-After of up
// to a minute. A Transport is safe for concurrent use when its fields are
// not changed while it is in use (and Policy.Schedule.Rand is nil; see
// [retry.Policy]).
//
// What it retries. A request is sent more than once only when net/http
// itself would resend it (transport.go's isReplayable): its method is
// idempotent (GET, HEAD, OPTIONS, TRACE, PUT, DELETE) or it carries an
// Idempotency-Key or X-Idempotency-Key header, and its body is nil,
// [http.NoBody], or has GetBody. Any other request goes to Base once,
// untouched. A body is never read into memory: each retry gets a fresh one
// from GetBody.
//
// How it waits. As Policy says ([retry.Do], which it runs on), with two
// changes: Retryable replaces Policy.Retryable, which is not consulted; and
// a Retry-After on a 429 or 503 (either form, read by
// [backoff.ParseRetryAfter]) replaces the computed wait, widened by
// backoff.AddJitter(d, max(d/2, time.Second)): clients told the same
// instant otherwise return in it together (benchmarks/README.md measures
// it). With Policy.Schedule.Rand set, that draw comes from it too, so a
// seeded sequence repeats whole. A Retry-After above MaxRetryAfter, before
// widening, is not obeyed and not retried: that response is returned. A
// Retry-After on any other status is ignored. The retry limits and the
// request's deadline still apply: a wait that cannot be followed by an
// attempt before the deadline is not started.
//
// What it returns. A response that is not retried, or the last one when
// it gives up before a wait has started (limits, the deadline rule, a
// context that ended during the attempt), is returned as is: body unread,
// nil error, as a client without retries would have returned it. Giving up
// on a transport error returns a [*retry.Error] that wraps it. When the
// context ends during a wait, RoundTrip returns an error whose chain holds
// the context's cause and whose message names the last status or error.
//
// Connections are reused: a response that is retried has up to 64 KiB of
// its body read and discarded, and the body closed, before the wait
// starts. OnRetry and the Logger see, for a retried status, an Event.Err
// whose message is the status line ("503 Service Unavailable"); the
// Logger's records carry the method and the URL, with any password
// redacted ([url.URL.Redacted]).
//
// A request that succeeds at once allocates nothing beyond what Base
// allocates; a Policy.OnRetry adds one allocation a request, and a Logger
// two (TestAllocs).
type Transport struct {
	// Base sends each attempt. Nil means http.DefaultTransport.
	Base http.RoundTripper
	// Policy gives the waits, the limits, OnRetry and the Logger.
	// Policy.Retryable is not consulted.
	Policy retry.Policy
	// Retryable reports whether an attempt's outcome is worth another
	// attempt: a response (err nil) or a transport error (resp nil). Nil
	// means DefaultRetryable. It is not asked once the request's context is
	// done.
	Retryable func(resp *http.Response, err error) bool
	// MaxRetryAfter is the longest Retry-After obeyed; a response that asks
	// for longer is returned as is. Zero or less means one minute.
	MaxRetryAfter time.Duration
}

// drainLimit is how much of a retried response's body is read so that its
// connection can be reused: more than an error page holds, and far less
// than a new TLS handshake costs. A longer body is closed unread and its
// connection is dropped.
const drainLimit = 64 << 10

// defaultMaxRetryAfter is MaxRetryAfter when it is zero or less.
const defaultMaxRetryAfter = time.Minute

// DefaultRetryable reports whether an attempt is worth repeating: a
// transport error, or the statuses 408, 429, 500, 502, 503 and 504. Every
// other status, and every 2xx and 3xx, is not. Two kinds of transport error
// are not either, since no retry can fix them: a TLS certificate that fails
// verification ([tls.CertificateVerificationError], or an x509 error, in
// the chain), and a request net/http's Transport refuses before sending
// (an unsupported scheme, no host, an invalid method: net/http gives these
// no type, so their messages are matched). It does not look at contexts: a
// context error from an inner timeout is a fault like any other, and the
// Transport itself stops once the request's own context is done.
func DefaultRetryable(resp *http.Response, err error) bool {
	if err != nil {
		return !unfixable(err)
	}
	if resp == nil {
		return false
	}
	switch resp.StatusCode {
	case http.StatusRequestTimeout, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// unfixable reports whether err is a transport error no retry can fix.
func unfixable(err error) bool {
	var (
		verify    *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	if errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &hostname) || errors.As(err, &invalid) {
		return true
	}
	if errors.Is(err, http.ErrSchemeMismatch) {
		return true
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		msg := e.Error()
		for _, refusal := range requestRefusals {
			if strings.HasPrefix(msg, refusal) {
				return true
			}
		}
	}
	return false
}

// requestRefusals are the messages of the errors net/http's Transport
// returns, before sending, for a request it cannot serve.
var requestRefusals = []string{
	"unsupported protocol scheme",
	"http: no Host in request URL",
	"http: nil Request.URL",
	"net/http: invalid method",
}

// replayable reports whether req may be sent more than once: net/http's own
// rule (Request.isReplayable), with PUT and DELETE, which RFC 9110 §9.2.2
// makes idempotent, beside GET, HEAD, OPTIONS and TRACE.
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
}

// RoundTrip implements [http.RoundTripper]: it sends req through Base and
// retries as the Transport's doc says. It does not modify req, and no
// goroutine it starts outlives it (it starts none).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if !replayable(req) {
		return base.RoundTrip(req)
	}
	rt := roundTrip{t: t, base: base, req: req}
	p := t.Policy
	p.Retryable = nil // the Transport's own Retryable decides, in attempt
	p.OnRetry = drain
	if onRetry := t.Policy.OnRetry; onRetry != nil {
		p.OnRetry = func(e retry.Event) { drain(e); onRetry(e) }
	}
	if p.Logger != nil {
		p.Logger = slog.New(&requestHandler{p.Logger.Handler(), req})
	}
	err := retry.Do(req.Context(), p, rt.attempt)
	switch {
	case err == nil:
		return rt.resp, nil
	case rt.last != nil && !rt.last.drained: // gave up on a status before any wait started
		return rt.last.resp, nil
	case rt.attempts == 0 && req.Body != nil: // the context was done before the first attempt
		req.Body.Close() // a RoundTripper closes the body, including on errors
	}
	return nil, err
}

// roundTrip is the state of one RoundTrip.
type roundTrip struct {
	t        *Transport
	base     http.RoundTripper
	req      *http.Request
	attempts int
	resp     *http.Response // the response to return, when an attempt ends the sequence with one
	last     *statusError   // the last attempt's retried status, nil after a transport error
}

// attempt sends the request once: nil means rt.resp is the answer; an
// error is a failure for retry.Do to judge.
func (rt *roundTrip) attempt(ctx context.Context) error {
	req := rt.req
	if rt.attempts > 0 { // a retry: a shallow copy with a fresh body
		r := *req
		if req.GetBody != nil && req.Body != nil && req.Body != http.NoBody {
			body, err := req.GetBody()
			if err != nil {
				rt.last = nil
				return retry.Permanent(fmt.Errorf("httpretry: rewinding the request body: %w", err))
			}
			r.Body = body
		}
		req = &r
	}
	rt.attempts++
	resp, err := rt.base.RoundTrip(req)
	rt.last = nil
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close() // a RoundTripper that breaks its contract leaks nothing here
		}
		if ctx.Err() == nil && !rt.retryable(nil, err) {
			return retry.Permanent(err)
		}
		return err // retry.Do gives up on it if the context is done
	}
	if ctx.Err() != nil || !rt.retryable(resp, nil) {
		rt.resp = resp
		return nil
	}
	se := &statusError{resp: resp}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		if d, ok := backoff.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			limit := rt.t.MaxRetryAfter
			if limit <= 0 {
				limit = defaultMaxRetryAfter
			}
			if d > limit {
				rt.resp = resp // asked to wait too long: the caller sees the answer and its header
				return nil
			}
			rt.last = se
			return retry.After(widen(d, rt.t.Policy.Schedule.Rand), se)
		}
	}
	rt.last = se
	return se
}

// widen spreads a server's wait d as benchmarks/README.md measured: plus a
// draw from [0, max(d/2, 1s)), backoff.AddJitter(d, max(d/2, time.Second)).
// With r set (Policy.Schedule.Rand) the draw comes from r, so that a seeded
// sequence is reproducible whole. Near math.MaxInt64 the extra is drawn from
// what is left, as AddJitter does: the sum never wraps.
func widen(d time.Duration, r *rand.Rand) time.Duration {
	if r == nil {
		return backoff.AddJitter(d, max(d/2, time.Second))
	}
	lo, hi := widenRange(d)
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

// widenRange is the interval, both ends included, that AddJitter(d,
// max(d/2, 1s)) draws from: d plus [0, max(d/2, 1s)) in whole nanoseconds,
// its top held at math.MaxInt64. d ≥ 0, as ParseRetryAfter returns it.
func widenRange(d time.Duration) (lo, hi time.Duration) {
	spread := max(d/2, time.Second)
	return d, d + min(spread-1, math.MaxInt64-d)
}

// retryable asks the Transport's Retryable, or DefaultRetryable.
func (rt *roundTrip) retryable(resp *http.Response, err error) bool {
	if f := rt.t.Retryable; f != nil {
		return f(resp, err)
	}
	return DefaultRetryable(resp, err)
}

// drain runs as OnRetry, just before each wait: it reads up to drainLimit
// of the retried response's body and closes it, so that its connection goes
// back to the pool and a context that ends during the wait leaves nothing
// open. It finds the response in the Event, so that RoundTrip's own state
// need not escape to the heap.
func drain(e retry.Event) {
	for err := e.Err; err != nil; err = errors.Unwrap(err) {
		if se, ok := err.(*statusError); ok {
			if !se.drained {
				se.drained = true
				io.CopyN(io.Discard, se.resp.Body, drainLimit)
				se.resp.Body.Close()
			}
			return
		}
	}
}

// statusError is a retried response, as the error retry.Do judges: its
// message is the status line.
type statusError struct {
	resp    *http.Response
	drained bool // its body was drained and closed: it will not be returned
}

func (e *statusError) Error() string {
	if s := e.resp.Status; s != "" {
		return s
	}
	code := e.resp.StatusCode
	return strconv.Itoa(code) + " " + http.StatusText(code)
}

// requestHandler adds the request's method and URL, password redacted, to
// each record, when a record is written: Logger.With would format them on
// every request, including the many that log nothing.
type requestHandler struct {
	slog.Handler
	req *http.Request
}

func (h *requestHandler) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(slog.String("method", method(h.req)), slog.String("url", h.req.URL.Redacted()))
	return h.Handler.Handle(ctx, r)
}

func (h *requestHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &requestHandler{h.Handler.WithAttrs(attrs), h.req}
}

func (h *requestHandler) WithGroup(name string) slog.Handler {
	return &requestHandler{h.Handler.WithGroup(name), h.req}
}

func method(req *http.Request) string {
	if req.Method == "" {
		return http.MethodGet
	}
	return req.Method
}
