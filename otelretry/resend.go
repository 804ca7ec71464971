package otelretry

import (
	"net/http"

	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/unherd/backoff/httpretry"
)

// Resends returns a RoundTripper that sends each request through base, and
// first, when the request is a resend (httpretry.Resend of its context is
// above 0), sets http.request.resend_count to that count on the span in the
// request's context. A nil base is http.DefaultTransport.
//
// Put it inside the span of each attempt, as the Base that otelhttp wraps:
//
//	&httpretry.Transport{Base: otelhttp.NewTransport(otelretry.Resends(http.DefaultTransport))}
//
// so that the span it marks is the one otelhttp started for that send, a
// child of the caller's: the first send's has no resend_count, the first
// retry's or hedge's 1, and so on, as the stable semantic conventions
// define it (set on a resend, counting every resend). Wrapped around
// otelhttp's transport instead, it would find the caller's span, one for
// the whole request, and mark that with each resend's count in turn: keep
// it inside.
//
// A first send costs one context look-up and no allocation; a resend
// allocates what the span's SetAttributes does. It does not modify the
// request, and its CloseIdleConnections reaches base's, so that
// http.Client.CloseIdleConnections reaches the connections.
func Resends(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return resends{base}
}

type resends struct{ base http.RoundTripper }

func (r resends) RoundTrip(req *http.Request) (*http.Response, error) {
	if n := httpretry.Resend(req.Context()); n > 0 {
		trace.SpanFromContext(req.Context()).SetAttributes(semconv.HTTPRequestResendCount(n))
	}
	return r.base.RoundTrip(req)
}

// CloseIdleConnections closes base's idle connections, when base has a
// CloseIdleConnections method.
func (r resends) CloseIdleConnections() {
	if c, ok := r.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
