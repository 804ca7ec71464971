// Package httpretry is an [http.RoundTripper] that retries what can be
// sent again, waits as a [retry.Policy] says, widens a server's Retry-After
// so that its clients do not come back together, and returns the last
// response as a client without retries would have:
//
//	client := &http.Client{Transport: &httpretry.Transport{}}
//
// It never reads a request body into memory, never obeys a Retry-After
// past [Transport].MaxRetryAfter, never sleeps into the request's
// deadline, and keeps a retry budget for each host, so that a fleet's
// retries cannot keep a failing host down.
//
// # What it retries
//
// A request is sent more than once only when its method is idempotent by
// RFC 9110 §9.2.2 (GET, HEAD, OPTIONS, TRACE, PUT, DELETE) or it carries an
// Idempotency-Key or X-Idempotency-Key header, and its body is nil,
// [http.NoBody], or has GetBody. This is net/http's own rule for resending
// a request on a broken connection (transport.go's isReplayable), with PUT
// and DELETE added, which net/http leaves out only because it cannot know
// whether a request reached the server. A key counts as net/http counts
// it, but for a header sent with an empty value, which names no key; the
// zero-length slice net/http reads as "idempotent, but send no header"
// counts.
//
// Any other request goes to Base once (untouched, but for
// AttemptTimeout's context, which bounds it too), and so does one that
// net/http refuses before sending, each time again, judged from the
// request: no URL, no host, a port that is not a number up to 65535, a nil
// Header, a header or trailer whose name is not a token or whose value
// holds CR, LF, NUL or another control byte but tab, and through an
// [*http.Transport] a scheme other than http and https. Such a request neither spends nor earns a budget. An HTTP
// server on an https URL, which only shows in the reply, is not retried
// either, and its error comes back as Base gave it, so that
// [http.Client] reports [http.ErrSchemeMismatch].
//
// DefaultRetryable, or the Transport's Retryable, chooses which outcomes
// are failures worth another attempt. Policy.Retryable, when set, then
// decides among them as [retry.Do] decides: it is asked with the transport
// error, or with a [*StatusError] for a retried status, and a false ends
// the request there.
//
// A request body is never read into memory: each retry gets a fresh one
// from GetBody, asked for as soon as a response is to be retried, so that
// a GetBody that fails, or returns no body, ends the request before any
// wait, with the response it followed returned as is, and the attempt
// never sent not counted. (When the limits then end the request, GetBody
// was called once more than a body was sent; that one is closed unread.)
//
// # How it waits
//
// As Policy says ([retry.Do], which it runs on), with one change: a
// Retry-After on a 429 or 503 (either form, read by
// [backoff.ParseRetryAfter]; of several, the first) replaces the computed
// wait, widened by backoff.AddJitter(d, max(d/2, time.Second)): clients
// told the same instant otherwise return in it together
// (benchmarks/README.md measures it). So a wait obeyed can reach
// d + max(d/2, 1s), 1.5 × MaxRetryAfter at most for a long one. A
// Retry-After above MaxRetryAfter, before widening, is not obeyed and not
// retried: that response is returned. A Retry-After on any other status
// is ignored. The retry limits and the request's deadline still apply: a
// wait that cannot be followed by an attempt before the deadline is not
// started, and the time an attempt took counts its drain (below).
//
// # What it returns
//
// A response that is not retried, or the last one when it gives up before
// a wait has started (the limits, the deadline rule, the budget, a context
// that ended during the attempt), is returned with a nil error, as a
// client without retries would have returned it: its status, its header,
// and its body, read from the start. Giving up on a transport error
// returns a [*retry.Error] that wraps it. When the context ends during a
// wait, or while a retried body is drained, RoundTrip returns an error
// whose chain holds the context's cause and whose message names the last
// status or error. A response whose Body is nil is read as having
// [http.NoBody], as net/http's Client reads it; a Base that returns
// neither a response nor an error breaks the RoundTripper contract, and
// RoundTrip returns an error that says so.
//
// # A budget per host
//
// Backoff spreads a request's retries; it does not make them fewer, and
// under load that keeps coming, the retries of every request can keep a
// failing host down after the cause is gone. So with a nil Policy.Budget,
// the Transport keeps a [retry.Budget] with the defaults for each host,
// made on first use: a failing host cannot spend another host's retries.
// A new budget holds 10 retries; each request to the host that does not
// fail earns a tenth of one; and the budget's room fades from those 10
// into a tenth of the host's recent successes (each counting less by e
// every 10 seconds), never below one: a busy client has the room to retry
// a burst of failures at once, and a host that fails every request gets
// the retries this Transport had saved for it, then none until its
// requests succeed again. A retry the
// budget refuses returns the last response as is, as the other limits do.
// A response not retried because it is not worth retrying (2xx, 4xx but
// 408 and 429) earns; a Retry-After past MaxRetryAfter or a GetBody that
// fails earns nothing. A set Policy.Budget is shared by every host;
// [NoBudget] turns budgets off. Hedges (below) take from the same budget.
//
// Hosts are keyed as net/http keys its connections: the scheme, and
// [net/url.URL.Hostname] and [net/url.URL.Port] with the default port
// filled in, so that "host" and "host:443" are one, in any case. The one
// exception is a name that IDNA maps: net/http sends "bücher.example",
// "BÜCHER.example" and "xn--bcher-kva.example" to one host, which this
// package, with no IDNA mapping in the standard library, keys as two (the
// Unicode spellings, lowered, are one). The Transport keeps at most 1,024
// hosts' budgets: past that it forgets first those holding within a retry
// of a new one's Burst (a host forgotten so gets a new Budget should it
// come back, and loses any room above Burst its requests had made, which
// they make again), and if those are not enough, others at random.
//
// # A slow dependency
//
// A failing dependency answers fast; a slow one holds the caller. Two
// fields bound it, both off by default. AttemptTimeout bounds each request
// sent until its response headers arrive: past it, that request is
// cancelled and the attempt fails with [ErrAttemptTimeout], which
// DefaultRetryable retries; the body of a response that came in time is
// never cut by it (unlike [http.Client].Timeout's), and its context lives
// until the body is closed or read to its end. A [Hedge] sends another
// copy of a replayable request that has had no headers for the hedge
// delay, fixed or the host's own 95th percentile: the first copy whose
// response Retryable does not retry wins, and the others are cancelled,
// their bodies closed. A copy that fails, retryably and naming no wait of
// its own, has the next copy sent at once rather than after the delay
// (gRFC A6's hedging does the same), and one that fails while another is
// in flight does not end the attempt; when every copy has failed, the
// attempt has, with the outcome of the copy that failed last, and
// retry.Do's rules decide the retry. Each hedge has a body of its own
// from GetBody while the other copies may still be sending theirs, so a
// GetBody must return bodies that do not share a reader (those
// http.NewRequest makes do not; one that rewinds a shared file does).
// Each copy after the first takes a token from the host's budget, as a
// retry does: with none left, no hedge, so that retries and hedges together never pass the budget's
// bound, and in a storm, where the tokens are gone, hedging stops by
// itself. Error.Attempts and Event.Attempt count attempts, not copies.
// The first copy goes in the caller's goroutine, and each hedge in the
// goroutine of the timer that sends it, which ends once Base returns the
// cancelled request.
//
// # Counted
//
// A Transport whose Policy has a Name counts each request it may retry in
// [retry.Stats], under that name and the host ("api.example:443"): the
// outcome, attempts (not copies), waits, why it stopped, and beside them
// the hedges sent and won, the attempt timeouts (of a request it does not
// retry too: a POST without a key), and the tokens of the budget the
// host's last request used, as a gauge; hosts past 1,024 count together as
// "other". It adds
// no allocation to a request that succeeds at once. Transport.OnRetry and
// OnDone see the request with each retry and each end, and OnDone's Cause
// is [retry.ErrBudget] when the budget refused a retry, even when the
// response comes back as is. [Resend] tells a Base how many sends of its
// request came before, as http.request.resend_count counts them
// (github.com/unherd/backoff/otelretry sets it on each resend's span).
//
// # Connections and bodies
//
// A response that is to be retried has up to 64 KiB of its body read into
// memory, for at most 100ms and never past the request's deadline, before
// retry decides: a body that ends there is closed at once, so that its
// connection goes back to the pool, and the response, should no retry
// follow, is returned with what was read. A body longer than that is kept
// open, unread past it, and closed before the wait, which drops its
// connection; one slower than that is cut where it is, and a response
// returned after a cut yields what was read and then an error that says
// so. The runtime's timer goroutine makes the cut; it ends before the
// attempt does.
//
// OnRetry and the Logger see, for a retried status, an Event.Err that is a
// [*StatusError], whose message is the status line ("503 Service
// Unavailable"); the Logger's records carry the method and the URL, with
// any password redacted ([net/url.URL.Redacted]).
//
// A request that succeeds at once allocates nothing beyond what Base
// allocates, once its host has a budget (the first request to a host makes
// it); a Policy.OnRetry adds one allocation a request, and a Logger two
// (TestAllocs). Transport.CloseIdleConnections reaches Base's, so that
// [http.Client.CloseIdleConnections] closes the connections.
package httpretry

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/internal/stats"
	"github.com/unherd/backoff/retry"
)

// Transport is an [http.RoundTripper] that retries through Base, as Policy
// and Retryable say; the package doc says what it retries, how it waits
// and what it returns. The zero Transport is usable: it sends through
// [http.DefaultTransport], retries DefaultRetryable's failures 5 times with
// the waits "200ms×2 up to 30s, full jitter", obeys a Retry-After of up to
// a minute, and keeps a budget for each host. A Transport is safe for
// concurrent use when its fields are not changed while it is in use (and
// Policy.Schedule.Rand is nil; see [retry.Policy]), and must not be copied
// after first use.
type Transport struct {
	// Base sends each attempt. Nil means http.DefaultTransport.
	Base http.RoundTripper
	// Policy gives the waits, the limits, the budget, OnRetry and the
	// Logger. Its Retryable, when set, decides among the failures that
	// Retryable below chooses, as retry.Do decides.
	Policy retry.Policy
	// Retryable reports whether an attempt's outcome is a failure worth
	// another attempt: a response (err nil) or a transport error (resp
	// nil). Nil means DefaultRetryable. It is not asked once the request's
	// context is done.
	Retryable func(resp *http.Response, err error) bool
	// MaxRetryAfter is the longest Retry-After obeyed; a response that asks
	// for longer is returned as is. Zero or less means one minute.
	MaxRetryAfter time.Duration
	// AttemptTimeout, when above zero, bounds each request sent, from the
	// start of its RoundTrip on Base until its response headers arrive:
	// past it, that request is cancelled, and the attempt fails with
	// ErrAttemptTimeout, which DefaultRetryable retries. The body of a
	// response that arrived in time is never cut by it. Zero or less: none.
	AttemptTimeout time.Duration
	// Hedge, when set, sends another copy of a replayable request whose
	// headers are slow to come (see [Hedge]). Nil: no hedging.
	Hedge *Hedge
	// OnRetry, when set, is called before each wait, after
	// Policy.OnRetry, with the request as the caller gave it: a hook that
	// sees the host. For a retried status, Event.Err is a [*StatusError].
	OnRetry func(req *http.Request, e retry.Event)
	// OnDone, when set, is called once as RoundTrip ends a request it may
	// retry, after Policy.OnDone, with the request and how it ended
	// ([retry.Done]): its Cause is [retry.ErrBudget] when the budget
	// refused a retry, whether RoundTrip then returns the last response
	// (for a status) or an error; and Err the last status (a
	// [*StatusError]) or transport error. A request sent once because it
	// cannot be sent again is not told.
	OnDone func(req *http.Request, d retry.Done)

	budgets hosts[retry.Budget] // a Budget for each host, when Policy.Budget is nil
	labels  hosts[string]       // each host's name in retry.Stats, with a Policy.Name
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
// other status, and every 2xx and 3xx, is not. Three kinds of transport
// error are not either, since no retry can fix them: a TLS certificate
// that fails verification ([tls.CertificateVerificationError], or an x509
// error, in the chain), an HTTP server on an https URL (a
// [tls.RecordHeaderError] whose record starts "HTTP/", or
// [http.ErrSchemeMismatch]), and a Base that returned neither a response
// nor an error. It does not look at contexts: a context error from an
// inner timeout is a fault like any other, and the Transport itself stops
// once the request's own context is done.
func DefaultRetryable(resp *http.Response, err error) bool {
	if err != nil {
		var (
			verify    *tls.CertificateVerificationError
			authority x509.UnknownAuthorityError
			hostname  x509.HostnameError
			invalid   x509.CertificateInvalidError
		)
		return !errors.As(err, &verify) && !errors.As(err, &authority) && !errors.As(err, &hostname) &&
			!errors.As(err, &invalid) && !schemeMismatch(err) && !errors.Is(err, errNilResponse)
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

// schemeMismatch reports whether err says an HTTP server answered a TLS
// handshake: the record net/http's Client turns into ErrSchemeMismatch, or
// that error.
func schemeMismatch(err error) bool {
	var record tls.RecordHeaderError
	return errors.As(err, &record) && string(record.RecordHeader[:]) == "HTTP/" || errors.Is(err, http.ErrSchemeMismatch)
}

// errNilResponse is the error for a Base that returns (nil, nil).
var errNilResponse = errors.New("httpretry: Base returned a nil *http.Response with a nil error")

// RoundTrip implements [http.RoundTripper]: it sends req through Base and
// retries as the package doc says. It does not modify req. It starts no
// goroutine but for a hedge's, which lasts, once RoundTrip has returned,
// as long as Base takes to return the cancelled copy, and the runtime's
// that cuts a stalled body, which ends before the attempt does.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base()
	switch {
	case !sendable(base, req):
		return send(base, req)
	case !replayable(req) && t.AttemptTimeout > 0:
		rt := roundTrip{request: request{t: t, base: base, req: req}}
		if p := t.Policy; p.Name != "" { // its attempt timeout is counted, as a retried request's is
			rt.row = stats.Default.Row(p.Name, *t.labels.of(keyOf(req.URL), never, label))
		}
		resp, _, _, err := rt.fly(req.Context(), req, req.Body, 0, 0)
		return resp, err
	case !replayable(req):
		return send(base, req)
	}
	rt := roundTrip{request: request{t: t, base: base, req: req}}
	p := t.Policy
	if p.Budget == nil || p.Name != "" || t.Hedge != nil && t.Hedge.adaptive() {
		key := keyOf(req.URL)
		if p.Budget == nil {
			p.Budget = t.budgets.of(key, full, zero)
		}
		if p.Name != "" {
			p.Host = *t.labels.of(key, never, label)
			rt.row = stats.Default.Row(p.Name, p.Host)
		}
		if t.Hedge != nil && t.Hedge.adaptive() {
			rt.lat = t.Hedge.hosts.of(key, never, zero)
		}
	}
	rt.budget = p.Budget
	p.OnRetry = waiting
	if onRetry, seen := t.Policy.OnRetry, t.OnRetry; onRetry != nil || seen != nil {
		p.OnRetry = func(e retry.Event) {
			waiting(e)
			if onRetry != nil {
				onRetry(e)
			}
			if seen != nil {
				seen(req, e)
			}
		}
	}
	if onDone, seen := t.Policy.OnDone, t.OnDone; seen != nil {
		p.OnDone = func(d retry.Done) {
			if onDone != nil {
				onDone(d)
			}
			seen(req, d)
		}
	}
	if p.Logger != nil {
		p.Logger = slog.New(&requestHandler{p.Logger.Handler(), req})
	}
	err := retry.Do(req.Context(), p, rt.attempt)
	if rt.next != nil { // a fresh body for a retry that was not made
		rt.next.Close()
	}
	switch last := rt.last; {
	case rt.resp != nil:
		return rt.resp, nil
	case rt.bare != nil:
		return nil, rt.bare
	case last != nil && !last.waited && !(last.drained && req.Context().Err() != nil):
		return last.Response, nil // gave up on a status before any wait started
	case last != nil:
		last.Response.Body.Close()
	case rt.attempts == 0 && req.Body != nil: // the context was done before the first attempt
		req.Body.Close() // a RoundTripper closes the body, including on errors
	}
	return nil, err
}

// Resend returns how many times the request that ctx belongs to was sent
// before, by the Transport that sent it: 0 for the first send, 1 for the
// first retry or hedge, and so on, counting every copy and every retry of
// one RoundTrip. Base reads it from its request's context; it is what
// OpenTelemetry's http.request.resend_count counts, which
// github.com/unherd/backoff/otelretry sets on each resend's span. A first
// send's context carries nothing, so that it costs nothing.
func Resend(ctx context.Context) int {
	n, _ := ctx.Value(resendKey{}).(int)
	return n
}

type resendKey struct{}

func withResend(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, resendKey{}, n)
}

// CloseIdleConnections closes Base's idle connections, when Base has a
// CloseIdleConnections method (as [*http.Transport] has), so that
// [http.Client.CloseIdleConnections] reaches them through the Transport.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base().(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (t *Transport) base() http.RoundTripper {
	if t.Base == nil {
		return http.DefaultTransport
	}
	return t.Base
}

// send is one RoundTrip on base, held to the RoundTripper contract: a
// response with a nil Body gets http.NoBody, and a Base that returns
// neither a response nor an error, an error that says so.
func send(base http.RoundTripper, req *http.Request) (*http.Response, error) {
	resp, err := base.RoundTrip(req)
	switch {
	case err != nil:
		if resp != nil && resp.Body != nil {
			resp.Body.Close() // a RoundTripper that breaks its contract leaks nothing here
		}
		return nil, err
	case resp == nil:
		return nil, fmt.Errorf("%w (Base is %T)", errNilResponse, base)
	case resp.Body == nil:
		resp.Body = http.NoBody
	}
	return resp, nil
}

// request is what one RoundTrip sends, and through what: the part of its
// state a flight copies, so that the rest need not escape to the heap.
type request struct {
	t      *Transport
	base   http.RoundTripper
	req    *http.Request
	budget *retry.Budget // the Policy's, or the host's: retries and hedges take from it
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
	answer, delay := false, rt.hedgeDelay()
	if delay > 0 || rt.t.AttemptTimeout > 0 || rt.lat != nil {
		var sends int
		resp, answer, sends, err = rt.fly(ctx, req, body, delay, rt.sends)
		rt.sends += sends
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
		return rt.failed(ctx, err)
	case delay == 0:
		answer = rt.answers(ctx, resp)
	}
	if answer {
		rt.resp = resp
		return nil
	}
	return rt.answered(ctx, resp)
}

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
func (rt *roundTrip) answered(ctx context.Context, resp *http.Response) error {
	se := &StatusError{Response: resp}
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

// policyRetries reports whether Policy.Retryable, when set, would retry
// err, as retry.Do asks it.
func (rt *request) policyRetries(err error) bool {
	f := rt.t.Policy.Retryable
	return f == nil || f(err)
}

// retryable asks the Transport's Retryable, or DefaultRetryable.
func (rt *request) retryable(resp *http.Response, err error) bool {
	if f := rt.t.Retryable; f != nil {
		return f(resp, err)
	}
	return DefaultRetryable(resp, err)
}

// StatusError is a retried status, as retry sees it: the error of an
// attempt whose response Retryable (or DefaultRetryable) retries. Its
// message is the status line, "503 Service Unavailable". Policy.Retryable,
// OnRetry (in Event.Err) and the Logger get one for each retried status,
// and so does the error RoundTrip returns when the context ends during a
// wait; [errors.As] finds it. Read the Response's status and header: its
// body belongs to the Transport, which reads it for the connection's sake
// and closes it before the wait.
type StatusError struct {
	Response *http.Response

	drained bool // its body was read for a retry: Body replays what was read
	waited  bool // a wait began after it: its body is closed, and it is not returned
}

func (e *StatusError) Error() string {
	if s := e.Response.Status; s != "" {
		return s
	}
	code := e.Response.StatusCode
	return strconv.Itoa(code) + " " + http.StatusText(code)
}

// drain reads up to drainLimit of the body into memory, for up to
// drainTime and never past ctx's deadline, and puts in its place a body
// that yields what was read and then the rest, so that the response can
// still be returned as it came should no retry follow. A body that ends
// within the bounds is closed at once, so that its connection goes back to
// the pool before any wait; one that does not is closed by waiting, or by
// whoever reads the response. A body slower than the bounds is cut where
// it is (the Close ends a Read blocked in net/http's body), and yields,
// after what was read, an error that says so.
func (e *StatusError) drain(ctx context.Context) {
	body := e.Response.Body
	limit := drainTime
	if deadline, ok := ctx.Deadline(); ok {
		limit = min(limit, time.Until(deadline))
	}
	cut := make(chan struct{})
	timer := time.AfterFunc(limit, func() { body.Close(); close(cut) })
	var buf bytes.Buffer
	// The cut's Close ends a Read blocked in net/http's body; between Reads,
	// cutting stops a body whose Close does not, one Read at most late.
	_, err := io.CopyN(&buf, cutting{body, cut}, drainLimit)
	if !timer.Stop() {
		<-cut // the cut ran: it ends here, not after the attempt
		if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
			if done := ctx.Done(); done != nil {
				<-done // the deadline's own timer fires in this instant too: let the context say so
			}
		}
		if err != io.EOF {
			err = fmt.Errorf("httpretry: the body of this %q was cut after %v, while read to decide on a retry", e.Error(), limit)
		}
	}
	r := &replay{data: buf.Bytes()}
	switch err {
	case io.EOF:
		body.Close()
	case nil:
		r.rest = body // longer than drainLimit: unread past it until a wait closes it
	default:
		r.err = err
		body.Close()
	}
	e.Response.Body, e.drained = r, true
}

// cutting reads r until cut is closed.
type cutting struct {
	r   io.Reader
	cut <-chan struct{}
}

func (c cutting) Read(p []byte) (int, error) {
	select {
	case <-c.cut:
		return 0, io.ErrUnexpectedEOF
	default:
		return c.r.Read(p)
	}
}

// replay is a drained body: what was read, then the rest of the body, or
// the error that ended the read.
type replay struct {
	data []byte
	rest io.ReadCloser
	err  error
}

func (r *replay) Read(p []byte) (int, error) {
	switch {
	case len(r.data) > 0:
		n := copy(p, r.data)
		r.data = r.data[n:]
		return n, nil
	case r.rest != nil:
		return r.rest.Read(p)
	case r.err != nil:
		return 0, r.err
	}
	return 0, io.EOF
}

func (r *replay) Close() error {
	if rest := r.rest; rest != nil {
		r.rest = nil
		return rest.Close()
	}
	return nil
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
