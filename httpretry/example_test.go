package httpretry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// flaky answers 503 twice, then 200 "hello".
func flaky() *httptest.Server {
	var calls atomic.Int32
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "hello")
	}))
}

// A client against a server that answers 503 twice, then 200. The waits
// here are a few milliseconds, drawn from "5ms×2 up to 50ms, full jitter";
// the zero Policy's are 200ms×2 up to 30s.
func ExampleTransport() {
	server := flaky()
	defer server.Close()
	var policy retry.Policy
	policy.UnmarshalText([]byte("5ms×2 up to 50ms, full jitter"))
	policy.OnRetry = func(e retry.Event) { fmt.Printf("attempt %d: %v; retrying\n", e.Attempt, e.Err) }
	client := &http.Client{Transport: &httpretry.Transport{Policy: policy}}

	resp, err := client.Get(server.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, string(body))
	// Output:
	// attempt 1: 503 Service Unavailable; retrying
	// attempt 2: 503 Service Unavailable; retrying
	// 200 OK hello
}

// A server that asks for 30 seconds, under a deadline of 10: the wait
// cannot be followed by an attempt, so the client returns the 429 at once,
// readable, as a client without retries would have, instead of sleeping
// into the deadline.
func ExampleTransport_deadline() {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, "slow down")
	}))
	defer server.Close()
	client := &http.Client{Transport: &httpretry.Transport{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, server.URL, nil)
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, resp.Header.Get("Retry-After"), string(body))
	fmt.Println("the deadline still ahead:", ctx.Err() == nil)
	// Output:
	// 429 Too Many Requests 30 slow down
	// the deadline still ahead: true
}

// TestClientInVirtualTime is how to test your own client in virtual time:
// inside a testing/synctest bubble every wait is virtual, so a 429's
// "Retry-After: 2", widened to between 2s and 3s, takes no real time. A
// real socket is not "durably blocking", so synctest cannot run an
// httptest.Server; an in-memory RoundTripper as Base can, and a test of
// your own passes one to the code under test as its Transport's Base.
func TestClientInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			calls++
			resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("hello")), Request: req}
			if calls == 1 {
				resp.StatusCode = http.StatusTooManyRequests
				resp.Header.Set("Retry-After", "2")
			}
			return resp, nil
		})
		client := &http.Client{Transport: &httpretry.Transport{Base: base}}
		start := time.Now()
		resp, err := client.Get("http://api.example/greeting")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if took := time.Since(start); resp.StatusCode != http.StatusOK || calls != 2 || took < 2*time.Second || took >= 3*time.Second {
			t.Fatalf("status %d after %d calls and %v of virtual time; want 200 after 2, between 2s and 3s", resp.StatusCode, calls, took)
		}
	})
}

// DefaultRetryable retries transport errors and the statuses that say "try
// again"; a Retryable of your own can build on it, here to retry a 404 of
// an eventually consistent read as well.
func ExampleDefaultRetryable() {
	for _, code := range []int{200, 404, 408, 429, 500, 501, 503} {
		fmt.Printf("%d:%v ", code, httpretry.DefaultRetryable(&http.Response{StatusCode: code}, nil))
	}
	fmt.Println("(statuses)")
	fmt.Println(httpretry.DefaultRetryable(nil, errors.New("connection reset by peer")))

	t := &httpretry.Transport{Retryable: func(resp *http.Response, err error) bool {
		return httpretry.DefaultRetryable(resp, err) || (err == nil && resp.StatusCode == http.StatusNotFound)
	}}
	fmt.Println(t.Retryable(&http.Response{StatusCode: 404}, nil))
	// Output:
	// 200:false 404:false 408:true 429:true 500:true 501:false 503:true (statuses)
	// true
	// true
}

// The budget per host, against a server that answers 503 to everything:
// the default budget gives this client's requests 10 retries in all, then
// returns each 503 at once; NoBudget retries every request 5 times.
func ExampleNoBudget() {
	var hits atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer server.Close()
	var policy retry.Policy
	policy.UnmarshalText([]byte("no wait, 5 retries")) // no wait, so that the example takes no time
	for _, budget := range []*retry.Budget{nil, httpretry.NoBudget()} {
		policy.Budget = budget
		client := &http.Client{Transport: &httpretry.Transport{Policy: policy}}
		var sent []int32
		for range 4 {
			hits.Store(0)
			resp, err := client.Get(server.URL)
			if err != nil {
				fmt.Println(err)
				return
			}
			resp.Body.Close()
			sent = append(sent, hits.Load())
		}
		fmt.Println("requests sent for each of 4 calls:", sent)
	}
	// Output:
	// requests sent for each of 4 calls: [6 6 1 1]
	// requests sent for each of 4 calls: [6 6 6 6]
}

// A server whose first request never sends its headers: AttemptTimeout
// cancels that request after 100ms and retries, where without it the
// request would wait for as long as its context lasts. (100ms rather than
// a few, so that the retry's own answer is in time on a loaded machine.)
func ExampleTransport_attemptTimeout() {
	var calls atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			<-r.Context().Done() // hangs until the client gives this request up
			return
		}
		fmt.Fprint(w, "hello")
	}))
	defer server.Close()
	var policy retry.Policy
	policy.UnmarshalText([]byte("no wait, 3 retries"))
	policy.OnRetry = func(e retry.Event) { fmt.Printf("attempt %d: %v; retrying\n", e.Attempt, e.Err) }
	client := &http.Client{Transport: &httpretry.Transport{Policy: policy, AttemptTimeout: 100 * time.Millisecond}}

	resp, err := client.Get(server.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, string(body))
	// Output:
	// attempt 1: httpretry: attempt timed out awaiting response headers; retrying
	// 200 OK hello
}

// A server whose first request is slow: the Hedge sends a second copy
// after 5ms without headers, returns the first answer, and cancels the
// copy still waiting. Hedge{} alone would choose the delay itself, from the
// host's recent times (the 95th percentile), once it has seen 200.
func ExampleHedge() {
	var calls atomic.Int32
	cancelled := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			<-r.Context().Done() // slow: still working when the hedge's answer wins
			close(cancelled)
			return
		}
		fmt.Fprint(w, "hello from copy 2")
	}))
	defer server.Close()
	client := &http.Client{Transport: &httpretry.Transport{Hedge: &httpretry.Hedge{Delay: 5 * time.Millisecond}}}

	resp, err := client.Get(server.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	<-cancelled
	fmt.Println(resp.Status, string(body))
	fmt.Println("requests:", calls.Load(), "- the slow one cancelled")
	// Output:
	// 200 OK hello from copy 2
	// requests: 2 - the slow one cancelled
}

// The Transport's hooks see the request: here, a host that answers 503 to
// everything, whose budget refuses the second request's retry; OnDone's
// Cause shows the refusal, though RoundTrip returns the 503 as is.
func ExampleTransport_onDone() {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer server.Close()
	var policy retry.Policy
	policy.UnmarshalText([]byte("no wait, 1 retry"))
	policy.Budget = &retry.Budget{Burst: 1}
	tr := &httpretry.Transport{Policy: policy,
		OnRetry: func(req *http.Request, e retry.Event) { fmt.Printf("%s: retrying after %v\n", req.URL.Path, e.Err) },
		OnDone: func(req *http.Request, d retry.Done) {
			var se *httpretry.StatusError
			if errors.As(d.Err, &se) {
				fmt.Printf("%s: %v after %d attempts, last %d, refused by the budget: %v\n",
					req.URL.Path, d.Outcome, d.Attempts, se.Response.StatusCode, errors.Is(d.Cause, retry.ErrBudget))
			}
		}}
	client := &http.Client{Transport: tr}
	for _, path := range []string{"/first", "/second"} {
		resp, err := client.Get(server.URL + path)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
	}
	// Output:
	// /first: retrying after 503 Service Unavailable
	// /first: failed_with_retry after 2 attempts, last 503, refused by the budget: false
	// /second: failed_without_retry after 1 attempts, last 503, refused by the budget: true
}

// Resend tells a Base how many sends of its request came before, as
// OpenTelemetry's http.request.resend_count counts them (the otelretry
// module sets that attribute on each resend's span).
func ExampleResend() {
	server := flaky() // 503 twice, then 200
	defer server.Close()
	var policy retry.Policy
	policy.UnmarshalText([]byte("no wait, 3 retries"))
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		fmt.Println("send, after", httpretry.Resend(req.Context()), "before it")
		return http.DefaultTransport.RoundTrip(req)
	})
	resp, err := (&http.Client{Transport: &httpretry.Transport{Base: base, Policy: policy}}).Get(server.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output:
	// send, after 0 before it
	// send, after 1 before it
	// send, after 2 before it
	// 200 OK
}

// CloseIdleConnections reaches the Base's idle connections, as
// http.Client.CloseIdleConnections does through the Transport.
func ExampleTransport_CloseIdleConnections() {
	server := flaky()
	defer server.Close()
	base := &http.Transport{}
	client := &http.Client{Transport: &httpretry.Transport{Base: base}}
	resp, err := client.Get(server.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	client.CloseIdleConnections() // calls the Transport's, which calls base's
	fmt.Println(resp.Status)
	// Output:
	// 200 OK
}

// A named client counts each call by what it returned: a 404 is an
// answer, so a success at once by kind (resilience4j's), and a 4xx by
// status class.
func ExampleTransport_status() {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
		}
	}))
	defer server.Close()
	table := retry.NewTable()
	client := &http.Client{Transport: &httpretry.Transport{Policy: retry.Policy{Name: "api", Table: table}}}
	for _, path := range []string{"/", "/missing"} {
		resp, err := client.Get(server.URL + path)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
	}
	c := table.Of("api")
	fmt.Println("successful_without_retry:", c.SucceededAtOnce)
	fmt.Printf("%+v\n", c.Status)
	// Output:
	// successful_without_retry: 2
	// {S2xx:1 S3xx:0 S4xx:1 S5xx:0 NoResponse:0}
}
