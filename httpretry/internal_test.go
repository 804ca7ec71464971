package httpretry

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

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

// TestHedgeFixedDelayKeepsNoEstimate: a Hedge with a fixed Delay, however
// short, never reads an estimate, and so gathers none: its table of hosts
// holds their allowances of hedges, and no latency.
func TestHedgeFixedDelayKeepsNoEstimate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
		})
		for _, delay := range []time.Duration{1, time.Millisecond} {
			h := &Hedge{Delay: delay}
			tr := &Transport{Base: base, Hedge: h}
			req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
			for range 10 {
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			if v := h.hosts.m[hostKey{"http", "api.example", "80"}]; v == nil || v.lat.total != 0 {
				t.Errorf("a Hedge with a fixed Delay of %v: the host's entry %v; want one, with no latency", delay, v)
			}
		}
		h := &Hedge{}
		tr := &Transport{Base: base, Hedge: h}
		req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
		resp, _ := tr.RoundTrip(req)
		resp.Body.Close()
		if n := len(h.hosts.m); n != 1 {
			t.Errorf("an adaptive Hedge keeps the latency of %d hosts after one request, want 1", n)
		}
	})
}

// TestHedgeLoserCountsAsLong: a copy that lost to a hedge after the hedge
// delay (here exactly the delay: the hedge answers at once) goes to the
// host's estimate as cut off, known only to be long; the winner's time
// goes in as it was.
func TestHedgeLoserCountsAsLong(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hang atomic.Bool
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if hang.CompareAndSwap(true, false) { // the first copy of the slow request
				<-req.Context().Done()
				return nil, req.Context().Err()
			}
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
		})
		h := &Hedge{}
		tr := &Transport{Base: base, Hedge: h}
		get := func() {
			req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		for range 300 { // every answer at once, in virtual time: an estimate of 1ns
			get()
		}
		l := &h.hosts.m[hostKey{"http", "api.example", "80"}].lat
		if d := l.estimate(); d != 1 {
			t.Fatalf("after 300 answers at once: estimate %v, want 1ns", d)
		}
		l.mu.Lock()
		cut, zero := sum(l.cut[:]), l.counts[0]
		l.mu.Unlock()
		hang.Store(true)
		get()
		synctest.Wait()
		l.mu.Lock()
		defer l.mu.Unlock()
		if sum(l.cut[:]) <= cut || l.counts[0] <= zero {
			t.Fatalf("a hedged request: cut-off weight %v (was %v), weight at 0ns %v (was %v); want the loser counted as cut off, the winner at 0ns",
				sum(l.cut[:]), cut, l.counts[0], zero)
		}
		if cut != 0 || sum(l.cut[:]) != l.weight {
			t.Fatalf("a hedged request: cut-off weight %v (was %v), the last sample's %v; want the loser counted once, as the last sample, when it was cancelled",
				sum(l.cut[:]), cut, l.weight)
		}
	})
}

func sum(xs []float32) (s float32) {
	for _, x := range xs {
		s += x
	}
	return s
}

// TestHedgeFailuresTellNoLatency: a copy that fails without headers, and
// before any hedge delay, tells nothing of the host's latency: an adaptive
// Hedge counts none of them.
func TestHedgeFailuresTellNoLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reset := errors.New("connection reset by peer")
		base := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, reset })
		h := &Hedge{}
		p := retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, Multiplier: 1, JitterMode: backoff.JitterNone}, MaxRetries: 2}, Budget: NoBudget()}
		tr := &Transport{Base: base, Policy: p, Hedge: h}
		for range 5 {
			req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
			if _, err := tr.RoundTrip(req); !errors.Is(err, reset) {
				t.Fatalf("%v, want the reset", err)
			}
		}
		l := &h.hosts.m[hostKey{"http", "api.example", "80"}].lat
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.total != 0 {
			t.Fatalf("15 copies that failed at once without headers: %v of weight counted, want none", l.total)
		}
	})
}

// TestStepAfterDecided: a hedge timer that fires in the instant its
// flight is decided (its Stop came too late, and the tick waits on the
// lock) finds the flight over and sends nothing, though a hedge was due.
// The race is between two goroutines woken in one instant, which no
// bubble orders, so the state it leaves is built here.
func TestStepAfterDecided(t *testing.T) {
	var sent atomic.Int32
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent.Add(1)
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
	})
	tr := &Transport{Base: base, Hedge: &Hedge{Delay: time.Millisecond}}
	req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	f := &flight{rt: request{t: tr, base: base, req: req}, ctx: req.Context(), delay: time.Millisecond,
		timer: timer, next: time.Now(), over: true}
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("step on a decided flight panicked: %v", p)
		}
	}()
	if hedge := f.step(); hedge != nil || len(f.more) != 0 || sent.Load() != 0 {
		t.Fatalf("step on a decided flight: hedge %v, %d hedges launched, %d sent; want none", hedge != nil, len(f.more), sent.Load())
	}
}

// TestBudgetsKept1024: the Transport keeps 1,024 hosts' budgets, as its
// doc says, and forgets only to make room for the 1,025th.
func TestBudgetsKept1024(t *testing.T) {
	ok := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
	})
	tr := &Transport{Base: ok}
	get := func(i int) {
		req, _ := http.NewRequest(http.MethodGet, "http://h"+strconv.Itoa(i)+".example/", nil)
		if resp, err := tr.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
	}
	for i := range 1024 {
		get(i)
	}
	if n := len(tr.budgets.m); n != 1024 {
		t.Fatalf("after 1,024 hosts: %d budgets kept, want 1,024", n)
	}
	get(1024)
	if n := len(tr.budgets.m); n > 1024 {
		t.Fatalf("after 1,025 hosts: %d budgets kept, want at most 1,024", n)
	}
}

// TestKeyOfNotUTF8: a host that is not valid UTF-8 keeps its stray bytes
// in its key, and has its ASCII letters lowered, every one, as a valid
// name has: "\xffA.EXAMPLEZ" and "\xffa.examplez" are one host, and
// "\xfea.examplez" another.
func TestKeyOfNotUTF8(t *testing.T) {
	key := func(host string) hostKey { return keyOf(&url.URL{Scheme: "HTTP", Host: host}) }
	if got, want := key("\xffA.EXAMPLEZ"), (hostKey{"http", "\xffa.examplez", "80"}); got != want {
		t.Fatalf("keyOf(%q) = %q, want %q", "\xffA.EXAMPLEZ", got, want)
	}
	if key("\xffA.EXAMPLEZ") != key("\xffa.examplez") || key("\xfea.examplez") == key("\xffa.examplez") {
		t.Fatal("hosts not valid UTF-8: those that differ only in case must share a key, and no others")
	}
}

// FuzzLower: lower keeps two hosts apart unless they differ only in the
// case of letters (ASCII letters, for a name not valid UTF-8), and is
// strings.ToLower for valid UTF-8.
func FuzzLower(f *testing.F) {
	f.Add("api.example", "API.example")
	f.Add("\xffA.example", "\xfea.example")
	f.Fuzz(func(t *testing.T, a, b string) {
		la, lb := lower(a), lower(b)
		if utf8.ValidString(a) && la != strings.ToLower(a) {
			t.Fatalf("lower(%q) = %q, want strings.ToLower's %q", a, la, strings.ToLower(a))
		}
		if !utf8.ValidString(a) && (len(la) != len(a) || lower(la) != la) {
			t.Fatalf("lower(%q) = %q: a name not UTF-8 keeps its bytes, lowered once for all", a, la)
		}
		if !utf8.ValidString(a) && !utf8.ValidString(b) && (la == lb) != (asciiFold(a) == asciiFold(b)) {
			t.Fatalf("lower(%q) = %q, lower(%q) = %q: one key iff they differ in ASCII case only", a, la, b, lb)
		}
	})
}

// asciiFold lowers s's ASCII letters only.
func asciiFold(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
