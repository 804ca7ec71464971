package httpretry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

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
	// Retryable below chooses, as retry.Do decides. With AttemptTimeout or
	// Hedge set, a zero Curve.BaseDelay is a tenth of AttemptTimeout (or
	// the hedge delay), at most 200ms: the waits scale to the attempt.
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
	labels  hosts[hostLabel]    // each host's name in retry.Stats, with a Policy.Name
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

// table is the table p counts in: its own, or retry.Stats.
func table(p *retry.Policy) *stats.Table {
	if p.Table != nil {
		return (*stats.Table)(p.Table)
	}
	return (*stats.Table)(retry.Stats)
}

// RoundTrip implements [http.RoundTripper]: it sends req through Base and
// retries as the package doc says. It does not modify req. It starts no
// goroutine but a hedged attempt's, one for each copy, which lasts, once
// RoundTrip has returned, as long as Base takes to return the cancelled
// copy (through an *http.Transport over HTTP/1.1, as long as the copy is
// left to finish for its connection: 1s, its AttemptTimeout and the
// request's deadline at most, and its drain), and one that closes the
// body of a copy's failed response let go while the timer or the caller
// has more to do; and the runtime's that cuts a stalled body, which ends
// before the attempt does.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base()
	switch {
	case !sendable(base, req):
		return send(base, req)
	case !replayable(req) && t.AttemptTimeout > 0:
		rt := roundTrip{request: request{t: t, base: base, req: req}}
		if p := t.Policy; p.Name != "" { // its attempt timeout is counted, as a retried request's is
			rt.row = t.labels.of(keyOf(req.URL), never, label).row(table(&p), p.Name)
		}
		resp, _, _, err := rt.fly(req.Context(), req, req.Body, 0, 0)
		return resp, err
	case !replayable(req):
		return send(base, req)
	}
	rt := roundTrip{request: request{t: t, base: base, req: req}}
	p := t.Policy
	if p.Budget == nil || p.Name != "" || t.Hedge != nil {
		key := keyOf(req.URL)
		if p.Budget == nil {
			p.Budget = t.budgets.kept(key, full, zero, lean)
		}
		if p.Name != "" {
			l := t.labels.of(key, never, label)
			p.Host, rt.row = l.name, l.row(table(&p), p.Name)
		}
		if h := t.Hedge; h != nil && h.hedges() > 0 {
			rt.hedge = h.hosts.again(key, newHedgeHost, zero)
			if h.adaptive() {
				rt.lat = &rt.hedge.lat
			}
		}
	}
	rt.budget = p.Budget
	if p.Schedule.Curve.BaseDelay == 0 {
		p.Schedule.Curve.BaseDelay = rt.firstWait()
	}
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
	case last != nil && !last.waited:
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
