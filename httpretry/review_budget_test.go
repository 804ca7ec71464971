package httpretry_test

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff/httpretry"
)

// TestSpentBudgetForgottenOnceFaded: a host that fails every request,
// asked once, spends 5 of its Burst and holds 5; its room then fades to 1
// and its held 5 are clamped to 1, so retry.Budget.Full reports true,
// though it has earned back none of the 5 retries it spent ("every retry
// they allowed given back or earned again" is false). The Transport then
// forgets it when 1,100 other hosts come, and its next request finds a
// fresh Burst of 10: over four cycles it gets 5 retries a request, 25 in
// all, where the doc says "never one that is not [full], so that no host
// that fails every request gets a fresh Burst by being forgotten", and
// the SPEC "a host that fails every request gets 10 retries from a
// client, then none until its requests succeed again".
func TestSpentBudgetForgottenOnceFaded(t *testing.T) {
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
		getURL(t, tr, "http://down.example/").Body.Close() // 1 + 5 retries
		requests := int64(1)
		for cycle := range 4 {
			time.Sleep(time.Minute)
			for i := range 1100 {
				getURL(t, tr, "http://up"+strconv.Itoa(cycle)+"-"+strconv.Itoa(i)+".example/").Body.Close()
			}
			getURL(t, tr, "http://down.example/").Body.Close()
			requests++
		}
		if retries := down.Load() - requests; retries > 10 {
			t.Fatalf("a host failing every request, asked %d times between other hosts: %d retries, want at most 10 (its Burst), then none", requests, retries)
		}
	})
}
