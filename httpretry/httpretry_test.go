package httpretry_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// The logic runs in a testing/synctest bubble against an in-memory Base, so
// every wait is virtual and exact; real connections are in conn_test.go.

// step is one scripted answer of the in-memory server: a status (with a
// header and a body), or a transport error.
type step struct {
	status     int
	retryAfter string
	body       string
	err        error
}

// body is a response body that records how much of it was read and whether
// it was closed.
type body struct {
	r      io.Reader
	read   int
	closed bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += n
	return n, err
}

func (b *body) Close() error { b.closed = true; return nil }

// server is an in-memory Base that answers from a script, then 200 "ok",
// recording each request, when it came, and each body it handed out.
type server struct {
	mu     sync.Mutex
	t0     time.Time
	script []step
	reqs   []*http.Request
	sent   []string // each request's body, as the server read it
	at     []time.Duration
	bodies []*body
	onCall func(n int) // called before answering request n (from 1)
}

func newServer(script ...step) *server { return &server{t0: time.Now(), script: script} }

func (s *server) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	s.at = append(s.at, time.Since(s.t0))
	var sent []byte
	if req.Body != nil {
		sent, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	s.sent = append(s.sent, string(sent))
	n := len(s.reqs)
	if s.onCall != nil {
		s.onCall(n)
	}
	st := step{status: http.StatusOK, body: "ok"}
	if n <= len(s.script) {
		st = s.script[n-1]
	}
	if st.err != nil {
		return nil, st.err
	}
	b := &body{r: strings.NewReader(st.body)}
	s.bodies = append(s.bodies, b)
	h := http.Header{}
	if st.retryAfter != "" {
		h.Set("Retry-After", st.retryAfter)
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", st.status, http.StatusText(st.status)), StatusCode: st.status,
		Header: h, Body: b, Request: req, ContentLength: int64(len(st.body)),
	}, nil
}

// gaps is the time between successive requests.
func (s *server) gaps() []time.Duration {
	var g []time.Duration
	for i := 1; i < len(s.at); i++ {
		g = append(g, s.at[i]-s.at[i-1])
	}
	return g
}

// constant waits d between attempts, exactly, up to n retries.
func constant(d time.Duration, n int) retry.Policy {
	return retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: d, MaxDelay: d, Multiplier: 1, JitterMode: backoff.JitterNone}, MaxRetries: n}}
}

func get(t *testing.T, ctx context.Context, rt http.RoundTripper) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example/v1/things", nil)
	if err != nil {
		t.Fatal(err)
	}
	return rt.RoundTrip(req)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return string(b)
}

var (
	s503 = step{status: http.StatusServiceUnavailable, body: "overloaded"}
	s500 = step{status: http.StatusInternalServerError, body: "oops"}
)

// TestRetriesToSuccess: 503, 500, then 200; the 200 comes back readable,
// the two before it were drained and closed before each wait.
func TestRetriesToSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(s503, s500)
		resp, err := get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: constant(time.Second, 5)})
		if err != nil || resp.StatusCode != 200 || readAll(t, resp) != "ok" {
			t.Fatalf("RoundTrip = %v, %v; want 200 ok", resp, err)
		}
		if len(srv.reqs) != 3 || fmt.Sprint(srv.gaps()) != "[1s 1s]" {
			t.Fatalf("%d requests, gaps %v; want 3, a second apart", len(srv.reqs), srv.gaps())
		}
		for i, b := range srv.bodies[:2] {
			if !b.closed || b.read != len([]string{"overloaded", "oops"}[i]) {
				t.Errorf("retried body %d: read %d bytes, closed %v; want drained and closed", i, b.read, b.closed)
			}
		}
	})
}

// TestDrainIsBounded: a retried body longer than the limit is read up to
// it, then closed, not read to the end.
func TestDrainIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(step{status: 503, body: strings.Repeat("x", 1<<20)})
		resp, err := get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: constant(time.Second, 5)})
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if b := srv.bodies[0]; !b.closed || b.read != 64<<10 {
			t.Fatalf("a 1 MiB retried body: read %d, closed %v; want 64 KiB read, then closed", b.read, b.closed)
		}
	})
}

// TestGivingUpReturnsLastResponse: out of retries on a status, RoundTrip
// returns that last response as is, readable, with a nil error.
func TestGivingUpReturnsLastResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(s503, s503, step{status: 502, body: "last one"})
		resp, err := get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: constant(time.Second, 2)})
		if err != nil || resp.StatusCode != 502 {
			t.Fatalf("RoundTrip = %v, %v; want the 502, nil", resp, err)
		}
		if got := readAll(t, resp); got != "last one" || srv.bodies[2].read != len("last one") {
			t.Fatalf("final body %q: want it unread until the caller reads it", got)
		}
		if !srv.bodies[0].closed || !srv.bodies[1].closed {
			t.Fatalf("the retried bodies were not closed")
		}
	})
}

// TestTransportErrors: a transport error is retried; giving up on one
// returns a *retry.Error that wraps it, and no response.
func TestTransportErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := errors.New("dial tcp 10.0.0.4:443: connect: connection refused")
		srv := newServer(step{err: refused}, s503)
		resp, err := get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: constant(time.Second, 5)})
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("RoundTrip = %v, %v; want 200 after an error and a 503", resp, err)
		}
		readAll(t, resp)

		srv = newServer(s503, step{err: refused}, step{err: refused})
		resp, err = get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: constant(time.Second, 2)})
		var e *retry.Error
		if resp != nil || !errors.As(err, &e) || e.Err != refused || e.Attempts != 3 || !errors.Is(err, backoff.ErrMaxRetries) {
			t.Fatalf("RoundTrip = %v, %v; want nil and a *retry.Error of 3 attempts wrapping the last error", resp, err)
		}
		if !srv.bodies[0].closed {
			t.Fatalf("the 503 before the errors was not closed")
		}
	})
}

// TestUnfixableErrorsAreNotRetried: a bad certificate goes once.
func TestUnfixableErrorsAreNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, bad := range []error{
			&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}},
			fmt.Errorf("tls: %w", x509.HostnameError{Host: "example.com", Certificate: &x509.Certificate{}}),
		} {
			srv := newServer(step{err: bad})
			resp, err := get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: constant(time.Second, 5)})
			if resp != nil || !errors.Is(err, bad) || len(srv.reqs) != 1 {
				t.Errorf("%v: %d requests, RoundTrip = %v, %v; want 1 request and the error", bad, len(srv.reqs), resp, err)
			}
		}
	})
}

func TestDefaultRetryable(t *testing.T) {
	for code := 100; code < 600; code++ {
		want := false
		switch code {
		case 408, 429, 500, 502, 503, 504:
			want = true
		}
		if got := httpretry.DefaultRetryable(&http.Response{StatusCode: code}, nil); got != want {
			t.Errorf("DefaultRetryable(%d) = %v, want %v", code, got, want)
		}
	}
	inner, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	<-inner.Done()
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{errors.New("read: connection reset by peer"), true},
		{io.ErrUnexpectedEOF, true},
		{inner.Err(), true}, // an inner timeout is a fault like any other
		{context.Canceled, true},
		{&tls.CertificateVerificationError{Err: errors.New("expired")}, false},
		{fmt.Errorf("dial: %w", &tls.CertificateVerificationError{Err: x509.CertificateInvalidError{Reason: x509.Expired}}), false},
		{x509.UnknownAuthorityError{}, false},
		{http.ErrSchemeMismatch, false},
		{fmt.Errorf("wrapped: %w", http.ErrSchemeMismatch), false},
		// The words of an error decide nothing: what net/http cannot send,
		// the Transport judges from the request (TestUnsendableSentOnce).
		{errors.New(`unsupported protocol scheme "gopher"`), true},
	} {
		if got := httpretry.DefaultRetryable(nil, tt.err); got != tt.want {
			t.Errorf("DefaultRetryable(nil, %v) = %v, want %v", tt.err, got, tt.want)
		}
	}
	if httpretry.DefaultRetryable(nil, nil) {
		t.Errorf("DefaultRetryable(nil, nil) = true")
	}
}

// TestUnsendableSentOnce: a request net/http's Transport cannot send at
// all (a scheme it does not serve, no host) fails the same way each time,
// and goes to it once, untouched; the same scheme through a Base of
// another type, which may serve it, is retried as any other.
func TestUnsendableSentOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, u := range []string{"ftp://example.com/x", "http:///nohost", "HTTPS://example.com/"} {
			req, err := http.NewRequest(http.MethodGet, u, nil)
			if err != nil {
				t.Fatal(err)
			}
			if req.URL.Scheme == "https" { // url.Parse lowercases it: a hand-made URL may not
				req.URL.Scheme = "HTTPS"
			}
			start := time.Now() // a retry would wait a second of virtual time
			resp, err := (&httpretry.Transport{Base: &http.Transport{}, Policy: constant(time.Second, 5)}).RoundTrip(req)
			if resp != nil || err == nil || time.Since(start) != 0 {
				t.Errorf("%s: %v, %v after %v; want net/http's error at once, without a retry", u, resp, err, time.Since(start))
			}
		}
		srv := newServer(step{err: errors.New(`unsupported protocol scheme "ftp"`)})
		req, _ := http.NewRequest(http.MethodGet, "ftp://example.com/x", nil)
		if resp, err := (&httpretry.Transport{Base: srv, Policy: constant(time.Second, 5)}).RoundTrip(req); err != nil || len(srv.reqs) != 2 {
			t.Errorf("ftp through a Base of its own: %d requests, %v, %v; want it retried", len(srv.reqs), resp, err)
		}
		req, _ = http.NewRequest(http.MethodGet, "http://api.example/", nil)
		req.URL = nil
		srv = newServer(s503)
		if resp, _ := (&httpretry.Transport{Base: srv, Policy: constant(time.Second, 5)}).RoundTrip(req); resp == nil || len(srv.reqs) != 1 {
			t.Errorf("a nil URL: %d requests; want it sent once, untouched", len(srv.reqs))
		}
	})
}

// TestMethods: only what can be sent again is sent again.
func TestMethods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tt := range []struct {
			method string
			header string
			body   io.Reader
			sends  int
		}{
			{"", "", nil, 2},
			{http.MethodGet, "", nil, 2},
			{http.MethodHead, "", nil, 2},
			{http.MethodOptions, "", nil, 2},
			{http.MethodTrace, "", nil, 2},
			{http.MethodPut, "", strings.NewReader("v"), 2},
			{http.MethodDelete, "", nil, 2},
			{http.MethodPost, "", strings.NewReader("v"), 1},
			{http.MethodPost, "", nil, 1},
			{http.MethodPatch, "", strings.NewReader("v"), 1},
			{http.MethodConnect, "", nil, 1},
			{"PROPFIND", "", nil, 1},
			{http.MethodPost, "Idempotency-Key", strings.NewReader("v"), 2},
			{http.MethodPost, "X-Idempotency-Key", strings.NewReader("v"), 2},
			{http.MethodPatch, "Idempotency-Key", nil, 2},
		} {
			srv := newServer(s503)
			req, err := http.NewRequest(tt.method, "http://api.example/", tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.header != "" {
				req.Header.Set(tt.header, "4f1c")
			}
			resp, err := (&httpretry.Transport{Base: srv, Policy: constant(time.Second, 3)}).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if len(srv.reqs) != tt.sends {
				t.Errorf("%q %s: sent %d times, want %d", tt.method, tt.header, len(srv.reqs), tt.sends)
			}
			if tt.sends == 1 && (srv.reqs[0] != req || resp.StatusCode != 503) {
				t.Errorf("%q: a request that is not retried must reach Base untouched and its answer come back as is", tt.method)
			}
		}
	})
}

// onlyReader hides every method but Read, so that no one can seek or
// rewind it.
type onlyReader struct{ io.Reader }

// TestBodies: a body with GetBody is sent afresh on each attempt; one
// without is sent once, whatever the method.
func TestBodies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(s503, s503)
		req, _ := http.NewRequest(http.MethodPut, "http://api.example/doc", bytes.NewReader([]byte(`{"v":1}`)))
		resp, err := (&httpretry.Transport{Base: srv, Policy: constant(time.Second, 3)}).RoundTrip(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("PUT with GetBody: %v, %v", resp, err)
		}
		readAll(t, resp)
		if fmt.Sprint(srv.sent) != `[{"v":1} {"v":1} {"v":1}]` {
			t.Fatalf("bodies sent %q, want the same body three times", srv.sent)
		}

		srv = newServer(s503)
		req, _ = http.NewRequest(http.MethodPut, "http://api.example/doc", onlyReader{strings.NewReader("stream")})
		if req.GetBody != nil {
			t.Fatal("test setup: an onlyReader body got a GetBody")
		}
		resp, err = (&httpretry.Transport{Base: srv, Policy: constant(time.Second, 3)}).RoundTrip(req)
		if err != nil || resp.StatusCode != 503 || len(srv.reqs) != 1 {
			t.Fatalf("PUT with an unseekable body: %d requests, %v, %v; want one, and the 503", len(srv.reqs), resp, err)
		}
		readAll(t, resp)

		// A GetBody that fails ends it before any wait: the 503 it followed
		// comes back as is, unread; after a transport error, an error that
		// names both, and counts only the attempt sent.
		srv = newServer(s503)
		req, _ = http.NewRequest(http.MethodPut, "http://api.example/doc", strings.NewReader("v"))
		broken := errors.New("file gone")
		req.GetBody = func() (io.ReadCloser, error) { return nil, broken }
		start := time.Now()
		resp, err = (&httpretry.Transport{Base: srv, Policy: constant(time.Second, 3)}).RoundTrip(req)
		if err != nil || resp.StatusCode != 503 || len(srv.reqs) != 1 || time.Since(start) != 0 || readAll(t, resp) != "overloaded" {
			t.Fatalf("GetBody failing after a 503: %d requests, %v, %v after %v; want the 503 as is, at once", len(srv.reqs), resp, err, time.Since(start))
		}
		refused := errors.New("connection refused")
		srv = newServer(step{err: refused})
		req, _ = http.NewRequest(http.MethodPut, "http://api.example/doc", strings.NewReader("v"))
		req.GetBody = func() (io.ReadCloser, error) { return nil, broken }
		resp, err = (&httpretry.Transport{Base: srv, Policy: constant(time.Second, 3)}).RoundTrip(req)
		var e *retry.Error
		if resp != nil || !errors.As(err, &e) || e.Attempts != 1 || !errors.Is(err, broken) || !errors.Is(err, refused) || len(srv.reqs) != 1 {
			t.Fatalf("GetBody failing after a transport error: %d requests, %v, %v; want an error of 1 attempt naming both", len(srv.reqs), resp, err)
		}
	})
}

// TestRequestUnmodified: RoundTrip leaves the caller's request as it was.
func TestRequestUnmodified(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(s503, s503)
		req, _ := http.NewRequest(http.MethodPut, "http://user:secret@api.example/doc?x=1", strings.NewReader("v"))
		req.Header.Set("Idempotency-Key", "k")
		before := *req
		header := req.Header.Clone()
		url := *req.URL
		resp, err := (&httpretry.Transport{Base: srv, Policy: constant(time.Second, 3)}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if req.Body != before.Body || req.Method != before.Method || req.URL != before.URL || *req.URL != url ||
			fmt.Sprint(req.Header) != fmt.Sprint(header) || req.ContentLength != before.ContentLength || req.Context() != before.Context() {
			t.Fatalf("RoundTrip modified the request: %+v, was %+v", req, before)
		}
		if srv.reqs[1] == req || srv.reqs[2] == req || srv.reqs[1] == srv.reqs[2] {
			t.Fatalf("retries went out on the caller's request: each needs its own copy with its own body")
		}
	})
}

// TestRetryAfter: both forms replace the computed wait, widened by
// AddJitter(d, max(d/2, 1s)), above MaxDelay too; on other statuses it is
// ignored; past MaxRetryAfter the response is returned as is.
func TestRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// An HTTP-date has whole seconds: start each date case on one.
		date := func(d time.Duration) string {
			time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
			return time.Now().Add(d).UTC().Format(http.TimeFormat)
		}
		for _, tt := range []struct {
			name   string
			step   func() step
			lo, hi time.Duration // the wait lies in [lo, hi)
		}{
			{"seconds", func() step { return step{status: 429, retryAfter: "4"} }, 4 * time.Second, 6 * time.Second},
			{"one second: at least a second of spread", func() step { return step{status: 503, retryAfter: "1"} }, time.Second, 2 * time.Second},
			{"zero", func() step { return step{status: 503, retryAfter: "0"} }, 0, time.Second},
			{"date", func() step { return step{status: 503, retryAfter: date(10 * time.Second)} }, 10 * time.Second, 15 * time.Second},
			{"date in the past", func() step { return step{status: 429, retryAfter: date(-time.Hour)} }, 0, time.Second},
			{"on a 500: ignored", func() step { return step{status: 500, retryAfter: "30"} }, 10 * time.Millisecond, 10*time.Millisecond + 1},
			{"junk: ignored", func() step { return step{status: 503, retryAfter: "soon"} }, 10 * time.Millisecond, 10*time.Millisecond + 1},
			{"at MaxRetryAfter: obeyed", func() step { return step{status: 429, retryAfter: "60"} }, time.Minute, 90 * time.Second},
		} {
			seen := map[time.Duration]bool{}
			for range 40 {
				srv := newServer(tt.step())
				p := constant(10*time.Millisecond, 3)
				p.Schedule.Curve.MaxDelay = 20 * time.Millisecond
				resp, err := get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: p})
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("%s: %v, %v", tt.name, resp, err)
				}
				readAll(t, resp)
				if g := srv.gaps()[0]; g < tt.lo || g >= tt.hi {
					t.Fatalf("%s: waited %v, want in [%v, %v)", tt.name, g, tt.lo, tt.hi)
				}
				seen[srv.gaps()[0]] = true
			}
			if tt.hi-tt.lo > time.Millisecond && len(seen) < 30 {
				t.Errorf("%s: 40 clients waited %d distinct times: the wait is not spread", tt.name, len(seen))
			}
		}

		// Past MaxRetryAfter (default a minute, before widening): not obeyed,
		// not retried, returned with its header.
		for _, tt := range []struct {
			max time.Duration
			ra  string
		}{{0, "61"}, {-1, "3600"}, {5 * time.Second, "6"}, {0, date(2 * time.Minute)}} {
			srv := newServer(step{status: 429, retryAfter: tt.ra, body: "slow down"})
			start := time.Now()
			resp, err := get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: constant(time.Second, 3), MaxRetryAfter: tt.max})
			if err != nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") != tt.ra || len(srv.reqs) != 1 || time.Since(start) != 0 {
				t.Fatalf("Retry-After %s, MaxRetryAfter %v: %d requests, %v, %v; want the 429 at once", tt.ra, tt.max, len(srv.reqs), resp, err)
			}
			if readAll(t, resp) != "slow down" {
				t.Fatalf("the refused 429's body was not left for the caller")
			}
		}
		// A ceiling of a nanosecond is a ceiling, not "unset".
		srv := newServer(step{status: 503, retryAfter: "1"})
		resp, err := get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: constant(time.Second, 3), MaxRetryAfter: 1})
		if err != nil || resp.StatusCode != 503 || len(srv.reqs) != 1 {
			t.Fatalf("Retry-After 1 under MaxRetryAfter 1ns: %d requests, %v, %v; want the 503 as is", len(srv.reqs), resp, err)
		}
		readAll(t, resp)
		srv = newServer(step{status: 429, retryAfter: "3600"})
		resp, err = get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: constant(time.Second, 3), MaxRetryAfter: 2 * time.Hour})
		if err != nil || resp.StatusCode != 200 || srv.gaps()[0] < time.Hour {
			t.Fatalf("Retry-After 3600 under MaxRetryAfter 2h: %v, %v, gaps %v; want it obeyed", resp, err, srv.gaps())
		}
		readAll(t, resp)
	})
}

// TestDeadline: a Retry-After that the request's deadline cannot fit is not
// waited out: the 429 comes back at once. And a curve wait that cannot be
// followed by an attempt is not started either.
func TestDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		srv := newServer(s503, step{status: 429, retryAfter: "3", body: "later"})
		start := time.Now()
		resp, err := get(t, ctx, &httpretry.Transport{Base: srv, Policy: constant(100*time.Millisecond, 5)})
		if err != nil || resp.StatusCode != 429 || time.Since(start) != 100*time.Millisecond || ctx.Err() != nil {
			t.Fatalf("RoundTrip = %v, %v after %v; want the 429 at 100ms, before the deadline", resp, err, time.Since(start))
		}
		if readAll(t, resp) != "later" {
			t.Fatalf("the 429's body was not left readable")
		}

		ctx, cancel = context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv = newServer(s503, s503)
		srv.onCall = func(int) { time.Sleep(400 * time.Millisecond) } // each attempt takes 400ms
		resp, err = get(t, ctx, &httpretry.Transport{Base: srv, Policy: constant(300*time.Millisecond, 5)})
		if err != nil || resp.StatusCode != 503 || len(srv.reqs) != 1 {
			t.Fatalf("slow attempts: %d requests, %v, %v; want the first 503 back, no wait of 300ms that leaves 300ms for a 400ms attempt", len(srv.reqs), resp, err)
		}
		readAll(t, resp)
	})
}

// TestCancelMidWait: the context ends during a wait: an error naming the
// last status, with the cause in its chain; every body closed.
func TestCancelMidWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		cause := errors.New("user went away")
		time.AfterFunc(1500*time.Millisecond, func() { cancel(cause) })
		srv := newServer(s503, s503, s503)
		resp, err := get(t, ctx, &httpretry.Transport{Base: srv, Policy: constant(time.Second, 5)})
		if resp != nil || !errors.Is(err, cause) || !strings.Contains(err.Error(), "503 Service Unavailable") {
			t.Fatalf("RoundTrip = %v, %v; want nil and an error naming the 503 with the cause", resp, err)
		}
		for i, b := range srv.bodies {
			if !b.closed {
				t.Errorf("body %d left open", i)
			}
		}
	})
}

// TestContextDone: before the first attempt, Base is not called and the
// body is closed; during an attempt, the answer comes back as is, and
// Retryable is not asked.
func TestContextDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		srv := newServer()
		b := &body{r: strings.NewReader("v")}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://api.example/", b)
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("v")), nil }
		resp, err := (&httpretry.Transport{Base: srv}).RoundTrip(req)
		if resp != nil || !errors.Is(err, context.Canceled) || len(srv.reqs) != 0 || !b.closed {
			t.Fatalf("done context: %d requests, %v, %v, body closed %v; want none, the cause, and the body closed", len(srv.reqs), resp, err, b.closed)
		}

		ctx, cancel = context.WithCancel(context.Background())
		defer cancel()
		srv = newServer(s503)
		srv.onCall = func(int) { cancel() }
		asked := 0
		tr := &httpretry.Transport{Base: srv, Retryable: func(*http.Response, error) bool { asked++; return true }}
		resp, err = get(t, ctx, tr)
		if err != nil || resp.StatusCode != 503 || asked != 0 || len(srv.reqs) != 1 {
			t.Fatalf("cancelled during the attempt: %v, %v, Retryable asked %d times; want the 503 as is, not asked", resp, err, asked)
		}
		readAll(t, resp)
	})
}

// TestRetryableDecides: the Transport's Retryable replaces the default, and
// Policy.Retryable is never consulted.
func TestRetryableDecides(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(step{status: 404}, step{status: 404})
		tr := &httpretry.Transport{Base: srv, Policy: constant(time.Second, 5), Retryable: func(resp *http.Response, err error) bool {
			return err == nil && resp.StatusCode == 404 // eventually consistent reads
		}}
		resp, err := get(t, context.Background(), tr)
		if err != nil || resp.StatusCode != 200 || len(srv.reqs) != 3 {
			t.Fatalf("%d requests, %v, %v; want 404s retried to the 200", len(srv.reqs), resp, err)
		}
		readAll(t, resp)
		srv = newServer(s503)
		resp, _ = get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: constant(time.Second, 5), Retryable: func(*http.Response, error) bool { return false }})
		if resp.StatusCode != 503 || len(srv.reqs) != 1 {
			t.Fatalf("Retryable says no: %d requests", len(srv.reqs))
		}
		readAll(t, resp)
	})
}

// TestPolicyRetryableDecides: Policy.Retryable decides among the failures
// the Transport's rule chooses, as retry.Do decides: asked with a
// *StatusError for a status and with the error for a transport error, a
// false returns that outcome at once; it is never asked about an answer
// the rule does not retry.
func TestPolicyRetryableDecides(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := errors.New("connection refused")
		var asked []string
		p := constant(time.Second, 5)
		p.Retryable = func(err error) bool {
			var se *httpretry.StatusError
			if errors.As(err, &se) {
				asked = append(asked, strconv.Itoa(se.Response.StatusCode))
				return se.Response.StatusCode != 502 // a 502 here is a deploy: no retry
			}
			asked = append(asked, err.Error())
			return !errors.Is(err, refused)
		}
		srv := newServer(s503, step{status: 502, body: "bad gateway"})
		resp, err := get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: p})
		if err != nil || resp.StatusCode != 502 || len(srv.reqs) != 2 || readAll(t, resp) != "bad gateway" {
			t.Fatalf("Policy.Retryable refuses a 502: %d requests, %v, %v; want the 502 as is after 2", len(srv.reqs), resp, err)
		}
		srv = newServer(step{err: refused})
		_, err = get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: p})
		if !errors.Is(err, refused) || len(srv.reqs) != 1 {
			t.Fatalf("Policy.Retryable refuses a transport error: %d requests, %v; want 1 and the error", len(srv.reqs), err)
		}
		srv = newServer(step{status: 404})
		resp, _ = get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: p})
		readAll(t, resp)
		if want := "[503 502 connection refused]"; fmt.Sprint(asked) != want {
			t.Fatalf("Policy.Retryable was asked %v, want %v (never about the 404)", asked, want)
		}
	})
}

// TestHooksAndLogs: OnRetry sees the status line; the logger gets the
// method and the URL without its password, never the password itself.
func TestHooksAndLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log bytes.Buffer
		var events []string
		p := constant(time.Second, 5)
		p.OnRetry = func(e retry.Event) { events = append(events, e.Err.Error()) }
		p.Logger = slog.New(slog.NewTextHandler(&log, nil))
		refused := errors.New("connection refused")
		srv := newServer(s503, step{status: 429, retryAfter: "2"}, step{err: refused})
		req, _ := http.NewRequest(http.MethodGet, "https://alice:hunter2@api.example/v1?token=x", nil)
		resp, err := (&httpretry.Transport{Base: srv, Policy: p}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if want := "[503 Service Unavailable 429 Too Many Requests connection refused]"; fmt.Sprint(events) != want {
			t.Errorf("OnRetry saw %v, want %v", events, want)
		}
		if strings.Contains(log.String(), "hunter2") {
			t.Errorf("the password reached the log:\n%s", log.String())
		}
		if n := strings.Count(log.String(), `url="https://alice:xxxxx@api.example/v1?token=x"`); n != 3 || strings.Count(log.String(), "method=GET") != 3 {
			t.Errorf("want 3 records naming the method and the redacted URL:\n%s", log.String())
		}
	})
}

// TestNoGoroutineLeft: RoundTrip starts none, on any path.
func TestNoGoroutineLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := runtime.NumGoroutine()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(1500*time.Millisecond, cancel)
		srv := newServer(s503, s503, s503)
		peak := 0
		srv.onCall = func(int) { peak = max(peak, runtime.NumGoroutine()) }
		get(t, ctx, &httpretry.Transport{Base: srv, Policy: constant(time.Second, 5)})
		srv = newServer(s503)
		resp, _ := get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: constant(time.Second, 5)})
		readAll(t, resp)
		synctest.Wait()
		if peak > base+1 || runtime.NumGoroutine() > base+1 { // +1: the AfterFunc's, until it has run
			t.Errorf("goroutines: %d before, %d at most during, %d after", base, peak, runtime.NumGoroutine())
		}
	})
}

// TestZeroTransport: nil Base is http.DefaultTransport; the zero Policy
// retries 5 times.
func TestZeroTransport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(s503, s503, s503, s503, s503, s503, s503)
		resp, err := get(t, context.Background(), &httpretry.Transport{Base: srv})
		if err != nil || resp.StatusCode != 503 || len(srv.reqs) != 6 {
			t.Fatalf("zero Policy: %d requests, %v, %v; want 6 and the last 503", len(srv.reqs), resp, err)
		}
		readAll(t, resp)
	})
}

// TestAllocs: a request that succeeds at once allocates nothing beyond what
// Base does; a Policy.OnRetry costs one closure.
func TestAllocs(t *testing.T) {
	calls := 0
	ok := roundTripFunc(func(*http.Request) (*http.Response, error) { calls++; return okResponse, nil })
	req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
	if resp, err := (&httpretry.Transport{Base: ok}).RoundTrip(req); err != nil || resp != okResponse || calls != 1 {
		t.Fatalf("a 200: %d calls, %v, %v; want one call and the response as is", calls, resp, err) // before timing anything in real time
	}
	bare := testing.AllocsPerRun(100, func() { ok.RoundTrip(req) })
	plain := &httpretry.Transport{Base: ok}
	hooked := &httpretry.Transport{Base: ok, Policy: retry.Policy{OnRetry: func(retry.Event) {}}}
	if n := testing.AllocsPerRun(100, func() { plain.RoundTrip(req) }); n != bare {
		t.Errorf("RoundTrip, succeeding at once: %v allocations, Base alone %v", n, bare)
	}
	named := &httpretry.Transport{Base: ok, Policy: retry.Policy{Name: "allocs"}}
	if n := testing.AllocsPerRun(100, func() { named.RoundTrip(req) }); n != bare {
		t.Errorf("RoundTrip under a Policy.Name, succeeding at once: %v allocations, Base alone %v", n, bare)
	}
	if n := testing.AllocsPerRun(100, func() { hooked.RoundTrip(req) }); n > bare+1 {
		t.Errorf("RoundTrip with OnRetry set: %v allocations, Base alone %v; want at most one more", n, bare)
	}
	logged := &httpretry.Transport{Base: ok, Policy: retry.Policy{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	if n := testing.AllocsPerRun(100, func() { logged.RoundTrip(req) }); n > bare+2 {
		t.Errorf("RoundTrip with a Logger: %v allocations, Base alone %v; want at most two more", n, bare)
	}
}

// TestAllocsSlow: a request that succeeds at once, with AttemptTimeout set,
// allocates 4 objects more than Base: the flight (with the request as
// sent, and the body that releases its context), the context and its
// cancel func, and the timer. Hedged with no hedge sent, 7: the same, the
// timer's func (the flight's own tick), the channel the caller waits on,
// and the first copy's goroutine, which runs it so that no copy holds the
// caller once another has answered. (A Base that waits on the context, as
// net/http's does, makes its Done channel too.)
func TestAllocsSlow(t *testing.T) {
	fresh := roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	})
	req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
	run := func(rt http.RoundTripper) float64 {
		return testing.AllocsPerRun(100, func() {
			resp, _ := rt.RoundTrip(req)
			resp.Body.Close()
		})
	}
	bare := run(fresh)
	adaptive := &httpretry.Transport{Base: fresh, Hedge: &httpretry.Hedge{}}
	for range 300 { // enough samples for an estimate
		resp, _ := adaptive.RoundTrip(req)
		resp.Body.Close()
	}
	for _, tt := range []struct {
		name string
		tr   *httpretry.Transport
		most float64
	}{
		{"AttemptTimeout", &httpretry.Transport{Base: fresh, AttemptTimeout: time.Hour}, 4},
		{"Hedge{Delay: 1h}", &httpretry.Transport{Base: fresh, Hedge: &httpretry.Hedge{Delay: time.Hour}}, 7},
		{"both", &httpretry.Transport{Base: fresh, AttemptTimeout: time.Hour, Hedge: &httpretry.Hedge{Delay: time.Hour}}, 7},
		{"Hedge{}, its host estimated", adaptive, 7},
	} {
		if n := run(tt.tr); n > bare+tt.most {
			t.Errorf("%s: %v allocations, Base alone %v; want at most %v more", tt.name, n, bare, tt.most)
		} else {
			t.Logf("%s: %v allocations more than Base's", tt.name, n-bare)
		}
	}
}

// TestLoggerGroupsAndAttrs: the method and URL reach a logger that has its
// own attributes and groups, once a record is written, and only then.
func TestLoggerGroupsAndAttrs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log bytes.Buffer
		p := constant(time.Second, 5)
		p.Logger = slog.New(slog.NewTextHandler(&log, nil)).With("service", "billing").WithGroup("retry")
		srv := newServer(s503)
		resp, err := get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		line := log.String()
		if !strings.Contains(line, "service=billing") || !strings.Contains(line, "retry.method=GET") || !strings.Contains(line, "retry.url=http://api.example/v1/things") || !strings.Contains(line, "retry.attempt=1") {
			t.Fatalf("log line %q: want the logger's own attribute, and method, url and attempt in its group", line)
		}
	})
}

var okResponse = &http.Response{StatusCode: 200, Body: http.NoBody}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRetryAfterSaturated: a Retry-After too long for a Duration is
// refused by any limit on time, never wrapped into a short wait.
func TestRetryAfterSaturated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(step{status: 429, retryAfter: "99999999999999999999"})
		p := constant(time.Second, 5)
		p.Schedule.MaxElapsed = time.Hour
		resp, err := get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: p, MaxRetryAfter: math.MaxInt64})
		if err != nil || resp.StatusCode != 429 || len(srv.reqs) != 1 {
			t.Fatalf("a saturated Retry-After under MaxElapsed: %v, %v; want the 429 at once", resp, err)
		}
		readAll(t, resp)
	})
}

// TestNoBodyIsReplayable: a request whose body is http.NoBody, with no
// GetBody, has nothing to rewind and is retried.
func TestNoBodyIsReplayable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(s503)
		req, _ := http.NewRequest(http.MethodDelete, "http://api.example/x", nil)
		req.Body, req.GetBody = http.NoBody, nil
		resp, err := (&httpretry.Transport{Base: srv, Policy: constant(time.Second, 3)}).RoundTrip(req)
		if err != nil || resp.StatusCode != 200 || len(srv.reqs) != 2 {
			t.Fatalf("DELETE with NoBody: %d requests, %v, %v; want the 503 retried", len(srv.reqs), resp, err)
		}
		readAll(t, resp)
	})
}

// TestStatusLineWithoutStatus: a Base that leaves Status empty still gives
// OnRetry the status line.
func TestStatusLineWithoutStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		base := roundTripFunc(func(*http.Request) (*http.Response, error) {
			if calls++; calls == 1 {
				return &http.Response{StatusCode: 502, Body: http.NoBody}, nil
			}
			return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
		})
		var seen string
		p := constant(time.Second, 3)
		p.OnRetry = func(e retry.Event) { seen = e.Err.Error() }
		resp, err := get(t, context.Background(), &httpretry.Transport{Base: base, Policy: p})
		if err != nil || resp.StatusCode != 200 || seen != "502 Bad Gateway" {
			t.Fatalf("OnRetry saw %q (%v, %v), want \"502 Bad Gateway\"", seen, resp, err)
		}
	})
}

// TestBaseReturnsBoth: a Base that breaks the RoundTripper contract with a
// response and an error has the response's body closed, and the error
// judged.
func TestBaseReturnsBoth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &body{r: strings.NewReader("x")}
		calls := 0
		base := roundTripFunc(func(*http.Request) (*http.Response, error) {
			if calls++; calls == 1 {
				return &http.Response{StatusCode: 200, Body: b}, errors.New("broken")
			}
			return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
		})
		resp, err := get(t, context.Background(), &httpretry.Transport{Base: base, Policy: constant(time.Second, 3)})
		if err != nil || resp.StatusCode != 200 || calls != 2 || !b.closed {
			t.Fatalf("%d calls, %v, %v, stray body closed %v; want the error retried and the stray body closed", calls, resp, err, b.closed)
		}
	})
}

// TestCallerBodyClosedOnce: the caller's body is closed once, by Base, on
// every path; a request with no body is given none; a done context before a
// bodiless GET is not a nil Close.
func TestCallerBodyClosedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := errors.New("refused")
		for _, script := range [][]step{{s503, s503, s503}, {{err: refused}, {err: refused}, {err: refused}}, {s503}} {
			srv := newServer(script...)
			closes := 0
			b := &countingBody{Reader: strings.NewReader("v"), closes: &closes}
			req, _ := http.NewRequest(http.MethodPut, "http://api.example/doc", b)
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("v")), nil }
			resp, _ := (&httpretry.Transport{Base: srv, Policy: constant(time.Second, 2)}).RoundTrip(req)
			if resp != nil {
				readAll(t, resp)
			}
			if closes != 1 {
				t.Errorf("script %v: the caller's body closed %d times, want once", script, closes)
			}
		}

		// GetBody without a Body: the retries carry no body either.
		srv := newServer(s503)
		req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("surprise")), nil }
		resp, err := (&httpretry.Transport{Base: srv, Policy: constant(time.Second, 2)}).RoundTrip(req)
		if err != nil || fmt.Sprint(srv.sent) != "[ ]" {
			t.Fatalf("a nil body with a GetBody: sent %q, %v; want no body on either attempt", srv.sent, err)
		}
		readAll(t, resp)

		// A done context and no body: nothing to close, nothing sent.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		srv = newServer()
		if resp, err := get(t, ctx, &httpretry.Transport{Base: srv}); resp != nil || !errors.Is(err, context.Canceled) || len(srv.reqs) != 0 {
			t.Fatalf("a done context, a GET: %v, %v, %d requests", resp, err, len(srv.reqs))
		}
	})
}

type countingBody struct {
	io.Reader
	closes *int
}

func (b *countingBody) Close() error { *b.closes++; return nil }

// TestStatusTextAndMethodAsSent: a server's own status text reaches OnRetry
// as it sent it, and a request with no method is logged as the GET it is.
func TestStatusTextAndMethodAsSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		base := roundTripFunc(func(*http.Request) (*http.Response, error) {
			if calls++; calls == 1 {
				return &http.Response{StatusCode: 503, Status: "503 Back Soon", Body: http.NoBody}, nil
			}
			return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
		})
		var seen string
		var log bytes.Buffer
		p := constant(time.Second, 3)
		p.OnRetry = func(e retry.Event) { seen = e.Err.Error() }
		p.Logger = slog.New(slog.NewTextHandler(&log, nil))
		req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
		req.Method = "" // NewRequest writes GET; a Request built by hand may leave it empty, which means GET
		if _, err := (&httpretry.Transport{Base: base, Policy: p}).RoundTrip(req); err != nil || seen != "503 Back Soon" || !strings.Contains(log.String(), "method=GET") {
			t.Fatalf("OnRetry saw %q, log %q, %v; want the server's status text and method=GET", seen, log.String(), err)
		}
	})
}

// stall is a body that sends nothing until it is closed or its request's
// context ends, as net/http's does on a stalled connection.
type stall struct {
	ctx    context.Context
	closed chan struct{}
	once   sync.Once
}

func newStall(ctx context.Context) *stall { return &stall{ctx: ctx, closed: make(chan struct{})} }

func (s *stall) Read([]byte) (int, error) {
	select {
	case <-s.ctx.Done():
		return 0, s.ctx.Err()
	case <-s.closed:
		return 0, errors.New("read on a closed body")
	}
}

func (s *stall) Close() error { s.once.Do(func() { close(s.closed) }); return nil }

// TestStalledBody: a retried response whose body stalls holds the caller
// no longer than the drain's bound, 100ms, or the request's deadline; a
// deadline that passes during the drain ends the request there, with an
// error naming the status, and no attempt after it (before the bound, an
// attempt followed at once on a dead context).
func TestStalledBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if calls++; calls == 1 {
				return &http.Response{StatusCode: 503, Body: newStall(req.Context())}, nil
			}
			return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
		})
		start := time.Now()
		resp, err := get(t, context.Background(), &httpretry.Transport{Base: base, Policy: constant(time.Second, 3)})
		if err != nil || resp.StatusCode != 200 || time.Since(start) != time.Second+100*time.Millisecond {
			t.Fatalf("a stalled 503, no deadline: %v, %v after %v; want 200 after the 100ms drain and the 1s wait", resp, err, time.Since(start))
		}

		calls = 0
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start = time.Now()
		p := retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: 3}} // no wait: only the drain can hold it
		resp, err = get(t, ctx, &httpretry.Transport{Base: base, Policy: p})
		if resp != nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(fmt.Sprint(err), "503 Service Unavailable") || calls != 1 || time.Since(start) != 50*time.Millisecond {
			t.Fatalf("a stalled 503 under a 50ms deadline: %v, %v after %v and %d calls; want an error naming the 503 by the deadline, no second attempt", resp, err, time.Since(start), calls)
		}
	})
}

// TestNilBody: a Base that returns a response with a nil Body, which
// net/http's Client accepts, is retried and returned without a panic.
func TestNilBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		base := roundTripFunc(func(*http.Request) (*http.Response, error) {
			calls++
			return &http.Response{StatusCode: 503, Header: http.Header{}}, nil
		})
		client := &http.Client{Transport: &httpretry.Transport{Base: base, Policy: constant(time.Second, 2)}}
		resp, err := client.Get("http://api.example/")
		if err != nil || resp.StatusCode != 503 || calls != 3 {
			t.Fatalf("nil bodies: %v, %v after %d calls; want the last 503 after 3", resp, err, calls)
		}
		if b, err := io.ReadAll(resp.Body); err != nil || len(b) != 0 {
			t.Fatalf("the last response's body: %q, %v; want empty", b, err)
		}
	})
}

// onceBody is a body that can be read once: a second pass, or a read after
// Close, fails the test.
type onceBody struct {
	t      *testing.T
	r      io.Reader
	ended  bool
	closed bool
}

func (b *onceBody) Read(p []byte) (int, error) {
	if b.ended || b.closed {
		b.t.Errorf("the body was read again after its end or its Close")
		return 0, io.EOF
	}
	n, err := b.r.Read(p)
	b.ended = err == io.EOF
	return n, err
}

func (b *onceBody) Close() error { b.closed = true; return nil }

// TestBodyNeverBuffered: a streamed body that cannot be rewound reaches
// Base as the caller's own, unread, and goes once; one with GetBody reaches
// Base as it is the first time and as GetBody's after: never read into
// memory by the Transport.
func TestBodyNeverBuffered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []io.ReadCloser
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			seen = append(seen, req.Body)
			io.Copy(io.Discard, req.Body)
			req.Body.Close()
			return &http.Response{StatusCode: 503, Body: http.NoBody}, nil
		})
		stream := &onceBody{t: t, r: strings.NewReader(strings.Repeat("x", 1<<20))}
		req, _ := http.NewRequest(http.MethodPost, "http://api.example/upload", stream)
		req.Header.Set("Idempotency-Key", "a1")
		resp, err := (&httpretry.Transport{Base: base, Policy: constant(time.Second, 5)}).RoundTrip(req)
		if err != nil || resp.StatusCode != 503 || len(seen) != 1 || seen[0] != io.ReadCloser(stream) {
			t.Fatalf("a 1 MiB stream with no GetBody: %d sends, first body %T, %v, %v; want one send of the caller's own body and the 503", len(seen), seen, resp, err)
		}

		// GetBody is asked as soon as a response is to be retried, before
		// the limits are: for the last 503 too, whose fresh body is closed
		// unsent.
		seen = nil
		var fresh []*onceBody
		req, _ = http.NewRequest(http.MethodPut, "http://api.example/doc", &onceBody{t: t, r: strings.NewReader("v")})
		first := req.Body
		req.GetBody = func() (io.ReadCloser, error) {
			fresh = append(fresh, &onceBody{t: t, r: strings.NewReader("v")})
			return fresh[len(fresh)-1], nil
		}
		resp, err = (&httpretry.Transport{Base: base, Policy: constant(time.Second, 2)}).RoundTrip(req)
		if err != nil || resp.StatusCode != 503 || len(seen) != 3 || seen[0] != first || len(fresh) != 3 ||
			seen[1] != io.ReadCloser(fresh[0]) || seen[2] != io.ReadCloser(fresh[1]) || !fresh[2].closed {
			t.Fatalf("a body with GetBody: %d sends, %d from GetBody, %v, %v; want the caller's first, then GetBody's each time, the unsent one closed", len(seen), len(fresh), resp, err)
		}
	})
}

// hosts is an in-memory Base for many hosts: each answers as its func says,
// and the requests each received are counted.
type hosts struct {
	mu       sync.Mutex
	answer   func(host string, n int) int // the status of host's n-th request, from 1
	requests map[string]int
}

func (h *hosts) RoundTrip(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.requests == nil {
		h.requests = map[string]int{}
	}
	h.requests[req.URL.Host]++
	code := h.answer(req.URL.Host, h.requests[req.URL.Host])
	return &http.Response{StatusCode: code, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

func getURL(t *testing.T, rt http.RoundTripper, url string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestBudgetPerHost: by default each host has a Budget of its own, 10
// retries: a host that fails every request gets 10 retries from a client,
// then none, while another host is still retried; a refused retry returns
// the last response as is.
func TestBudgetPerHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &hosts{answer: func(host string, n int) int {
			if host == "down.example" || n%2 == 1 {
				return 503
			}
			return 200
		}}
		tr := &httpretry.Transport{Base: base, Policy: constant(time.Second, 3)}
		for range 10 {
			if resp := getURL(t, tr, "http://down.example/"); resp.StatusCode != 503 {
				t.Fatalf("a host that is down answered %d", resp.StatusCode)
			}
		}
		// 10 requests, 10 retries in all: the first three requests took 3
		// each, the fourth one, and the rest none.
		if got := base.requests["down.example"]; got != 20 {
			t.Fatalf("10 requests to a host that fails every one: %d sent, want 10 + the Budget's 10 retries", got)
		}
		start := time.Now()
		if resp := getURL(t, tr, "http://down.example/"); resp.StatusCode != 503 || time.Since(start) != 0 {
			t.Fatalf("a retry the Budget refuses: %d after %v; want the 503 as is, at once", resp.StatusCode, time.Since(start))
		}
		for range 5 {
			if resp := getURL(t, tr, "http://up.example/"); resp.StatusCode != 200 {
				t.Fatalf("another host, failing every other request: %d, want its 200 after a retry", resp.StatusCode)
			}
		}
		if got := base.requests["up.example"]; got != 10 {
			t.Fatalf("5 requests to a host that fails every other one: %d sent, want 10", got)
		}
	})
}

// TestBudgetHostKey: "host" and "host:443" are one host under https, as
// net/http's connections are, whatever the case; http and https are two.
func TestBudgetHostKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &hosts{answer: func(string, int) int { return 503 }}
		tr := &httpretry.Transport{Base: base, Policy: constant(time.Second, 20)}
		getURL(t, tr, "https://api.example/")     // 10 retries, and the Budget is empty
		getURL(t, tr, "https://API.example:443/") // the same host: no retry
		getURL(t, tr, "http://api.example:80/x")  // another: 10 retries
		getURL(t, tr, "http://api.example/y")     // the same as the last
		getURL(t, tr, "https://[::1]:443/")       // another: 10 retries
		getURL(t, tr, "https://[::1]/")           // the same as the last
		// (The Base counts by URL.Host: https://api.example's 11 and
		// http://api.example/y's 1 fall together there.)
		want := map[string]int{"api.example": 12, "API.example:443": 1, "api.example:80": 11, "[::1]:443": 11, "[::1]": 1}
		if fmt.Sprint(base.requests) != fmt.Sprint(want) {
			t.Fatalf("requests sent %v, want %v", base.requests, want)
		}
	})
}

// TestBudgetShared: a Policy.Budget of the caller's own is shared by every
// host; NoBudget never refuses.
func TestBudgetShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &hosts{answer: func(string, int) int { return 503 }}
		p := constant(time.Second, 5)
		p.Budget = &retry.Budget{Burst: 3}
		tr := &httpretry.Transport{Base: base, Policy: p}
		getURL(t, tr, "http://a.example/")
		getURL(t, tr, "http://b.example/")
		if base.requests["a.example"] != 4 || base.requests["b.example"] != 1 || p.Budget.Tokens() != 0 {
			t.Fatalf("a shared Budget of 3: %v, %v left; want a's 3 retries, none for b", base.requests, p.Budget.Tokens())
		}
		p.Budget = httpretry.NoBudget()
		tr = &httpretry.Transport{Base: base, Policy: p}
		for range 20 {
			getURL(t, tr, "http://c.example/")
		}
		if base.requests["c.example"] != 120 || !math.IsInf(httpretry.NoBudget().Tokens(), 1) {
			t.Fatalf("NoBudget: %d requests for 20 calls of 5 retries, %v tokens; want 120, +Inf", base.requests["c.example"], httpretry.NoBudget().Tokens())
		}
	})
}

// TestBudgetEarning: a RoundTrip earns as a Do call does: a response not
// worth retrying earns, and so does one after a retry; a Retry-After past
// MaxRetryAfter, a GetBody that fails and a request that cannot be sent
// twice earn nothing, and the last spends nothing either.
func TestBudgetEarning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{Burst: 5}
		p := constant(time.Second, 1)
		p.Budget = b
		fail := &hosts{answer: func(string, int) int { return 503 }}
		drained := func() {
			for b.Tokens() >= 1 {
				getURL(t, &httpretry.Transport{Base: fail, Policy: p}, "http://x.example/")
			}
		}
		for _, tt := range []struct {
			name string
			do   func(tr *httpretry.Transport)
			earn float64
		}{
			{"200", func(tr *httpretry.Transport) {
				tr.Base = &hosts{answer: func(string, int) int { return 200 }}
				getURL(t, tr, "http://x.example/")
			}, 0.2},
			{"404", func(tr *httpretry.Transport) {
				tr.Base = &hosts{answer: func(string, int) int { return 404 }}
				getURL(t, tr, "http://x.example/")
			}, 0.2},
			{"Retry-After past MaxRetryAfter", func(tr *httpretry.Transport) {
				tr.Base = roundTripFunc(func(*http.Request) (*http.Response, error) {
					return &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"3600"}}, Body: http.NoBody}, nil
				})
				if resp := getURL(t, tr, "http://x.example/"); resp.StatusCode != 429 {
					t.Fatalf("status %d, want the 429 as is", resp.StatusCode)
				}
			}, 0},
			{"GetBody fails", func(tr *httpretry.Transport) {
				tr.Base = fail
				req, _ := http.NewRequest(http.MethodPut, "http://x.example/", strings.NewReader("v"))
				req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("gone") }
				if resp, err := tr.RoundTrip(req); err != nil || resp.StatusCode != 503 {
					t.Fatalf("%v, %v; want the 503 as is", resp, err)
				}
			}, 0},
			{"POST, sent once", func(tr *httpretry.Transport) {
				tr.Base = &hosts{answer: func(string, int) int { return 200 }}
				req, _ := http.NewRequest(http.MethodPost, "http://x.example/", strings.NewReader("v"))
				tr.RoundTrip(req)
			}, 0},
		} {
			drained()
			for range 2 { // 0.4 of a retry held: what each call earns shows
				getURL(t, &httpretry.Transport{Base: &hosts{answer: func(string, int) int { return 200 }}, Policy: p}, "http://x.example/")
			}
			before := b.Tokens()
			tt.do(&httpretry.Transport{Policy: p})
			if got := b.Tokens() - before; math.Abs(got-tt.earn) > 1e-9 {
				t.Errorf("%s: earned %v, want %v", tt.name, got, tt.earn)
			}
		}
		// A POST sent once spends nothing, with no retry held or a full
		// Budget alike.
		full := &retry.Budget{}
		p.Budget = full
		req, _ := http.NewRequest(http.MethodPost, "http://x.example/", strings.NewReader("v"))
		(&httpretry.Transport{Base: fail, Policy: p}).RoundTrip(req)
		if full.Tokens() != 10 {
			t.Fatalf("a POST sent once to a failing host: %v tokens left, want 10", full.Tokens())
		}
	})
}

// TestIdempotencyKeyNeedsAValidMethod: a request with an Idempotency-Key is
// retried only when its method is an RFC 9110 token, as net/http requires;
// one net/http would refuse goes once.
func TestIdempotencyKeyNeedsAValidMethod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tt := range []struct {
			method string
			sends  int
		}{
			{"POST", 2}, {"PATCH", 2}, {"~X!", 2},
			{"G T", 1}, {"A(B", 1}, {"(AB", 1}, {"A\x7f", 1}, {"MÉTHOD", 1}, {"A\tB", 1},
		} {
			srv := newServer(s503)
			req, _ := http.NewRequest(http.MethodGet, "http://api.example/x", nil)
			req.Method = tt.method
			req.Header.Set("Idempotency-Key", "k1")
			(&httpretry.Transport{Base: srv, Policy: constant(time.Second, 3)}).RoundTrip(req)
			if len(srv.reqs) != tt.sends {
				t.Errorf("method %q with an Idempotency-Key: sent %d times, want %d", tt.method, len(srv.reqs), tt.sends)
			}
		}
	})
}

// TestContextDoneDuringAttempt: a request whose context ends while Base
// answers a retryable status gets that response as is, and its body is not
// rewound for a retry that cannot come.
func TestContextDoneDuringAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		base := roundTripFunc(func(*http.Request) (*http.Response, error) {
			cancel()
			return &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"1"}}, Body: http.NoBody}, nil
		})
		rewound := 0
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://api.example/x", strings.NewReader("v"))
		req.GetBody = func() (io.ReadCloser, error) { rewound++; return io.NopCloser(strings.NewReader("v")), nil }
		resp, err := (&httpretry.Transport{Base: base, Policy: constant(time.Second, 3)}).RoundTrip(req)
		if err != nil || resp.StatusCode != 429 || rewound != 0 {
			t.Fatalf("%v, %v, GetBody asked %d times; want the 429 as is, GetBody not asked", resp, err, rewound)
		}
	})
}

// TestRetryAfterSpread: the widened waits of a "Retry-After: 10" spread
// over all of [10s, 15s), half of d on top, not less.
func TestRetryAfterSpread(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var top time.Duration
		for range 200 {
			srv := newServer(step{status: 503, retryAfter: "10"})
			resp, _ := get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: constant(time.Second, 3)})
			readAll(t, resp)
			top = max(top, srv.gaps()[0])
		}
		if top < 14*time.Second || top >= 15*time.Second {
			t.Fatalf("the longest of 200 widened 10s waits: %v, want in [14s, 15s)", top)
		}
	})
}

// deafStall is a body that stalls until it is closed, deaf to its request's
// context, and whose first Close takes a second (the second returns at
// once).
type deafStall struct {
	closed chan struct{}
	first  atomic.Bool
}

func (s *deafStall) Read([]byte) (int, error) {
	<-s.closed
	return 0, errors.New("read on a closed body")
}

func (s *deafStall) Close() error {
	if s.first.CompareAndSwap(false, true) {
		close(s.closed)
		time.Sleep(time.Second)
	}
	return nil
}

// TestDrainCut: a stalled body deaf to its context is cut at the drain's
// bound, or at the request's deadline when that comes first; and the cut
// has finished, its Close returned, before the next attempt is sent.
func TestDrainCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tt := range []struct {
			deadline time.Duration
			next     time.Duration // when the second attempt is sent
		}{
			{0, 100*time.Millisecond + time.Second}, // the bound, then the cut's slow Close
			{time.Hour, 100*time.Millisecond + time.Second},
		} {
			ctx := context.Background()
			if tt.deadline > 0 {
				var cancel func()
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			start := time.Now()
			var at []time.Duration
			base := roundTripFunc(func(*http.Request) (*http.Response, error) {
				at = append(at, time.Since(start))
				if len(at) == 1 {
					return &http.Response{StatusCode: 503, Body: &deafStall{closed: make(chan struct{})}}, nil
				}
				return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
			})
			p := retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: 1}}
			resp, err := get(t, ctx, &httpretry.Transport{Base: base, Policy: p})
			if err != nil || resp.StatusCode != 200 || len(at) != 2 || at[1] != tt.next {
				t.Errorf("deadline %v: %v, %v, attempts at %v; want 200, the second at %v", tt.deadline, resp, err, at, tt.next)
			}
		}
		// Under a deadline nearer than the bound, the cut comes at the
		// deadline, which ends the request with the status named.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		start := time.Now()
		base := roundTripFunc(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 503, Status: "503 Service Unavailable", Body: &deafStall{closed: make(chan struct{})}}, nil
		})
		p := retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: 1}}
		_, err := get(t, ctx, &httpretry.Transport{Base: base, Policy: p})
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(fmt.Sprint(err), "503") || time.Since(start) != 30*time.Millisecond+time.Second {
			t.Fatalf("a deaf stall under a 30ms deadline: %v after %v; want the deadline, the 503 named, cut at 30ms (and its Close's second)", err, time.Since(start))
		}
	})
}
