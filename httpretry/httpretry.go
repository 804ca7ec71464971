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
// into the request's deadline, and keeps a retry budget for each host, so
// that a fleet's retries cannot keep a failing host down. The one goroutine
// it may start, the runtime's, to cut a stalled body, ends before the
// request does.
package httpretry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
// What it retries. A request is sent more than once only when its method
// is idempotent by RFC 9110 §9.2.2 (GET, HEAD, OPTIONS, TRACE, PUT,
// DELETE) or it carries an Idempotency-Key or X-Idempotency-Key header, and
// its body is nil, [http.NoBody], or has GetBody. This is net/http's own
// rule for resending a request on a broken connection (transport.go's
// isReplayable) with PUT and DELETE added, which net/http leaves out only
// because it cannot know whether a request reached the server. Any other
// request goes to Base once, untouched; so does one net/http cannot send
// at all (no URL; through an [*http.Transport], a scheme other than http
// and https, or no host), which would fail the same way each time. A body
// is never read into memory: each retry gets a fresh one from GetBody,
// asked for as soon as a response is to be retried, so that a GetBody that
// fails ends the request before any wait, with the response it followed
// returned as is, and the attempt never sent not counted. (So when the
// limits then end the request, GetBody was called once more than a body
// was sent; that one is closed unread.)
//
// How it waits. As Policy says ([retry.Do], which it runs on), with two
// changes: Retryable replaces Policy.Retryable, which is not consulted; and
// a Retry-After on a 429 or 503 (either form, read by
// [backoff.ParseRetryAfter]; of several, the first) replaces the computed
// wait, widened by backoff.AddJitter(d, max(d/2, time.Second)): clients
// told the same instant otherwise return in it together
// (benchmarks/README.md measures it). A Retry-After above MaxRetryAfter,
// before widening, is not obeyed and not retried: that response is
// returned. A Retry-After on any other status is ignored. The retry limits
// and the request's deadline still apply: a wait that cannot be followed by
// an attempt before the deadline is not started.
//
// What it returns. A response that is not retried, or the last one when
// it gives up before a wait has started (limits, the deadline rule, a
// context that ended during the attempt), is returned as is: body unread,
// nil error, as a client without retries would have returned it. Giving up
// on a transport error returns a [*retry.Error] that wraps it. When the
// context ends during a wait, or while a retried body is drained,
// RoundTrip returns an error whose chain holds the context's cause and
// whose message names the last status or error. A response whose Body is
// nil is read as having [http.NoBody], as net/http's Client reads it.
//
// A budget per host. Backoff spreads a request's retries; it does not make
// them fewer, and under load that keeps coming, the retries of every
// request can keep a failing host down after the cause is gone. So with a
// nil Policy.Budget, the Transport keeps a [retry.Budget] with the defaults
// for each host, made on first use, keyed as net/http keys its connections
// (scheme, host and port, the default port filled in: "host" and
// "host:443" are one): a failing host cannot spend another host's retries,
// and one that fails every request gets 10 retries from this Transport,
// then none until its requests succeed again, each success earning a tenth
// of one. A retry the budget refuses returns the last response as is, as
// the other limits do. A response not retried because it is not worth
// retrying (2xx, 4xx but 408 and 429) earns; a Retry-After past
// MaxRetryAfter or a GetBody that fails earns nothing; a request sent once,
// because it cannot be sent again, neither earns nor spends. A set
// Policy.Budget is shared by every host; [NoBudget] turns budgets off. The
// Transport keeps at most 1,024 hosts' budgets: past that it forgets the
// full ones, which are the same as new ones, and if those are not enough,
// others at random, which start afresh should their host come back.
//
// Connections are reused: a response that is retried has up to 64 KiB of
// its body read and discarded, for at most 100ms (and never past the
// request's deadline), and the body closed, before the wait starts; a body
// longer or slower is closed where it is, and its connection dropped.
// OnRetry and the Logger see, for a retried status, an Event.Err whose
// message is the status line ("503 Service Unavailable"); the Logger's
// records carry the method and the URL, with any password redacted
// ([net/url.URL.Redacted]).
//
// A request that succeeds at once allocates nothing beyond what Base
// allocates, once its host has a budget (the first request to a host makes
// it); a Policy.OnRetry adds one allocation a request, and a Logger two
// (TestAllocs). The Transport must not be copied after first use.
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

	hosts budgets // a Budget for each host, when Policy.Budget is nil
}

const (
	// drainLimit and drainTime bound how much of a retried response's body
	// is read, and for how long, so that its connection can be reused: more
	// than an error page holds, and less than a new TLS handshake costs.
	drainLimit = 64 << 10
	drainTime  = 100 * time.Millisecond

	// defaultMaxRetryAfter is MaxRetryAfter when it is zero or less.
	defaultMaxRetryAfter = time.Minute
)

// DefaultRetryable reports whether an attempt is worth repeating: a
// transport error, or the statuses 408, 429, 500, 502, 503 and 504. Every
// other status, and every 2xx and 3xx, is not. Two kinds of transport error
// are not either, since no retry can fix them: a TLS certificate that fails
// verification ([tls.CertificateVerificationError], or an x509 error, in
// the chain), and [http.ErrSchemeMismatch] (an HTTP server on an https
// URL). (A request net/http cannot send at all the Transport sends once,
// judged from the request itself, not from the words of its error.) It
// does not look at contexts: a context error from an inner timeout is a
// fault like any other, and the Transport itself stops once the request's
// own context is done.
func DefaultRetryable(resp *http.Response, err error) bool {
	if err != nil {
		var (
			verify    *tls.CertificateVerificationError
			authority x509.UnknownAuthorityError
			hostname  x509.HostnameError
			invalid   x509.CertificateInvalidError
		)
		return !errors.As(err, &verify) && !errors.As(err, &authority) && !errors.As(err, &hostname) &&
			!errors.As(err, &invalid) && !errors.Is(err, http.ErrSchemeMismatch)
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
	return (key || xkey) && validMethod(req.Method)
}

// sendable reports whether base can send req at all. Every Base needs a
// URL; an *http.Transport refuses, before sending and each time again, a
// scheme other than http and https and a URL with no host. Other Bases may
// serve other schemes.
func sendable(base http.RoundTripper, req *http.Request) bool {
	if req.URL == nil {
		return false
	}
	if _, ok := base.(*http.Transport); !ok {
		return true
	}
	return (req.URL.Scheme == "http" || req.URL.Scheme == "https") && req.URL.Host != ""
}

// validMethod reports whether m is an RFC 9110 token, as net/http requires
// of a method.
func validMethod(m string) bool {
	return m != "" && strings.IndexFunc(m, func(r rune) bool {
		return r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
	}) < 0
}

// RoundTrip implements [http.RoundTripper]: it sends req through Base and
// retries as the Transport's doc says. It does not modify req, and no
// goroutine it starts outlives it.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if !replayable(req) || !sendable(base, req) {
		return base.RoundTrip(req)
	}
	rt := roundTrip{t: t, base: base, req: req}
	p := t.Policy
	if p.Budget == nil {
		p.Budget = t.hosts.of(req.URL)
	}
	p.Retryable = nil // the Transport's own Retryable decides, in attempt
	p.OnRetry = drain
	if onRetry := t.Policy.OnRetry; onRetry != nil {
		p.OnRetry = func(e retry.Event) { drain(e); onRetry(e) }
	}
	if p.Logger != nil {
		p.Logger = slog.New(&requestHandler{p.Logger.Handler(), req})
	}
	err := retry.Do(req.Context(), p, rt.attempt)
	if rt.next != nil { // a fresh body for a retry that was not made
		rt.next.Close()
	}
	switch {
	case rt.resp != nil:
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
	next     io.ReadCloser  // the body of the next attempt, from GetBody
	resp     *http.Response // the response to return, when an attempt ends the sequence with one
	last     *statusError   // the last attempt's retried status, nil after a transport error
}

// attempt sends the request once: nil means rt.resp is the answer; an
// error is a failure for retry.Do to judge.
func (rt *roundTrip) attempt(ctx context.Context) error {
	req := rt.req
	if rt.attempts > 0 { // a retry: a shallow copy with a fresh body
		r := *req
		if rt.next != nil {
			r.Body, rt.next = rt.next, nil
		}
		req = &r
	}
	rt.attempts++
	rt.last = nil
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close() // a RoundTripper that breaks its contract leaks nothing here
		}
		return rt.failed(ctx, err)
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	return rt.answered(ctx, resp)
}

// failed judges a transport error.
func (rt *roundTrip) failed(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return err // retry.Do gives up on it: the context is done
	case !rt.retryable(nil, err):
		return retry.Permanent(err)
	}
	if gerr := rt.rewind(); gerr != nil {
		return retry.GiveUp(fmt.Errorf("%w; and for a retry, %w", err, gerr))
	}
	return err
}

// answered judges a response: the answer (nil, with rt.resp set), or the
// retried status as an error, with a Retry-After's wait when it names one.
func (rt *roundTrip) answered(ctx context.Context, resp *http.Response) error {
	if ctx.Err() == nil && !rt.retryable(resp, nil) {
		rt.resp = resp
		return nil
	}
	se := &statusError{resp: resp, ctx: ctx}
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
	rt.last = se
	if obey {
		return retry.After(backoff.AddJitter(wait, max(wait/2, time.Second)), se)
	}
	return se
}

// rewind asks GetBody for the body of the next attempt, when the request
// has one.
func (rt *roundTrip) rewind() error {
	req := rt.req
	if req.Body == nil || req.Body == http.NoBody { // else replayable saw GetBody
		return nil
	}
	body, err := req.GetBody()
	if err != nil {
		return fmt.Errorf("httpretry: rewinding the request body: %w", err)
	}
	rt.next = body
	return nil
}

// retryAfter reads a 429's or 503's Retry-After: the wait it asks for, and
// whether there is one.
func (rt *roundTrip) retryAfter(resp *http.Response) (time.Duration, bool) {
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
func (rt *roundTrip) retryable(resp *http.Response, err error) bool {
	if f := rt.t.Retryable; f != nil {
		return f(resp, err)
	}
	return DefaultRetryable(resp, err)
}

// drain runs as OnRetry, just before each wait: it reads up to drainLimit
// of the retried response's body, for up to drainTime and never past the
// request's deadline, and closes it, so that its connection goes back to
// the pool and a context that ends during the wait leaves nothing open. A
// body slower than that is closed where it is, which drops its connection
// and ends a Read blocked in net/http's body. It finds the response in the
// Event, so that RoundTrip's own state need not escape to the heap.
func drain(e retry.Event) {
	var se *statusError
	if !errors.As(e.Err, &se) || se.drained {
		return
	}
	se.drained = true
	body := se.resp.Body
	limit := drainTime
	if deadline, ok := se.ctx.Deadline(); ok {
		limit = min(limit, time.Until(deadline))
	}
	cut := make(chan struct{})
	timer := time.AfterFunc(limit, func() { body.Close(); close(cut) })
	io.CopyN(io.Discard, body, drainLimit)
	if !timer.Stop() {
		<-cut // the cut ran: it ends here, not after RoundTrip
	}
	body.Close()
}

// statusError is a retried response, as the error retry.Do judges: its
// message is the status line.
type statusError struct {
	resp    *http.Response
	ctx     context.Context // the request's, which bounds the drain
	drained bool            // its body was drained and closed: it will not be returned
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
