package httpretry_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// The seams with net/http (SPEC-retry.md, "Seams with net/http"): each
// test is named after the fault it rules out, and failed before its fix.

// TestBaseReturnsNilNil: a Base that returns neither a response nor an
// error broke the RoundTripper contract; RoundTrip says so in an error,
// for a request it retries and for one it sends once, and through an
// http.Client, instead of panicking. It is not retried.
func TestBaseReturnsNilNil(t *testing.T) {
	calls := 0
	broken := roundTripFunc(func(*http.Request) (*http.Response, error) { calls++; return nil, nil })
	tr := &httpretry.Transport{Base: broken, Policy: noWait(5)}
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		calls = 0
		req, _ := http.NewRequest(method, "http://api.example/", nil)
		resp, err := tr.RoundTrip(req)
		if resp != nil || err == nil || !strings.Contains(err.Error(), "nil *http.Response with a nil error") || calls != 1 {
			t.Errorf("%s through a Base that returns (nil, nil): %v, %v after %d calls; want an error naming the contract after 1", method, resp, err, calls)
		}
	}
	if _, err := (&http.Client{Transport: tr}).Get("http://api.example/"); err == nil {
		t.Errorf("http.Client through a Base that returns (nil, nil): no error")
	}
}

// TestGetBodyReturnsNil: a PUT whose GetBody gives no body, after a 503,
// is a failed rewind: the 503 comes back as is, and nothing is sent with
// a nil body, which crashed the process from net/http's write loop, where
// no recover reaches.
func TestGetBodyReturnsNil(t *testing.T) {
	var puts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		puts.Add(1)
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "busy")
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/doc", strings.NewReader("v2"))
	req.GetBody = func() (io.ReadCloser, error) { return nil, nil }
	resp, err := (&http.Client{Transport: &httpretry.Transport{Base: base, Policy: noWait(3)}}).Do(req)
	if err != nil || resp.StatusCode != 503 || puts.Load() != 1 {
		t.Fatalf("a PUT whose GetBody returns (nil, nil): %v, %v after %d PUTs; want the 503 after 1", resp, err, puts.Load())
	}
	if got := readAll(t, resp); got != "busy" {
		t.Fatalf("the 503's body: %q, want %q", got, "busy")
	}
}

// TestDrainCountsInTheDeadline: a stalled 503 body takes the drain's
// 100ms; a 150ms wait then cannot end before a deadline 99ms away, so the
// 503 comes back at once, no token spent, instead of an error at the
// deadline after a wait that no attempt could follow.
func TestDrainCountsInTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			calls++
			return &http.Response{StatusCode: 503, Status: "503 Service Unavailable", Body: newStall(context.Background())}, nil
		})
		p := constant(150*time.Millisecond, 3)
		p.Budget = &retry.Budget{}
		ctx, cancel := context.WithTimeout(context.Background(), 199*time.Millisecond)
		defer cancel()
		start := time.Now()
		resp, err := get(t, ctx, &httpretry.Transport{Base: base, Policy: p})
		if err != nil || resp.StatusCode != 503 || calls != 1 || time.Since(start) != 100*time.Millisecond {
			t.Fatalf("a stalled 503 with 99ms left after its drain: %v, %v after %v and %d calls; want the 503 at 100ms, after 1", resp, err, time.Since(start), calls)
		}
		if got := p.Budget.Tokens(); got != 10 {
			t.Fatalf("the budget holds %v after a retry never made; want 10", got)
		}
		if _, err := io.ReadAll(resp.Body); err == nil || !strings.Contains(err.Error(), "cut after 100ms") {
			t.Fatalf("reading the cut 503's body: %v; want an error that says it was cut", err)
		}
	})
}

// TestHTTPServerOnHTTPSURL: an HTTPS URL served by a plain HTTP server is
// tried once, and http.Client reports http.ErrSchemeMismatch, as it does
// without the Transport; before, the record error was retried 5 times.
func TestHTTPServerOnHTTPSURL(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	p := noWait(5)
	p.Budget = &retry.Budget{}
	client := &http.Client{Transport: &httpretry.Transport{Base: base, Policy: p}}
	_, err := client.Get("https" + strings.TrimPrefix(srv.URL, "http"))
	if !errors.Is(err, http.ErrSchemeMismatch) || conns.Load() != 1 || p.Budget.Tokens() <= 9 { // a spent retry leaves 9 at most
		t.Fatalf("https:// to an HTTP server: %v after %d connections, %v tokens left; want ErrSchemeMismatch after 1, none spent", err, conns.Load(), p.Budget.Tokens())
	}
}

// TestRefusedRequestsSentOnce: a request net/http refuses before sending
// (a header value with CR, LF or NUL, a header name that is not a token, a
// bad trailer, a nil Header) goes to Base once, its error comes back, and
// no token is spent; before, a GET was sent 6 times, and two of them left
// a real 503 from the host with no retry.
func TestRefusedRequestsSentOnce(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	base := &counting{base: &http.Transport{}}
	defer base.base.(*http.Transport).CloseIdleConnections()
	tr := &httpretry.Transport{Base: base, Policy: noWait(5)}
	tr.Policy.Budget = &retry.Budget{Burst: 1}
	for _, tt := range []struct {
		name  string
		setup func(*http.Request)
	}{
		{"a value with CR LF", func(r *http.Request) { r.Header.Set("X-Note", "a\r\nInjected: 1") }},
		{"a value with LF", func(r *http.Request) { r.Header["X-Note"] = []string{"a\nb"} }},
		{"a value with NUL", func(r *http.Request) { r.Header["X-Note"] = []string{"a\x00b"} }},
		{"a name with a space", func(r *http.Request) { r.Header["X Note"] = []string{"v"} }},
		{"an empty name", func(r *http.Request) { r.Header[""] = []string{"v"} }},
		{"a name with a colon", func(r *http.Request) { r.Header["X:Note"] = []string{"v"} }},
		{"a bad trailer", func(r *http.Request) { r.Trailer = http.Header{"X-Sum": {"a\rb"}} }},
		{"a nil Header", func(r *http.Request) { r.Header = nil }},
	} {
		base.n.Store(0)
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		tt.setup(req)
		resp, err := tr.RoundTrip(req)
		if resp != nil || err == nil || base.n.Load() != 1 {
			t.Errorf("%s: %v, %v after %d sends; want net/http's error after 1", tt.name, resp, err, base.n.Load())
		}
	}
	if served.Load() != 0 || tr.Policy.Budget.Tokens() != 1 {
		t.Fatalf("the refused requests reached the server %d times and left %v tokens; want 0, and the 1 token", served.Load(), tr.Policy.Budget.Tokens())
	}
	base.n.Store(0)
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("X-Note", "tab\tis fine")
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 200 || base.n.Load() != 2 {
		t.Fatalf("a real 503 after the refusals: %v, %v after %d sends; want it retried to the 200", resp, err, base.n.Load())
	}
	readAll(t, resp)
}

// counting counts the requests it passes to base.
type counting struct {
	base http.RoundTripper
	n    atomic.Int64
}

func (c *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(req)
}

// TestEmptyIdempotencyKey: an Idempotency-Key sent with an empty value
// names no key, so a POST that carries one goes once; a key with a value
// makes it retryable, and so does net/http's zero-length slice, which
// marks a request idempotent without sending the header.
func TestEmptyIdempotencyKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tt := range []struct {
			name  string
			key   []string
			sends int
		}{
			{"Idempotency-Key", []string{""}, 1},
			{"Idempotency-Key", []string{"", ""}, 1},
			{"X-Idempotency-Key", []string{""}, 1},
			{"Idempotency-Key", []string{"", "k1"}, 3},
			{"Idempotency-Key", []string{"k1"}, 3},
			{"X-Idempotency-Key", []string{"k1"}, 3},
			{"Idempotency-Key", []string{}, 3},
			{"Idempotency-Key", nil, 3},
		} {
			srv := newServer(s503, s503)
			req, _ := http.NewRequest(http.MethodPost, "http://api.example/orders", nil)
			req.Header[tt.name] = tt.key
			resp, err := (&httpretry.Transport{Base: srv, Policy: constant(time.Second, 5)}).RoundTrip(req)
			if err != nil || len(srv.reqs) != tt.sends {
				t.Errorf("a POST with %s %q: sent %d times, %v; want %d", tt.name, tt.key, len(srv.reqs), err, tt.sends)
				continue
			}
			readAll(t, resp)
		}
	})
}

// TestCloseIdleConnections: http.Client.CloseIdleConnections reaches the
// Base's idle connections through the Transport, and a Base without the
// method is left alone.
func TestCloseIdleConnections(t *testing.T) {
	closed := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.Start()
	defer srv.Close()
	client := &http.Client{Transport: &httpretry.Transport{Base: &http.Transport{}}}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	client.CloseIdleConnections()
	<-closed // the server saw its idle connection closed; without the method this blocks until the test times out
	(&httpretry.Transport{Base: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil })}).CloseIdleConnections()
}

// TestNoBudgetIsEachCallersOwn: NoBudget returns a new Budget each time,
// so a change to one reaches no other Transport.
func TestNoBudgetIsEachCallersOwn(t *testing.T) {
	a, b := httpretry.NoBudget(), httpretry.NoBudget()
	a.Burst = 1
	if a == b || b.Burst != httpretry.NoBudget().Burst || b.Tokens() != httpretry.NoBudget().Tokens() {
		t.Fatalf("NoBudget() returned %p and %p; a change to one reached the other", a, b)
	}
}

// TestBudgetHostKeyAsNetHTTP: hosts are keyed by URL.Hostname and
// URL.Port, as net/http keys connections: user info, brackets, case and
// the default port do not split a host; IDNA spellings of one host, which
// net/http joins, are the documented exception.
func TestBudgetHostKeyAsNetHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &hosts{answer: func(string, int) int { return 503 }}
		tr := &httpretry.Transport{Base: base, Policy: constant(time.Second, 20)}
		for _, u := range []string{
			"http://[::1]:80/", "http://[::1]/", "HTTP://[::1]:80/x",
			"https://bob@api.example/", "https://API.EXAMPLE/",
			"https://bücher.example/", "https://BÜCHER.example/", "https://xn--bcher-kva.example/",
		} {
			readAll(t, getURL(t, tr, u))
		}
		// The Base counts by URL.Host, which keeps the spellings apart.
		want := map[string]int{
			"[::1]:80": 11 + 1, "[::1]": 1, // one host: 10 retries in all
			"api.example": 1 + 10, "API.EXAMPLE": 1, // user info and case do not split it
			"bücher.example": 11, "BÜCHER.example": 1, // Unicode in any case: one
			"xn--bcher-kva.example": 11, // punycode: a second budget, the exception
		}
		for host, n := range want {
			if base.requests[host] != n {
				t.Errorf("requests to %s: %d, want %d (all: %v)", host, base.requests[host], n, base.requests)
			}
		}
	})
}

// TestGivenBackBodyWhole: a retried status given back when the limits end
// the request yields its whole body, whatever the drain read of it: all of
// a short one, and 64 KiB of a long one and then the rest.
func TestGivenBackBodyWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, size := range []int{0, 10, 64 << 10, 64<<10 + 1, 1 << 20} {
			page := strings.Repeat("e", size)
			srv := newServer(step{status: 503, body: page}, step{status: 503, body: page})
			resp, err := get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: constant(time.Second, 1)})
			if err != nil || resp.StatusCode != 503 {
				t.Fatalf("%d bytes: %v, %v; want the last 503", size, resp, err)
			}
			if got := readAll(t, resp); got != page {
				t.Errorf("a %d-byte 503 given back: read %d bytes of it", size, len(got))
			}
			if b := srv.bodies[1]; !b.closed {
				t.Errorf("a %d-byte 503 given back: its body not closed after the caller's Close", size)
			}
		}
	})
}

// TestNoWaitIsDrained: even a retry with no wait drains and closes the
// body before the next attempt.
func TestNoWaitIsDrained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(s503, s503)
		p := retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: 5}}
		resp, err := get(t, context.Background(), &httpretry.Transport{Base: srv, Policy: p})
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%v, %v", resp, err)
		}
		readAll(t, resp)
		for i, b := range srv.bodies[:2] {
			if !b.closed || b.read != len("overloaded") {
				t.Errorf("retried body %d: read %d, closed %v; want drained and closed", i, b.read, b.closed)
			}
		}
	})
}
