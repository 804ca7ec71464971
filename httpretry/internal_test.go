package httpretry

import (
	"bytes"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/retry"
)

// TestRequestHandlerDerived: a logger derived from the request's, with With
// or WithGroup, still names the method and the URL.
func TestRequestHandlerDerived(t *testing.T) {
	var buf bytes.Buffer
	req, _ := http.NewRequest(http.MethodDelete, "http://bob:pw@api.example/x", nil)
	l := slog.New(&requestHandler{slog.NewTextHandler(&buf, nil), req})
	l.With("k", "v").WithGroup("g").Info("hello", "n", 1)
	if got := buf.String(); !strings.Contains(got, "k=v") || !strings.Contains(got, "g.n=1") ||
		!strings.Contains(got, "g.method=DELETE") || !strings.Contains(got, "g.url=http://bob:xxxxx@api.example/x") {
		t.Fatalf("derived logger wrote %q", got)
	}
}

// TestBudgetsBounded: a client that reaches 100,000 hosts, a hundred times
// the bound, keeps at most maxHosts budgets, whether the hosts succeed
// (their budgets are full, the same as new ones, and go first) or fail
// (theirs go at random): the bound holds at every request, however many
// hosts follow.
func TestBudgetsBounded(t *testing.T) {
	const n = 100_000
	for _, status := range []int{http.StatusOK, http.StatusServiceUnavailable} {
		ok := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: status, Body: http.NoBody, Request: req}, nil
		})
		tr := &Transport{Base: ok, Policy: retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: 1}}}
		req, _ := http.NewRequest(http.MethodGet, "http://host/", nil)
		for i := range n {
			req.URL.Host = "h" + strconv.Itoa(i)
			tr.RoundTrip(req)
			if len(tr.budgets.m) > maxHosts {
				t.Fatalf("status %d: %d budgets after %d hosts, want at most %d", status, len(tr.budgets.m), i+1, maxHosts)
			}
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestBudgetsForgetFullFirst: making room forgets the hosts whose budgets
// are full, and keeps an exhausted one while they suffice.
func TestBudgetsForgetFullFirst(t *testing.T) {
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		status := http.StatusOK
		if req.URL.Host == "down" {
			status = http.StatusServiceUnavailable
		}
		return &http.Response{StatusCode: status, Body: http.NoBody, Request: req}, nil
	})
	tr := &Transport{Base: base, Policy: retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: 1}}}
	req, _ := http.NewRequest(http.MethodGet, "http://down/", nil)
	tr.RoundTrip(req)
	down := tr.budgets.m[hostKey{"http", "down", "80"}]
	if down == nil || down.Tokens() != 9 {
		t.Fatalf("a host that is down: budget %v, want one, with 9 retries left", down)
	}
	for i := range 5 * maxHosts {
		req.URL.Host = "up" + strconv.Itoa(i)
		tr.RoundTrip(req)
	}
	if tr.budgets.m[hostKey{"http", "down", "80"}] != down || len(tr.budgets.m) > maxHosts {
		t.Fatalf("after %d hosts that succeed: the spent budget forgotten (%d kept), want it kept while full ones can go", 5*maxHosts, len(tr.budgets.m))
	}
}
