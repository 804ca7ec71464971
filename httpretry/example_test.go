package httpretry_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// flaky answers 503, then 429 with "Retry-After: 2", then 200 "hello".
func flaky() *httptest.Server {
	var calls atomic.Int32
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, "slow down")
		default:
			fmt.Fprint(w, "hello")
		}
	}))
}

// A client against a server that answers 503, then 429 with
// "Retry-After: 2", then 200. The 503 waits the curve's first wait; the
// 429's two seconds are widened to between 2s and 3s, so that clients told
// the same thing do not come back together.
//
// It runs in a testing/synctest bubble, so the waits are virtual and the
// example takes no time; Rand is seeded only to fix the waits printed here,
// and DisableKeepAlives only lets the bubble's clock run between requests.
// A client of your own needs none of the three.
func ExampleTransport() {
	server := flaky()
	defer server.Close()
	runTest("ExampleTransport", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			client := &http.Client{Transport: &httpretry.Transport{
				Base: &http.Transport{DisableKeepAlives: true},
				Policy: retry.Policy{
					Schedule: backoff.Schedule{Rand: rand.New(rand.NewPCG(1, 2))},
					OnRetry: func(e retry.Event) {
						fmt.Printf("%v: waiting %v\n", e.Err, e.Wait.Round(time.Millisecond))
					},
				},
			}}
			start := time.Now()
			resp, err := client.Get(server.URL)
			if err != nil {
				fmt.Println(err)
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			fmt.Println(resp.Status, string(body), "after", time.Since(start).Round(time.Millisecond))
		})
	})
	// Output:
	// 503 Service Unavailable: waiting 154ms
	// 429 Too Many Requests: waiting 2.616s
	// 200 OK hello after 2.77s
}

// The same server under a deadline of 1.5s: after the 503's short wait the
// 429 asks for at least 2s, which cannot fit, so the client returns the 429
// at once, readable, as a client without retries would have, instead of
// sleeping into the deadline.
func ExampleTransport_deadline() {
	server := flaky()
	defer server.Close()
	runTest("ExampleTransport_deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			client := &http.Client{Transport: &httpretry.Transport{
				Base:   &http.Transport{DisableKeepAlives: true},
				Policy: retry.Policy{Schedule: backoff.Schedule{Rand: rand.New(rand.NewPCG(1, 2))}},
			}}
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, server.URL, nil)
			start := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				fmt.Println(err)
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			fmt.Println(resp.Status, resp.Header.Get("Retry-After"), string(body))
			fmt.Println("after", time.Since(start).Round(time.Millisecond), "with the deadline still ahead:", ctx.Err() == nil)
		})
	})
	// Output:
	// 429 Too Many Requests 2 slow down
	// after 154ms with the deadline still ahead: true
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

// runTest runs f once as a test named name, with -test.v off so that the
// test's own framing lines stay out of the example's output (and -test.count
// at 1, since the example itself is what -count repeats), and reports whether
// it passed: an Example has no *testing.T to hand to synctest.Test.
func runTest(name string, f func(*testing.T)) bool {
	for flagName, value := range map[string]string{"test.v": "false", "test.count": "1"} {
		fv := flag.Lookup(flagName).Value
		old := fv.String()
		fv.Set(value)
		defer fv.Set(old)
	}
	return testing.RunTests(regexp.MatchString, []testing.InternalTest{{Name: name, F: f}})
}
