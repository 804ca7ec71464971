package otelretry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/otelretry"
	"github.com/unherd/backoff/retry"
)

// noWait is a Policy of n retries that do not wait: for a real socket,
// which a synctest bubble cannot hold, with no real sleep.
func noWait(n int) retry.Policy {
	return retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: n}}
}

// resendCounts returns, for each span in ids, its http.request.resend_count,
// or -1 when it has none; and fails when a span has it twice or as no int.
func resendCounts(t *testing.T, rec *tracetest.SpanRecorder, ids []trace.SpanID) []int {
	t.Helper()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byID[s.SpanContext().SpanID()] = s
	}
	counts := make([]int, len(ids))
	for i, id := range ids {
		s, ok := byID[id]
		if !ok {
			t.Fatalf("send %d: span %v not ended", i, id)
		}
		counts[i] = -1
		for _, kv := range s.Attributes() {
			if kv.Key != semconv.HTTPRequestResendCountKey {
				continue
			}
			if counts[i] != -1 || kv.Value.Type() != attribute.INT64 {
				t.Errorf("send %d: resend_count %v, again or not an int", i, kv.Value)
			}
			counts[i] = int(kv.Value.AsInt64())
		}
	}
	return counts
}

// TestResendCountServer: through otelhttp on a real socket, against a
// server that answers 503, 503, then 200, each send has a span of its own,
// a child of the caller's; the first has no http.request.resend_count, the
// resends 1 and 2, and the caller's span none.
func TestResendCountServer(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var mu sync.Mutex
	var ids []trace.SpanID // each request's span, in the order the server saw them
	var n atomic.Int32
	prop := propagation.TraceContext{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sc := trace.SpanContextFromContext(prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
		mu.Lock()
		ids = append(ids, sc.SpanID())
		mu.Unlock()
		if n.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	sock := &http.Transport{}
	defer sock.CloseIdleConnections()
	client := &http.Client{Transport: &httpretry.Transport{
		Policy: noWait(3),
		Base:   otelhttp.NewTransport(otelretry.Resends(sock), otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(prop)),
	}}

	ctx, parent := tp.Tracer("test").Start(context.Background(), "caller")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := client.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET: %v, %v; want the 200", resp, err)
	}
	resp.Body.Close()
	parent.End()

	if got := resendCounts(t, rec, ids); fmt.Sprint(got) != "[-1 1 2]" {
		t.Errorf("resend_count of each send, none as -1: %v, want [-1 1 2]", got)
	}
	for _, s := range rec.Ended() {
		isParent := s.SpanContext().SpanID() == parent.SpanContext().SpanID()
		switch {
		case isParent && slices.ContainsFunc(s.Attributes(), func(kv attribute.KeyValue) bool { return kv.Key == semconv.HTTPRequestResendCountKey }):
			t.Errorf("the caller's span has resend_count: %v", s.Attributes())
		case !isParent && s.Parent().SpanID() != parent.SpanContext().SpanID():
			t.Errorf("span %q is not the caller's child", s.Name())
		}
	}
	if len(rec.Ended()) != 1+3 {
		t.Errorf("%d spans ended, want the caller's and 3 sends'", len(rec.Ended()))
	}
}

// spans is an in-memory Base, for a bubble: it records the span of each
// send in order, and answers as answer says for the nth send.
type spans struct {
	mu     sync.Mutex
	ids    []trace.SpanID
	answer func(n int) answer
}

func (s *spans) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	n := len(s.ids)
	s.ids = append(s.ids, trace.SpanContextFromContext(req.Context()).SpanID())
	s.mu.Unlock()
	a := s.answer(n)
	return (&script{answers: map[string][]answer{req.URL.Path: {a}}}).RoundTrip(req)
}

// TestResendCountHedged: a hedged request's copies each have a span, the
// first copy's without resend_count, the hedges' 1 and 2, and a retry
// after them 3: retries and hedges counted together.
func TestResendCountHedged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		// The first copy is slow, past the hedge delay; the hedge fails
		// with a 503 and so sends the second hedge at once, which fails
		// too; the retry after a wait of 1s answers.
		base := &spans{answer: func(n int) answer {
			switch n {
			case 0:
				return answer{status: 503, wait: 200 * time.Millisecond}
			case 1, 2:
				return answer{status: 503}
			}
			return answer{status: 200, wait: time.Millisecond}
		}}
		p := retry.Policy{Schedule: constant(time.Second, 3)}
		tr := &httpretry.Transport{Policy: p, Hedge: &httpretry.Hedge{Delay: 50 * time.Millisecond, Max: 2},
			Base: otelhttp.NewTransport(otelretry.Resends(base), otelhttp.WithTracerProvider(tp))}
		if err := get(t, context.Background(), tr, "http://api.example/"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := resendCounts(t, rec, base.ids); fmt.Sprint(got) != "[-1 1 2 3]" {
			t.Errorf("resend_count of each send, none as -1: %v, want [-1 1 2 3]", got)
		}
	})
}

// TestResendCountRetried: in virtual time, 503 then 200 with a wait of 1s
// between: the retry's span has resend_count 1.
func TestResendCountRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		base := &spans{answer: func(n int) answer { return answer{status: []int{503, 200}[min(n, 1)]} }}
		tr := &httpretry.Transport{Policy: retry.Policy{Schedule: constant(time.Second, 3)},
			Base: otelhttp.NewTransport(otelretry.Resends(base), otelhttp.WithTracerProvider(tp))}
		if err := get(t, context.Background(), tr, "http://api.example/"); err != nil {
			t.Fatal(err)
		}
		if got := resendCounts(t, rec, base.ids); fmt.Sprint(got) != "[-1 1]" {
			t.Errorf("resend_count of each send, none as -1: %v, want [-1 1]", got)
		}
	})
}

// TestResendsDefault: a nil base is http.DefaultTransport, and
// CloseIdleConnections reaches base's.
func TestResendsDefault(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	rt := otelretry.Resends(nil)
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("Resends(nil).RoundTrip: %v, %v", resp, err)
	}
	resp.Body.Close()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()

	closer := &closes{}
	otelretry.Resends(closer).(interface{ CloseIdleConnections() }).CloseIdleConnections()
	otelretry.Resends(&spans{}).(interface{ CloseIdleConnections() }).CloseIdleConnections() // a base without one
	if closer.n != 1 {
		t.Errorf("CloseIdleConnections reached base %d times, want 1", closer.n)
	}
}

type closes struct {
	http.RoundTripper
	n int
}

func (c *closes) CloseIdleConnections() { c.n++ }

// ok is a Base that answers every request with one response, allocating
// nothing.
type ok struct{ resp *http.Response }

func (o ok) RoundTrip(*http.Request) (*http.Response, error) { return o.resp, nil }

// resendContext returns the context of a request's first resend, as
// httpretry gives it to Base.
func resendContext(t testing.TB) context.Context {
	var got context.Context
	n := 0
	tr := &httpretry.Transport{Policy: noWait(1), Base: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if n++; n == 2 {
			got = req.Context()
		}
		return &http.Response{StatusCode: []int{503, 200}[n-1], Body: http.NoBody, Header: http.Header{}, Request: req}, nil
	})}
	req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
	if _, err := tr.RoundTrip(req); err != nil || httpretry.Resend(got) != 1 {
		t.Fatalf("no resend's context: %v", err)
	}
	return got
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestResendsAllocs: a first send through Resends, in a recording span,
// allocates nothing.
func TestResendsAllocs(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	ctx, span := tp.Tracer("test").Start(context.Background(), "send")
	defer span.End()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example/", nil)
	rt := otelretry.Resends(ok{&http.Response{StatusCode: 200, Body: http.NoBody}})
	if n := testing.AllocsPerRun(1000, func() { rt.RoundTrip(req) }); n != 0 {
		t.Errorf("a first send through Resends: %v allocations, want 0", n)
	}
}

// BenchmarkResends: a send through Resends, each in a span of its own,
// started and ended as otelhttp does: a first send, and a resend, which
// sets the attribute. The difference is what marking a resend costs.
func BenchmarkResends(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(discard{}))
	tracer := tp.Tracer("test")
	rt := otelretry.Resends(ok{&http.Response{StatusCode: 200, Body: http.NoBody}})
	for _, bc := range []struct {
		name string
		ctx  context.Context
	}{{"first", context.Background()}, {"resend", resendContext(b)}} {
		b.Run(bc.name, func(b *testing.B) {
			req, _ := http.NewRequestWithContext(bc.ctx, http.MethodGet, "http://api.example/", nil)
			b.ReportAllocs()
			for b.Loop() {
				ctx, span := tracer.Start(bc.ctx, "send")
				rt.RoundTrip(req.WithContext(ctx))
				span.End()
			}
		})
	}
}

// discard is a SpanProcessor that keeps nothing.
type discard struct{}

func (discard) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (discard) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (discard) Shutdown(context.Context) error                  { return nil }
func (discard) ForceFlush(context.Context) error                { return nil }
