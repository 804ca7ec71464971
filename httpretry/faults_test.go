package httpretry_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// The faults an outside review proved in the first hedging (the issue
// "The tail, measured outside the project"): each test failed on it.

// TestHedgeWinnerNotHeldByALoser: a hedge that answers is returned at
// once, though Base takes a second to return the cancelled first copy
// (the first copy once ran in the caller's goroutine, and RoundTrip took
// 1s where the hedge answered at 250ms).
func TestHedgeWinnerNotHeldByALoser(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSlow(func(n int) answer {
			if n == 1 {
				return answer{wait: time.Second, deaf: true, body: "first"}
			}
			return answer{wait: 50 * time.Millisecond, body: "hedge"}
		})
		tr := &httpretry.Transport{Base: base, Hedge: &httpretry.Hedge{Delay: 200 * time.Millisecond}}
		start := time.Now()
		resp, err := get(t, context.Background(), tr)
		if err != nil || time.Since(start) != 250*time.Millisecond || readAll(t, resp) != "hedge" {
			t.Fatalf("%v, %v after %v; want the hedge's answer at 250ms", resp, err, time.Since(start))
		}
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		if !base.released() {
			t.Fatalf("the deaf first copy's context was not released")
		}
	})
}

// TestHedgeCallbackHoldsNoOtherCopy: a copy's slow Retryable (500ms on
// its 503) holds neither the copy that answers nor its timeout: the first
// copy's 200, at 95ms, comes back at 95ms, though its AttemptTimeout of
// 100ms passed while the hedge's Retryable ran (once it ran under the
// flight's lock: the winner waited for it, and the timer, reading the
// clock once it had the lock, cut the answer as timed out).
func TestHedgeCallbackHoldsNoOtherCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSlow(func(n int) answer {
			if n == 1 {
				return answer{wait: 95 * time.Millisecond, body: "first"}
			}
			return answer{wait: 30 * time.Millisecond, status: http.StatusServiceUnavailable} // at 90ms
		})
		tr := &httpretry.Transport{Base: base, AttemptTimeout: 100 * time.Millisecond, Hedge: &httpretry.Hedge{Delay: 60 * time.Millisecond},
			Retryable: func(resp *http.Response, err error) bool {
				if resp != nil && resp.StatusCode == http.StatusServiceUnavailable {
					time.Sleep(500 * time.Millisecond)
				}
				return httpretry.DefaultRetryable(resp, err)
			}}
		tr.Policy.Name = unique("httpretry-test-callback")
		start := time.Now()
		resp, err := get(t, context.Background(), tr)
		if err != nil || time.Since(start) != 95*time.Millisecond || readAll(t, resp) != "first" {
			t.Fatalf("%v, %v after %v; want the first copy's answer at 95ms", resp, err, time.Since(start))
		}
		synctest.Wait()
		time.Sleep(time.Second)
		if c := statsOf(tr.Policy.Name, "api.example:80"); c.AttemptTimeouts != 0 {
			t.Fatalf("%d attempt timeouts counted, want none: the answer came in time", c.AttemptTimeouts)
		}
	})
}

// TestHedgeGetBodyHoldsNoOtherCopy: a hedge's slow GetBody (500ms) holds
// no copy that answers: the first copy's answer at 150ms comes back then.
func TestHedgeGetBodyHoldsNoOtherCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSlow(func(n int) answer { return answer{wait: 150 * time.Millisecond, body: "first"} })
		tr := &httpretry.Transport{Base: base, Hedge: &httpretry.Hedge{Delay: 50 * time.Millisecond}}
		req, _ := http.NewRequest(http.MethodPut, "http://api.example/doc", strings.NewReader("v"))
		req.GetBody = func() (io.ReadCloser, error) {
			time.Sleep(500 * time.Millisecond)
			return io.NopCloser(strings.NewReader("v")), nil
		}
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		if err != nil || time.Since(start) != 150*time.Millisecond || readAll(t, resp) != "first" {
			t.Fatalf("%v, %v after %v; want the first copy's answer at 150ms", resp, err, time.Since(start))
		}
		synctest.Wait()
		time.Sleep(time.Second)
		if base.requests() != 1 {
			t.Fatalf("%d requests; want the hedge whose body came after the answer never sent", base.requests())
		}
	})
}

// TestPolicyRetryableAskedOnce: a hedged attempt's 503 is put to
// Policy.Retryable once, however the attempt ends (it was asked twice
// when no hedge could follow it: by the hedging shortcut, and by
// retry.Do).
func TestPolicyRetryableAskedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newServer(s503)
		var asked atomic.Int64
		p := constant(time.Second, 3)
		p.Budget = &retry.Budget{Burst: -1, Ratio: -1} // no retry, and so no hedge
		p.Retryable = func(error) bool { asked.Add(1); return true }
		tr := &httpretry.Transport{Base: base, Policy: p, AttemptTimeout: time.Second, Hedge: &httpretry.Hedge{Delay: 50 * time.Millisecond}}
		resp, err := get(t, context.Background(), tr)
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || asked.Load() != 1 {
			t.Fatalf("%v, %v; Policy.Retryable asked %d times about one 503, want once, and the 503 back", resp, err, asked.Load())
		}
		readAll(t, resp)
	})
}

// TestSpentBudgetNeverForgotten: a host that fails every request keeps
// its spent budget however many other hosts come and go: cycling 1,100
// healthy hosts between its requests, four times, brings its retries back
// never (the table once forgot it at random, and gave it a fresh Burst 3
// or 4 times in 4 cycles).
func TestSpentBudgetNeverForgotten(t *testing.T) {
	var down atomic.Int64
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		status := http.StatusOK
		if req.URL.Host == "down.example" {
			down.Add(1)
			status = http.StatusServiceUnavailable
		}
		return &http.Response{StatusCode: status, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	})
	synctest.Test(t, func(t *testing.T) {
		tr := &httpretry.Transport{Base: base, Policy: constant(-1, 5)}
		getURL(t, tr, "http://down.example/").Body.Close()
		getURL(t, tr, "http://down.example/").Body.Close() // its 10 retries spent
		first := down.Load()
		for cycle := range 4 {
			for i := range 1100 {
				getURL(t, tr, "http://up"+strconv.Itoa(i)+".example/").Body.Close()
				time.Sleep(10 * time.Millisecond) // the new budgets' Burst fades as a client's would
			}
			time.Sleep(time.Minute)
			before := down.Load()
			getURL(t, tr, "http://down.example/").Body.Close()
			if got := down.Load() - before; got != 1 {
				t.Fatalf("cycle %d: %d requests to the failing host, want 1: its spent budget was forgotten", cycle+1, got)
			}
		}
		if first != 12 {
			t.Fatalf("%d requests to the failing host before the cycles, want 12 (2 calls and the 10 retries of a new budget)", first)
		}
	})
}
