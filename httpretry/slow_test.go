package httpretry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
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

// The slow dependency (SPEC-retry.md, "httpretry: a slow dependency"), in
// virtual time, against an in-memory Base whose requests take the time a
// script gives them.

// answer is how the slow server answers one request: after wait, a status
// (hang: never, until the request's context ends).
type answer struct {
	wait   time.Duration
	status int
	hang   bool
	body   string
	deaf   bool // answers after wait even when the request's context ends
}

// slow is an in-memory Base: its n-th request (from 1) is answered as
// script(n) says, and it records every request's context, to see that it
// was released.
type slow struct {
	script func(n int) answer
	mu     sync.Mutex
	n      int
	ctxs   []context.Context
	at     []time.Duration
	bodies []*body
	t0     time.Time
}

func newSlow(script func(n int) answer) *slow { return &slow{script: script, t0: time.Now()} }

func (s *slow) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path == "/warm" { // earnHedges's: at once, and not counted
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	}
	s.mu.Lock()
	s.n++
	n := s.n
	s.ctxs = append(s.ctxs, req.Context())
	s.at = append(s.at, time.Since(s.t0))
	s.mu.Unlock()
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	a := s.script(n)
	if a.hang {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	timer := time.NewTimer(a.wait)
	defer timer.Stop()
	if !a.deaf {
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-timer.C:
		}
	} else {
		<-timer.C
	}
	if a.status == 0 {
		a.status = http.StatusOK
	}
	b := &body{r: strings.NewReader(a.body)}
	s.mu.Lock()
	s.bodies = append(s.bodies, b)
	s.mu.Unlock()
	return &http.Response{StatusCode: a.status, Status: fmt.Sprintf("%d %s", a.status, http.StatusText(a.status)),
		Header: http.Header{}, Body: b, Request: req}, nil
}

// earnHedges sends rt 10 requests to /warm for each of n hedges: a slow
// Base answers them at once, before any hedge delay, and each earns the
// host's allowance a tenth of a hedge (a new host holds one).
func earnHedges(t *testing.T, rt http.RoundTripper, n int) {
	t.Helper()
	for range 10 * n {
		resp := getURL(t, rt, "http://api.example/warm")
		resp.Body.Close()
	}
}

func (s *slow) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// released reports whether every request's context has ended.
func (s *slow) released() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ctx := range s.ctxs {
		if ctx.Err() == nil {
			return false
		}
	}
	return true
}

// TestAttemptTimeoutRetriesAHang: a request that never gets its headers
// is cancelled at AttemptTimeout; the failure matches ErrAttemptTimeout,
// is a net.Error that timed out, and is retried.
func TestAttemptTimeoutRetriesAHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSlow(func(n int) answer { return answer{hang: n == 1, wait: 5 * time.Millisecond, body: "ok"} })
		var seen []error
		p := constant(time.Second, 3)
		p.OnRetry = func(e retry.Event) { seen = append(seen, e.Err) }
		tr := &httpretry.Transport{Base: base, Policy: p, AttemptTimeout: 250 * time.Millisecond}
		start := time.Now()
		resp, err := get(t, context.Background(), tr)
		if err != nil || resp.StatusCode != 200 || time.Since(start) != 1255*time.Millisecond {
			t.Fatalf("a hang, then a 200: %v, %v after %v; want the 200 after 250ms, the 1s wait and 5ms", resp, err, time.Since(start))
		}
		var ne net.Error
		if len(seen) != 1 || !errors.Is(seen[0], httpretry.ErrAttemptTimeout) || !errors.As(seen[0], &ne) || !ne.Timeout() {
			t.Fatalf("OnRetry saw %v; want one error matching ErrAttemptTimeout, a net.Error that timed out", seen)
		}
		if got := readAll(t, resp); got != "ok" || !base.released() {
			t.Fatalf("body %q, contexts released %v; want ok, and every context released after Close", got, base.released())
		}
	})
}

// TestAttemptTimeoutNeverCutsTheBody: a response whose headers came in
// time has a body that streams for ten times the timeout, read whole; its
// context ends only once the body is read to its end.
func TestAttemptTimeoutNeverCutsTheBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reqCtx context.Context
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			reqCtx = req.Context()
			pr, pw := io.Pipe()
			go func() {
				for i := range 25 {
					select {
					case <-req.Context().Done():
						pw.CloseWithError(req.Context().Err())
						return
					case <-time.After(100 * time.Millisecond):
					}
					fmt.Fprintf(pw, "chunk %d\n", i)
				}
				pw.Close()
			}()
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: pr}, nil
		})
		tr := &httpretry.Transport{Base: base, AttemptTimeout: 250 * time.Millisecond}
		resp, err := get(t, context.Background(), tr)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil || strings.Count(string(b), "chunk") != 25 {
			t.Fatalf("a body streaming 2.5s under a 250ms AttemptTimeout: %d chunks, %v; want all 25", strings.Count(string(b), "chunk"), err)
		}
		if reqCtx.Err() == nil {
			t.Fatalf("the request's context is live after its body was read to the end")
		}
		resp.Body.Close()
	})
}

// TestAttemptTimeoutBoundsTheDial: a real http.Transport whose dial never
// finishes is bounded by AttemptTimeout too, each attempt.
func TestAttemptTimeoutBoundsTheDial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dials atomic.Int64
		base := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			dials.Add(1)
			<-ctx.Done()
			return nil, ctx.Err()
		}}
		defer base.CloseIdleConnections()
		tr := &httpretry.Transport{Base: base, Policy: constant(time.Second, 2), AttemptTimeout: 100 * time.Millisecond}
		tr.Policy.Budget = httpretry.NoBudget()
		start := time.Now()
		_, err := get(t, context.Background(), tr)
		if !errors.Is(err, httpretry.ErrAttemptTimeout) || dials.Load() != 3 || time.Since(start) != 2300*time.Millisecond {
			t.Fatalf("a dial that never finishes: %v after %d dials in %v; want ErrAttemptTimeout after 3 in 2.3s", err, dials.Load(), time.Since(start))
		}
	})
}

// TestAttemptTimeoutLeavesNothing: after RoundTrip and Close, for an
// answer, a retried hang and a request sent once, every request's context
// is released, no goroutine is left, and no timer fires later.
func TestAttemptTimeoutLeavesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before := runtime.NumGoroutine()
		base := newSlow(func(n int) answer { return answer{hang: n%2 == 1, wait: time.Millisecond} })
		tr := &httpretry.Transport{Base: base, Policy: constant(time.Second, 3), AttemptTimeout: 50 * time.Millisecond,
			Hedge: &httpretry.Hedge{Delay: 10 * time.Millisecond, Max: -1}}
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			req, _ := http.NewRequest(method, "http://api.example/", nil)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				readAll(t, resp)
			}
		}
		synctest.Wait()
		n := base.requests()
		time.Sleep(time.Minute) // virtual: any timer left would fire now
		synctest.Wait()
		if !base.released() || runtime.NumGoroutine() != before || base.requests() != n {
			t.Fatalf("after the requests: contexts released %v, %d goroutines (%d before), %d requests then %d; want all released, none left, none later",
				base.released(), runtime.NumGoroutine(), before, n, base.requests())
		}
	})
}

// TestHedgeWins: a first copy without headers for the delay gets a hedge;
// the first answer wins, at once, and the other copy is cancelled.
func TestHedgeWins(t *testing.T) {
	for _, tt := range []struct {
		name      string
		first     answer
		hedge     answer
		took      time.Duration
		requests  int
		winnerIdx int
	}{
		{"the hedge wins", answer{wait: time.Second, body: "first"}, answer{wait: 5 * time.Millisecond, body: "hedge"}, 55 * time.Millisecond, 2, 1},
		{"the first wins after the hedge is sent", answer{wait: 70 * time.Millisecond, body: "first"}, answer{wait: time.Second, body: "hedge"}, 70 * time.Millisecond, 2, 0},
		{"the first answers before the delay", answer{wait: 30 * time.Millisecond, body: "first"}, answer{}, 30 * time.Millisecond, 1, 0},
		{"a hedge failing retryably leaves the first to win", answer{wait: 200 * time.Millisecond, body: "first"}, answer{wait: 10 * time.Millisecond, status: 503}, 200 * time.Millisecond, 2, 0},
		{"a first failing retryably leaves the hedge to win", answer{wait: 60 * time.Millisecond, status: 503}, answer{wait: 40 * time.Millisecond, body: "hedge"}, 90 * time.Millisecond, 2, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := newSlow(func(n int) answer {
					if n == 1 {
						return tt.first
					}
					return tt.hedge
				})
				tr := &httpretry.Transport{Base: base, Policy: constant(time.Second, 3), Hedge: &httpretry.Hedge{Delay: 50 * time.Millisecond}}
				start := time.Now()
				resp, err := get(t, context.Background(), tr)
				took := time.Since(start)
				if err != nil || resp.StatusCode != 200 || took != tt.took {
					t.Fatalf("%v, %v after %v; want a 200 after %v", resp, err, took, tt.took)
				}
				want := []string{"first", "hedge"}[tt.winnerIdx]
				if got := readAll(t, resp); got != want {
					t.Fatalf("the answer is %q, want %q's", got, want)
				}
				synctest.Wait()
				if base.requests() != tt.requests || !base.released() {
					t.Fatalf("%d requests, contexts released %v; want %d, every loser cancelled", base.requests(), base.released(), tt.requests)
				}
			})
		})
	}
}

// TestHedgeLoserBodyClosed: a copy that answers after losing, from a Base
// deaf to its context, has its body closed.
func TestHedgeLoserBodyClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSlow(func(n int) answer {
			if n == 1 {
				return answer{wait: 100 * time.Millisecond, deaf: true, body: "late"}
			}
			return answer{wait: 5 * time.Millisecond, body: "hedge"}
		})
		tr := &httpretry.Transport{Base: base, Hedge: &httpretry.Hedge{Delay: 20 * time.Millisecond}}
		resp, err := get(t, context.Background(), tr)
		if err != nil || readAll(t, resp) != "hedge" {
			t.Fatalf("%v, %v; want the hedge's answer", resp, err)
		}
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		if len(base.bodies) != 2 || !base.bodies[1].closed {
			t.Fatalf("the late first copy's body: %d bodies, closed %v; want it closed", len(base.bodies), len(base.bodies) == 2 && base.bodies[1].closed)
		}
	})
}

// TestHedgeEveryCopyFails: when every copy of an attempt fails, the
// attempt fails with the outcome of the copy that failed last, and
// retry.Do's rules decide the retry; Error.Attempts counts attempts, not
// copies.
func TestHedgeEveryCopyFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSlow(func(n int) answer {
			switch n {
			case 1:
				return answer{wait: 100 * time.Millisecond, status: 503, body: "first"}
			case 2:
				return answer{wait: 70 * time.Millisecond, status: 502, body: "hedge"}
			}
			return answer{wait: time.Millisecond, status: 500}
		})
		var attempts []int
		p := constant(time.Second, 1)
		p.Budget = httpretry.NoBudget() // the budget is TestHedgeSpendsTheBudget's
		p.OnRetry = func(e retry.Event) { attempts = append(attempts, e.Attempt) }
		tr := &httpretry.Transport{Base: base, Policy: p, Hedge: &httpretry.Hedge{Delay: 50 * time.Millisecond}}
		start := time.Now()
		resp, err := get(t, context.Background(), tr)
		// The retry's 500, with no other copy in flight, ends the second
		// attempt a millisecond later, and the limit the request.
		if err != nil || resp.StatusCode != 500 || time.Since(start) != 120*time.Millisecond+time.Second+time.Millisecond {
			t.Fatalf("%v, %v after %v; want the retry's 500 after the last copy's 502 (120ms), 1s and 1ms", resp, err, time.Since(start))
		}
		readAll(t, resp)
		if fmt.Sprint(attempts) != "[1]" || base.requests() != 3 {
			t.Fatalf("OnRetry saw attempts %v after %d requests; want [1] (attempts, not copies) after 3", attempts, base.requests())
		}

		// Giving up on a transport error counts attempts too.
		base = newSlow(func(int) answer { return answer{hang: true} })
		tr = &httpretry.Transport{Base: base, Policy: p, AttemptTimeout: 80 * time.Millisecond, Hedge: &httpretry.Hedge{Delay: 50 * time.Millisecond}}
		_, err = get(t, context.Background(), tr)
		var e *retry.Error
		if !errors.As(err, &e) || e.Attempts != 2 || !errors.Is(err, httpretry.ErrAttemptTimeout) || base.requests() != 3 {
			t.Fatalf("every copy timing out: %v after %d requests; want a *retry.Error of 2 attempts, ErrAttemptTimeout, after 3 (the new host's one hedge, and no attempt answered in time to earn another)", err, base.requests())
		}
	})
}

// TestHedgeTimeoutPerCopy: AttemptTimeout runs for each copy from its own
// send.
func TestHedgeTimeoutPerCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu       sync.Mutex // the copies return from goroutines of their own
			timedOut []time.Duration
		)
		start := time.Now()
		base := newSlow(func(n int) answer { return answer{hang: true} })
		base2 := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := base.RoundTrip(req)
			mu.Lock()
			timedOut = append(timedOut, time.Since(start))
			mu.Unlock()
			return resp, err
		})
		tr := &httpretry.Transport{Base: base2, Policy: constant(time.Second, -1), AttemptTimeout: 100 * time.Millisecond,
			Hedge: &httpretry.Hedge{Delay: 30 * time.Millisecond, Max: 2}}
		tr.Policy.Schedule.MaxRetries = 0
		tr.Policy.Budget = httpretry.NoBudget()
		tr.Policy.Schedule.MaxElapsed = time.Nanosecond // no retry: a wait would pass it
		earnHedges(t, tr, 1)
		mu.Lock()
		timedOut = nil
		mu.Unlock()
		_, err := get(t, context.Background(), tr)
		if !errors.Is(err, httpretry.ErrAttemptTimeout) || fmt.Sprint(base.at) != "[0s 30ms 60ms]" {
			t.Fatalf("%v, copies sent at %v; want ErrAttemptTimeout, copies at 0, 30ms and 60ms", err, base.at)
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(timedOut) != "[100ms 130ms 160ms]" {
			t.Fatalf("copies cut at %v; want each 100ms after its own send", timedOut)
		}
	})
}

// TestHedgeMax: Max copies beyond the first, each Delay after the last.
func TestHedgeMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSlow(func(n int) answer { return answer{wait: time.Second} })
		tr := &httpretry.Transport{Base: base, Policy: retry.Policy{Budget: httpretry.NoBudget()}, Hedge: &httpretry.Hedge{Delay: 10 * time.Millisecond, Max: 3}}
		earnHedges(t, tr, 2)
		resp, err := get(t, context.Background(), tr)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if fmt.Sprint(base.at) != "[0s 10ms 20ms 30ms]" {
			t.Fatalf("copies sent at %v, want 0, 10ms, 20ms and 30ms", base.at)
		}
	})
}

// TestHedgesPricedApart: a hedge takes nothing from the budget the
// retries take from (a 503's retry never finds its retry spent on a
// hedge), but none is sent while the budget holds no whole retry (the
// host is overloaded); and the Hedge's own allowance bounds them: a new
// host holds one hedge, each attempt whose first copy answers before the
// delay earns 2 × ExtraLoad of one (a tenth, by default), up to 100, and
// a slow one earns nothing, so that once the hedges held are spent, the
// next is not until ten fast requests have come.
func TestHedgesPricedApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slowNext atomic.Bool
		base := newSlow(func(n int) answer {
			if slowNext.CompareAndSwap(true, false) {
				return answer{wait: 100 * time.Millisecond}
			}
			return answer{wait: time.Millisecond}
		})
		p := constant(time.Second, 3)
		p.Budget = &retry.Budget{Burst: 2}
		tr := &httpretry.Transport{Base: base, Policy: p, Hedge: &httpretry.Hedge{Delay: 10 * time.Millisecond}}
		fast := func(n int) {
			for range n {
				resp, _ := get(t, context.Background(), tr)
				readAll(t, resp)
			}
		}
		slowOne := func() (hedged bool) {
			before := base.requests()
			slowNext.Store(true)
			resp, err := get(t, context.Background(), tr)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			synctest.Wait()
			return base.requests()-before == 2
		}
		if !slowOne() {
			t.Fatalf("a slow request to a new host: not hedged; want the one hedge a new host holds")
		}
		if slowOne() {
			t.Fatalf("a second slow request in a row: hedged; want the allowance spent")
		}
		fast(9)
		if slowOne() {
			t.Fatalf("after 9 fast requests: hedged; want none until 10 have earned a hedge")
		}
		fast(10)
		if !slowOne() {
			t.Fatalf("after 10 more fast requests: not hedged; want the hedge they earned")
		}
		fast(2000) // earns 100 at most: the 101st slow request in a row is not hedged
		for i := range 100 {
			if !slowOne() {
				t.Fatalf("slow request %d after 2,000 fast ones: not hedged; want 100 held", i+1)
			}
		}
		if slowOne() {
			t.Fatalf("slow request 101 after 2,000 fast ones: hedged; want at most 100 held")
		}
		if got := p.Budget.Tokens(); got < 1.9 { // hedges took nothing of its 2
			t.Fatalf("after 103 hedges: the budget holds %v, want its 2 (hedges taking from it would have spent it)", got)
		}
		// A budget with no whole retry left: no hedge, and its allowance kept.
		drained := &retry.Budget{Burst: 1, Ratio: -1} // earns nothing
		drained.Allow()
		tr.Policy.Budget = drained
		fast(20)
		if slowOne() {
			t.Fatalf("a budget with no whole retry: hedged; want no hedge while the host is overloaded")
		}
		tr.Policy.Budget = p.Budget
		if !slowOne() {
			t.Fatalf("the budget back: not hedged; want the allowance the overload kept")
		}
	})
}

// TestHedgeNeverForWhatCannotBeSentAgain: a POST without a key, and a body
// without GetBody, go once, however slow.
func TestHedgeNeverForWhatCannotBeSentAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, mk := range []func() *http.Request{
			func() *http.Request {
				req, _ := http.NewRequest(http.MethodPost, "http://api.example/orders", strings.NewReader("x"))
				return req
			},
			func() *http.Request {
				req, _ := http.NewRequest(http.MethodPut, "http://api.example/doc", io.NopCloser(strings.NewReader("x")))
				return req
			},
		} {
			base := newSlow(func(n int) answer { return answer{wait: time.Second} })
			tr := &httpretry.Transport{Base: base, Hedge: &httpretry.Hedge{Delay: 10 * time.Millisecond}}
			req := mk()
			resp, err := tr.RoundTrip(req)
			if err != nil || base.requests() != 1 {
				t.Fatalf("%s with %T: %d requests, %v; want 1", req.Method, req.Body, base.requests(), err)
			}
			readAll(t, resp)
		}
	})
}

// TestHedgeDeadline: the request's deadline bounds every copy.
func TestHedgeDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSlow(func(n int) answer { return answer{hang: true} })
		tr := &httpretry.Transport{Base: base, Policy: retry.Policy{Budget: httpretry.NoBudget()}, Hedge: &httpretry.Hedge{Delay: 10 * time.Millisecond, Max: 5}}
		earnHedges(t, tr, 2)
		ctx, cancel := context.WithTimeout(context.Background(), 35*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := get(t, ctx, tr)
		synctest.Wait()
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 35*time.Millisecond || base.requests() != 4 || !base.released() {
			t.Fatalf("%v after %v and %d copies, released %v; want the deadline at 35ms after 4 copies, all released", err, time.Since(start), base.requests(), base.released())
		}
	})
}

// TestHedgeRace: 64 goroutines on one Transport, hedging and retrying
// (go test -race).
func TestHedgeRace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSlow(func(n int) answer {
			// 2% hang, 2% take 300ms, 5% answer 503, by a scrambled n; the
			// rest take 1–5ms. A request fails only if every copy of its 11
			// attempts does: about 3e-12 of requests, unhedged.
			switch fate := uint32(n) * 2654435761 % 100; {
			case fate < 2:
				return answer{hang: true}
			case fate < 4:
				return answer{wait: 300 * time.Millisecond}
			case fate < 9:
				return answer{wait: 2 * time.Millisecond, status: 503}
			}
			return answer{wait: time.Duration(1+n%5) * time.Millisecond, body: "ok"}
		})
		tr := &httpretry.Transport{Base: base, Policy: constant(10*time.Millisecond, 10), AttemptTimeout: 100 * time.Millisecond, Hedge: &httpretry.Hedge{}}
		tr.Policy.Budget = httpretry.NoBudget()
		var retries atomic.Int64
		tr.Policy.OnRetry = func(retry.Event) { retries.Add(1) }
		var wg sync.WaitGroup
		var ok atomic.Int64
		for range 64 {
			wg.Go(func() {
				for range 50 {
					resp, err := get(t, context.Background(), tr)
					if err == nil {
						if resp.StatusCode == 200 {
							ok.Add(1)
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
			})
		}
		wg.Wait()
		synctest.Wait()
		hedges := int64(base.requests()) - 64*50 - retries.Load()
		if ok.Load() != 64*50 || !base.released() || hedges <= 0 {
			t.Fatalf("%d of %d requests succeeded, contexts released %v, %d hedges; want all, all, some", ok.Load(), 64*50, base.released(), hedges)
		}
	})
}

// TestHedgeAdaptive: an adaptive Hedge does not hedge a host before it
// has the weight of 40 samples (from its 48th), then hedges a slow
// request after about the 95th percentile of the host's times.
func TestHedgeAdaptive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slowAt := 0
		base := newSlow(func(n int) answer {
			if n == slowAt {
				return answer{wait: time.Second, body: "slow"}
			}
			return answer{wait: time.Duration(1+n%20) * time.Millisecond, body: "ok"} // 1–20ms, evenly: p95 is 19–20ms
		})
		tr := &httpretry.Transport{Base: base, Hedge: &httpretry.Hedge{}}
		for i := range 40 {
			if i == 30 {
				slowAt = base.requests() + 1 // too early to hedge: it takes its second
			}
			resp, err := get(t, context.Background(), tr)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
		}
		if base.requests() != 40 {
			t.Fatalf("%d requests for 40 before the host had the weight of 40 samples; want no hedge", base.requests())
		}
		for range 60 {
			resp, _ := get(t, context.Background(), tr)
			readAll(t, resp)
		}
		slowAt = base.requests() + 1
		start := time.Now()
		resp, err := get(t, context.Background(), tr)
		took := time.Since(start)
		if err != nil || readAll(t, resp) != "ok" || took < 18*time.Millisecond || took > 45*time.Millisecond {
			t.Fatalf("a slow request to a host of 1–20ms: %v after %v; want it hedged at about 19–20ms and answered by the hedge", err, took)
		}
	})
}

// TestHedgeOneRequestASecond: a host sent one request a second is hedged
// within its first 100 requests.
func TestHedgeOneRequestASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSlow(func(n int) answer {
			if n%25 == 0 {
				return answer{wait: time.Second, body: "slow"}
			}
			return answer{wait: time.Duration(1+n%10) * time.Millisecond, body: "ok"}
		})
		tr := &httpretry.Transport{Base: base, Hedge: &httpretry.Hedge{}}
		for i := range 100 {
			before := base.requests()
			resp, err := get(t, context.Background(), tr)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			synctest.Wait()
			if base.requests()-before == 2 {
				t.Logf("first hedged: request %d", i+1)
				return
			}
			time.Sleep(time.Second)
		}
		t.Fatalf("100 requests a second apart, every 25th slow: none hedged; want one within the first 100")
	})
}

// TestHedgePanicReachesTheCaller: a panic on a hedge's goroutine (here in
// Retryable, which forgot that a transport error has no response) reaches
// the caller, where a recover can take it, instead of ending the process.
func TestHedgePanicReachesTheCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSlow(func(n int) answer {
			if n == 1 {
				return answer{wait: time.Second}
			}
			return answer{status: 503, wait: time.Millisecond}
		})
		tr := &httpretry.Transport{Base: base, Policy: retry.Policy{Budget: httpretry.NoBudget()}, Hedge: &httpretry.Hedge{Delay: 10 * time.Millisecond},
			Retryable: func(resp *http.Response, err error) bool {
				if resp.StatusCode == 503 {
					panic("Retryable's bug")
				}
				return false
			}}
		got := func() (r any) {
			defer func() { r = recover() }()
			get(t, context.Background(), tr)
			return nil
		}()
		synctest.Wait()
		if got != "Retryable's bug" || !base.released() {
			t.Fatalf("a hedge's panic: the caller recovered %v, contexts released %v; want the panic, and every context released", got, base.released())
		}
	})
}

// TestHedgeNoneAfterACallerPanic: a panic in the first copy, in the
// caller's goroutine, ends the flight: no hedge is sent after RoundTrip
// has ended, and no context is left.
func TestHedgeNoneAfterACallerPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		var ctxs []context.Context
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			calls++
			ctxs = append(ctxs, req.Context())
			if calls == 1 {
				panic("Base's bug")
			}
			return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
		})
		tr := &httpretry.Transport{Base: base, AttemptTimeout: time.Second, Hedge: &httpretry.Hedge{Delay: 10 * time.Millisecond}}
		func() {
			defer func() { recover() }()
			get(t, context.Background(), tr)
		}()
		time.Sleep(time.Minute)
		synctest.Wait()
		if calls != 1 || ctxs[0].Err() == nil {
			t.Fatalf("after a panic in the first copy: %d requests, its context released %v; want 1, released", calls, ctxs[0].Err() != nil)
		}
	})
}

// TestFirstWaitScalesToTheAttempt: with AttemptTimeout or a Hedge set and
// the Policy's BaseDelay left zero, the retries wait on a curve that
// starts at a tenth of AttemptTimeout (or, with only a Hedge, at its
// delay), at most 200ms, doubling as before; an explicit BaseDelay wins,
// and without either the default 200ms stays.
func TestFirstWaitScalesToTheAttempt(t *testing.T) {
	for _, tt := range []struct {
		name string
		tr   *httpretry.Transport
		want []time.Duration // the most each wait may be (full jitter)
	}{
		{"AttemptTimeout 250ms", &httpretry.Transport{AttemptTimeout: 250 * time.Millisecond}, []time.Duration{25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}},
		{"AttemptTimeout 1h", &httpretry.Transport{AttemptTimeout: time.Hour}, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}},
		{"Hedge{Delay: 30ms}", &httpretry.Transport{Hedge: &httpretry.Hedge{Delay: 30 * time.Millisecond}}, []time.Duration{30 * time.Millisecond, 60 * time.Millisecond, 120 * time.Millisecond}},
		{"neither", &httpretry.Transport{}, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}},
		{"an explicit BaseDelay", &httpretry.Transport{AttemptTimeout: 250 * time.Millisecond, Policy: retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: time.Second}}}}, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}},
	} {
		synctest.Test(t, func(t *testing.T) {
			tr := tt.tr
			tr.Base = newServer(s503, s503, s503)
			tr.Policy.Budget = httpretry.NoBudget()
			var curve []time.Duration
			tr.Policy.OnRetry = func(e retry.Event) {
				curve = append(curve, e.Wait)
			}
			// The most of 200 draws of each wait: the top of its interval, within 5%.
			most := make([]time.Duration, 3)
			for range 200 {
				curve = nil
				tr.Base = newServer(s503, s503, s503)
				resp, err := get(t, context.Background(), tr)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				for i, w := range curve {
					most[i] = max(most[i], w)
				}
			}
			for i, w := range tt.want {
				if most[i] > w || most[i] < w*95/100 {
					t.Errorf("%s: wait %d at most %v in 200 draws, want up to %v", tt.name, i+1, most[i], w)
				}
			}
		})
	}
}
