package httpretry_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff/httpretry"
)

// review2Hosts answers 503 to every request to a host named "d<n>.example"
// or "x.example", and to the first request to "y.example"; anything
// else, and the hosts in up, 200. It counts the requests to each host.
type review2Hosts struct {
	mu   sync.Mutex
	n    map[string]int
	up   map[string]bool
	fail func(host string, n int) bool
}

func (h *review2Hosts) RoundTrip(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	host := req.URL.Host
	h.n[host]++
	fail := h.fail(host, h.n[host]) && !h.up[host]
	h.mu.Unlock()
	code := http.StatusOK
	if fail {
		code = http.StatusServiceUnavailable
	}
	return &http.Response{StatusCode: code, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

func (h *review2Hosts) count(host string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[host]
}

func review2Fail(host string, n int) bool {
	switch {
	case strings.HasPrefix(host, "d"), host == "x.example":
		return true
	case host == "y.example":
		return n == 1
	}
	return false
}

// pinTable sends one request, with one retry, to each of 1,024 hosts
// that fail it: each Budget has spent one retry it never earns back (the
// hosts never come back), so that, with Full's new meaning, none is ever
// spare again, however long they are idle.
func review2PinTable(t *testing.T, tr http.RoundTripper) {
	for i := range 1024 {
		getURL(t, tr, "http://d"+strconv.Itoa(i)+".example/").Body.Close()
	}
}

// TestHostsIdleForgiven: a client meets 1,024 hosts that each fail once
// (one retry spent, never earned back: they are never asked again) and
// then idles 10 minutes; their Budgets, unasked for 5 minutes, are full
// (retry.Budget.Full), so the table has room, and y.example, whose one
// 503 its own Budget retries, gets its 200, though x.example, failing
// every request, came first and spent its own (SPEC: "a failing host
// cannot spend another host's retries"). When "full" meant only "owes
// nothing", the table stayed full for ever and both shared one Budget.
func TestHostsIdleForgiven(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &review2Hosts{fail: review2Fail}
		tr := &httpretry.Transport{Base: base, Policy: constant(-1, 1)}
		review2PinTable(t, tr)
		time.Sleep(10 * time.Minute) // every Budget's room long faded; none asked again
		for range 20 {
			getURL(t, tr, "http://x.example/").Body.Close()
		}
		resp := getURL(t, tr, "http://y.example/")
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("y.example, one 503 then 200, after x.example failed 20 requests (%d sent): got %d after %d send(s); want its 503 retried from a budget of its own (200): x.example spent y.example's retries", base.count("x.example"), resp.StatusCode, base.count("y.example"))
		}
	})
}

// TestHostsOverflowNoFreshBurst: a failing host that spent the shared
// Budget of the hosts past a full table gets no fresh Burst when room is
// found for it (it gets one with none). The contract: doc.go, "a host that fails every
// request gets the retries this Transport had saved for it (at most a
// tenth of its recent successes, or 10), then none until its requests
// succeed again" and "no host that fails every request gets a fresh
// Burst"; SPEC, "a host that fails every request gets 10 retries from a
// client, then none until its requests succeed again". With the table
// pinned, x.example, failing every request, spends the shared Budget's 10
// retries; one pinned host then comes back and earns its retry back (it
// is Full, spare); at the next search of the table, x.example, still
// failing every request, takes its place with a fresh Burst: 10 retries
// more.
func TestHostsOverflowNoFreshBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &review2Hosts{fail: review2Fail, up: map[string]bool{}}
		tr := &httpretry.Transport{Base: base, Policy: constant(-1, 1)}
		review2PinTable(t, tr)
		requests := 0
		for range 20 { // the shared Budget's 10 retries, then none
			getURL(t, tr, "http://x.example/").Body.Close()
			requests++
		}
		base.mu.Lock()
		base.up["d0.example"] = true
		base.mu.Unlock()
		for range 5 { // 5 × 0.2: its one retry earned back, it owes nothing
			getURL(t, tr, "http://d0.example/").Body.Close()
		}
		for range 1100 { // past 1,024 lookups the table is searched again
			getURL(t, tr, "http://x.example/").Body.Close()
			requests++
		}
		if retries := base.count("x.example") - requests; retries > 10 {
			t.Fatalf("x.example failed all %d requests: %d retries; want at most 10, then none until its requests succeed", requests, retries)
		}
	})
}
