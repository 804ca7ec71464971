package httpretry_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// Tests that mutation testing (SPEC-retry.md's httpretry sections) found
// missing: each pins a behaviour that no other test held.
//
// The mutants no test can kill, and why they change nothing
// (shared/tools/mutate -pkg httpretry):
//
//   - hosts.go NoBudget, math.Inf(1) → Inf(2), Inf(0): +Inf for every
//     sign ≥ 0.
//   - latency.go bucket, d < 8 → d < 9, d <= 8: bucket(8) is 8 on both
//     paths.
//   - latency.go add, the first sample's weight, last = 1, now deleted (or
//     its if-body, or == −1): now.Sub of the zero time saturates, so the
//     fade resets to weight 1 and last = now anyway; every weight scales
//     alike, and a quantile reads only their ratios. Weight 1 → 2 doubles
//     every weight, exact in float32.
//   - latency.go add, dt > 0 → dt > 1, >= 0, > −1: a gap of 1ns is not
//     applied, but last does not move either, so the next sample applies
//     it (and e^(−1e−11) is 1 in float32); at dt = 0 the body changes
//     nothing.
//   - latency.go add, the rescale's > → >=: differs only at a product of
//     exactly 1e30, and a rescale scales every weight alike.
//   - latency.go quantile, i >= 0 → i >= 1, i > 0: bucket 0 ([0, 1ns))
//     gives 1ns from the floor or from the fall-through alike; the last
//     return 1 → 0, 2 needs every bucket empty, where above == total has
//     returned already.
//   - slow.go, f.timer.Reset(0) → Reset(−1): a timer reset to d ≤ 0 fires
//     at once either way.
//   - slow.go abort, first.timer.Stop() deleted; decide's timer.Stop()
//     deleted: the first copy's timer only cancels it, which a panic's
//     decide or finish has done already (a cancel is idempotent); a tick
//     after decide finds the flight over (TestStepAfterDecided).
//   - slow.go, e > 1 → e >= 1 (ExtraLoad's clamp): both give 1 at 1.
//   - slow.go, len(f.more) >= hedges() → >, and the tick's < → <=: with no
//     hedge left step sends none and decides as finish would; the extra
//     call of the Retryable predicates changes no answer.
//   - slow.go wake, −1 → −2, and max(·, 0) → 1, −1: callers test d ≥ 0
//     only, and every due time wake sees is after now.
//   - httpretry.go, a flight's delay or sent −1 for 0: read only as > 0.

// TestRecordHeaderErrorOnlyHTTPIsAMismatch: a TLS record header error is
// an HTTP server on an https URL, not retried, only when the record starts
// "HTTP/"; any other bad record is a transport fault like any other.
func TestRecordHeaderErrorOnlyHTTPIsAMismatch(t *testing.T) {
	for _, tt := range []struct {
		header string
		want   bool
	}{
		{"HTTP/", false},
		{"\x15\x03\x03\x00\x02", true}, // an alert record, mangled on the way
		{"SSH-2", true},
	} {
		var rec tls.RecordHeaderError
		copy(rec.RecordHeader[:], tt.header)
		if got := httpretry.DefaultRetryable(nil, rec); got != tt.want {
			t.Errorf("DefaultRetryable(nil, a record header %q) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

// TestSentOnceUntouched: a request that cannot be sent again, with no
// AttemptTimeout, reaches Base as the caller made it, and its response
// comes back as Base gave it; with one, however short, it is bounded, and
// its one send is no resend.
func TestSentOnceUntouched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got *http.Request
		want := &http.Response{StatusCode: http.StatusServiceUnavailable, Body: http.NoBody}
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) { got = req; return want, nil })
		req, _ := http.NewRequest(http.MethodPost, "http://api.example/orders", strings.NewReader("x"))
		resp, err := (&httpretry.Transport{Base: base}).RoundTrip(req)
		if got != req || resp != want || err != nil {
			t.Fatalf("a POST: Base got %p (sent %p), RoundTrip returned %p, %v (Base's %p); want both as they were", got, req, resp, err, want)
		}

		slow := newSlow(func(int) answer { return answer{wait: time.Millisecond} })
		req, _ = http.NewRequest(http.MethodPost, "http://api.example/orders", strings.NewReader("x"))
		_, err = (&httpretry.Transport{Base: slow, AttemptTimeout: time.Nanosecond}).RoundTrip(req)
		if !errors.Is(err, httpretry.ErrAttemptTimeout) || slow.requests() != 1 {
			t.Fatalf("a POST under an AttemptTimeout of 1ns, answered in 1ms: %v after %d requests; want ErrAttemptTimeout after 1", err, slow.requests())
		}
		if n := httpretry.Resend(slow.ctxs[0]); n != 0 {
			t.Fatalf("a POST's one send says it is resend %d, want 0", n)
		}
	})
}

// TestAttemptTimeoutNeverHedgesWhatCannotBeSentAgain: a POST without a key
// is bounded by AttemptTimeout but sent once, however slow its headers,
// with or without a Hedge.
func TestAttemptTimeoutNeverHedgesWhatCannotBeSentAgain(t *testing.T) {
	for _, hedge := range []*httpretry.Hedge{nil, {Delay: time.Millisecond}} {
		synctest.Test(t, func(t *testing.T) {
			base := newSlow(func(int) answer { return answer{wait: 50 * time.Millisecond, body: "made"} })
			tr := &httpretry.Transport{Base: base, AttemptTimeout: time.Second, Hedge: hedge}
			req, _ := http.NewRequest(http.MethodPost, "http://api.example/orders", strings.NewReader("x"))
			start := time.Now()
			resp, err := tr.RoundTrip(req)
			if err != nil || readAll(t, resp) != "made" || base.requests() != 1 || time.Since(start) != 50*time.Millisecond {
				t.Fatalf("a slow POST, Hedge %v: %v after %d requests in %v; want its answer after one in 50ms", hedge, err, base.requests(), time.Since(start))
			}
			synctest.Wait()
			if !base.released() {
				t.Fatalf("a slow POST, Hedge %v: its context is live after its body was read", hedge)
			}
		})
	}
}

// TestResendAfterHedges: a retry after an attempt whose copies all failed
// counts every copy before it, as http.request.resend_count counts sends.
func TestResendAfterHedges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var resends []int
		base := newSlow(func(n int) answer {
			switch n {
			case 1:
				return answer{wait: 100 * time.Millisecond, status: 503}
			case 2:
				return answer{wait: 10 * time.Millisecond, status: 503}
			}
			return answer{wait: time.Millisecond, body: "ok"}
		})
		seen := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			resends = append(resends, httpretry.Resend(req.Context()))
			mu.Unlock()
			return base.RoundTrip(req)
		})
		p := constant(time.Second, 3)
		p.Budget = httpretry.NoBudget()
		tr := &httpretry.Transport{Base: seen, Policy: p, Hedge: &httpretry.Hedge{Delay: 50 * time.Millisecond}}
		resp, err := get(t, context.Background(), tr)
		if err != nil || readAll(t, resp) != "ok" {
			t.Fatalf("%v, %v; want the retry's 200", resp, err)
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(resends) != "[0 1 2]" {
			t.Fatalf("resends seen %v, want [0 1 2]: the retry comes after two sends", resends)
		}
	})
}

// TestBodiesResentBounded: under AttemptTimeout or a Hedge, each retry and
// each hedge sends the whole body again, from GetBody.
func TestBodiesResentBounded(t *testing.T) {
	for _, tt := range []struct {
		name string
		tr   *httpretry.Transport
	}{
		{"AttemptTimeout, a retry", &httpretry.Transport{AttemptTimeout: time.Second}},
		{"Hedge, a hedge", &httpretry.Transport{Hedge: &httpretry.Hedge{Delay: 10 * time.Millisecond}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var sent []string
				base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
					b, _ := io.ReadAll(req.Body)
					req.Body.Close()
					mu.Lock()
					sent = append(sent, string(b))
					n := len(sent)
					mu.Unlock()
					if n == 1 && tt.tr.Hedge != nil { // slow: the hedge answers
						<-req.Context().Done()
						return nil, req.Context().Err()
					}
					status := http.StatusOK
					if n == 1 {
						status = http.StatusServiceUnavailable
					}
					return &http.Response{StatusCode: status, Header: http.Header{}, Body: http.NoBody}, nil
				})
				tr := tt.tr
				tr.Base, tr.Policy = base, constant(time.Second, 3)
				req, _ := http.NewRequest(http.MethodPut, "http://api.example/doc", strings.NewReader(`{"v":1}`))
				resp, err := tr.RoundTrip(req)
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("%v, %v; want the second send's 200", resp, err)
				}
				resp.Body.Close()
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				if fmt.Sprint(sent) != `[{"v":1} {"v":1}]` {
					t.Fatalf("bodies sent %q, want the whole body twice", sent)
				}
			})
		})
	}
}

// TestRetryableAskedOncePerResponse: the Transport's Retryable is asked
// once for each response, whether the attempt is bounded, hedged or
// neither: a Retryable that counts what it sees counts each once.
func TestRetryableAskedOncePerResponse(t *testing.T) {
	for _, tt := range []struct {
		name string
		tr   *httpretry.Transport
	}{
		{"plain", &httpretry.Transport{}},
		{"AttemptTimeout", &httpretry.Transport{AttemptTimeout: time.Second}},
		{"Hedge", &httpretry.Transport{Hedge: &httpretry.Hedge{Delay: time.Second}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var asked atomic.Int64
				tr := tt.tr
				tr.Base, tr.Policy = newServer(s503, s500), constant(time.Second, 3)
				tr.Retryable = func(resp *http.Response, err error) bool {
					asked.Add(1)
					return httpretry.DefaultRetryable(resp, err)
				}
				resp, err := get(t, context.Background(), tr)
				if err != nil || readAll(t, resp) != "ok" {
					t.Fatalf("%v, %v; want the third response, ok", resp, err)
				}
				if n := asked.Load(); n != 3 {
					t.Fatalf("Retryable asked %d times for 3 responses, want 3", n)
				}
			})
		})
	}
}

// TestHedgeRefusedIsNotTriedAgain: a hedge refused when it is due (here
// by the host's budget, which holds no whole retry: overload) is not sent,
// not then and not later in the attempt, even once the budget has earned
// a retry again: the copy in flight goes on.
func TestHedgeRefusedIsNotTriedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSlow(func(int) answer { return answer{wait: time.Second, body: "slow"} })
		p := constant(time.Second, 3)
		p.Budget = &retry.Budget{Burst: 1, PerSecond: 10} // a tenth of a retry every 10ms
		p.Budget.Allow()
		tr := &httpretry.Transport{Base: base, Policy: p, Hedge: &httpretry.Hedge{Delay: 10 * time.Millisecond, Max: 2}}
		start := time.Now()
		resp, err := get(t, context.Background(), tr)
		if err != nil || readAll(t, resp) != "slow" || time.Since(start) != time.Second {
			t.Fatalf("%v, %v after %v; want the first copy's answer after 1s", resp, err, time.Since(start))
		}
		synctest.Wait()
		base.mu.Lock()
		defer base.mu.Unlock()
		if fmt.Sprint(base.at) != "[0s]" {
			t.Fatalf("copies sent at %v; want the first alone: the hedge refused at 10ms, never sent after", base.at)
		}
	})
}

// TestHedgeShortcutRefused: a copy that fails at once, with no other in
// flight, fails the attempt there and then (no hedge is sent in place of
// a retry): its 503 comes back, as the budget refuses the retry.
func TestHedgeShortcutRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSlow(func(int) answer { return answer{wait: time.Millisecond, status: 503, body: "busy"} })
		p := constant(time.Second, 3)
		p.Budget = &retry.Budget{Burst: -1} // no token, ever
		tr := &httpretry.Transport{Base: base, Policy: p, Hedge: &httpretry.Hedge{Delay: 50 * time.Millisecond}}
		start := time.Now()
		resp, err := get(t, context.Background(), tr)
		if err != nil || resp.StatusCode != 503 || readAll(t, resp) != "busy" || time.Since(start) != time.Millisecond || base.requests() != 1 {
			t.Fatalf("%v, %v after %v and %d requests; want the 503 after 1ms, one request", resp, err, time.Since(start), base.requests())
		}
	})
}

// TestHedgeOfNoneIsNoHedge: a Hedge whose Max is below zero sends no
// hedge and, with no AttemptTimeout, changes nothing: Base gets the
// caller's request and its response comes back as Base gave it.
func TestHedgeOfNoneIsNoHedge(t *testing.T) {
	for _, h := range []struct {
		Delay time.Duration
		Max   int
	}{{10 * time.Millisecond, -1}, {0, -1}, {0, -5}} {
		synctest.Test(t, func(t *testing.T) {
			var got *http.Request
			want := &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}
			base := roundTripFunc(func(req *http.Request) (*http.Response, error) { got = req; return want, nil })
			tr := &httpretry.Transport{Base: base, Hedge: &httpretry.Hedge{Delay: h.Delay, Max: h.Max}}
			for range 300 { // an adaptive one would have an estimate by now
				req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
				resp, err := tr.RoundTrip(req)
				if got != req || resp != want || resp.Body != http.NoBody || err != nil {
					t.Fatalf("a Hedge{Delay: %v, Max: %d}: Base got %p (sent %p), RoundTrip returned %p with Body %T, %v; want both as they were",
						h.Delay, h.Max, got, req, resp, resp.Body, err)
				}
			}
		})
	}
}

// TestAttemptTimeoutOfOneNanosecond: an AttemptTimeout of 1ns bounds every
// copy, hedged or not: none gets headers in time.
func TestAttemptTimeoutOfOneNanosecond(t *testing.T) {
	for _, hedge := range []*httpretry.Hedge{nil, {Delay: 10 * time.Millisecond}} {
		synctest.Test(t, func(t *testing.T) {
			base := newSlow(func(int) answer { return answer{wait: time.Millisecond} })
			p := constant(time.Second, 1)
			tr := &httpretry.Transport{Base: base, Policy: p, AttemptTimeout: time.Nanosecond, Hedge: hedge}
			resp, err := get(t, context.Background(), tr)
			if !errors.Is(err, httpretry.ErrAttemptTimeout) {
				t.Fatalf("Hedge %v: %v, %v after %d requests; want ErrAttemptTimeout", hedge, resp, err, base.requests())
			}
			synctest.Wait()
		})
	}
}

// TestHedgeNoneWithoutABody: a hedge whose body GetBody cannot give (an
// error, or a nil body) is not sent; the copy in flight goes on.
func TestHedgeNoneWithoutABody(t *testing.T) {
	for _, getBody := range []func() (io.ReadCloser, error){
		func() (io.ReadCloser, error) { return nil, errors.New("file gone") },
		func() (io.ReadCloser, error) { return nil, nil },
	} {
		synctest.Test(t, func(t *testing.T) {
			base := newSlow(func(int) answer { return answer{wait: 100 * time.Millisecond, body: "first"} })
			tr := &httpretry.Transport{Base: base, Hedge: &httpretry.Hedge{Delay: 10 * time.Millisecond}}
			req, _ := http.NewRequest(http.MethodPut, "http://api.example/doc", strings.NewReader("v"))
			req.GetBody = getBody
			resp, err := tr.RoundTrip(req)
			if err != nil || readAll(t, resp) != "first" || base.requests() != 1 {
				t.Fatalf("%v after %d requests; want the first copy's answer, and no hedge", err, base.requests())
			}
		})
	}
}

// TestSendableEdges: what net/http refuses is judged byte by byte as
// net/http judges it: port 65535 is a port and 65536 is not; DEL is a
// control byte in a value and no token byte in a name; a byte of 0x80 is
// fine in a value (obs-text) but not in a name; nor is a delimiter, the
// first and the last of the list among them.
func TestSendableEdges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tt := range []struct {
			name  string
			url   string
			setup func(http.Header)
			sends int
		}{
			{"port 65535", "http://api.example:65535/", nil, 2},
			{"port 65536", "http://api.example:65536/", nil, 1},
			{"port 99999", "http://api.example:99999/", nil, 1},
			{"a value with DEL", "http://api.example/", func(h http.Header) { h["X-Note"] = []string{"a\x7fb"} }, 1},
			{"a value with 0x80", "http://api.example/", func(h http.Header) { h["X-Note"] = []string{"caf\x80"} }, 2},
			{"a name with DEL", "http://api.example/", func(h http.Header) { h["X-Note\x7f"] = []string{"v"} }, 1},
			{"a name with 0x80", "http://api.example/", func(h http.Header) { h["X-Caf\x80"] = []string{"v"} }, 1},
			{"a value starting with DEL", "http://api.example/", func(h http.Header) { h["X-Note"] = []string{"\x7fv"} }, 1},
			{"a name with a quote", "http://api.example/", func(h http.Header) { h[`X-"Note"`] = []string{"v"} }, 1},
			{"a name with a brace", "http://api.example/", func(h http.Header) { h["X-Note}"] = []string{"v"} }, 1},
		} {
			srv := newServer(s503)
			req, _ := http.NewRequest(http.MethodGet, tt.url, nil)
			if tt.setup != nil {
				tt.setup(req.Header)
			}
			resp, err := (&httpretry.Transport{Base: srv, Policy: constant(time.Second, 3)}).RoundTrip(req)
			if err != nil || len(srv.reqs) != tt.sends {
				t.Errorf("%s: %d sends, %v; want %d", tt.name, len(srv.reqs), err, tt.sends)
			}
			if resp != nil {
				readAll(t, resp)
			}
		}
	})
}

// TestAttemptTimeoutLateBodyClosed: a copy that timed out, from a Base
// deaf to its context that answers anyway, has that answer's body closed.
func TestAttemptTimeoutLateBodyClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSlow(func(int) answer { return answer{wait: 200 * time.Millisecond, deaf: true, body: "late"} })
		tr := &httpretry.Transport{Base: base, Policy: constant(time.Second, 0), AttemptTimeout: 100 * time.Millisecond}
		tr.Policy.Schedule.MaxElapsed = time.Nanosecond // no retry
		_, err := get(t, context.Background(), tr)
		synctest.Wait()
		base.mu.Lock()
		defer base.mu.Unlock()
		if !errors.Is(err, httpretry.ErrAttemptTimeout) || len(base.bodies) != 1 || !base.bodies[0].closed {
			t.Fatalf("%v; %d late bodies, the first closed %v; want ErrAttemptTimeout, and the late body closed", err, len(base.bodies), len(base.bodies) == 1 && base.bodies[0].closed)
		}
	})
}

// TestHedgeNoShortcutForARetryAfter: a copy that fails naming its own wait
// (a 503 with Retry-After) does not send the next hedge at once: the retry
// obeys the wait instead.
func TestHedgeNoShortcutForARetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var at []time.Duration
		start := time.Now()
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			at = append(at, time.Since(start))
			n := len(at)
			mu.Unlock()
			if n == 1 {
				time.Sleep(5 * time.Millisecond) // virtual
				return &http.Response{StatusCode: 503, Header: http.Header{"Retry-After": {"1"}}, Body: http.NoBody}, nil
			}
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody}, nil
		})
		p := constant(10*time.Millisecond, 3)
		p.Budget = httpretry.NoBudget()
		tr := &httpretry.Transport{Base: base, Policy: p, Hedge: &httpretry.Hedge{Delay: 50 * time.Millisecond}}
		resp, err := get(t, context.Background(), tr)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%v, %v; want the retry's 200", resp, err)
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(at) != 2 || at[1] < time.Second+5*time.Millisecond {
			t.Fatalf("sends at %v; want two, the second after the 503's Retry-After of 1s", at)
		}
	})
}

// TestHedgeRetryableNotAskedOnceDone: a copy that fails because the
// request's context ended is not judged: Retryable is not asked once the
// request's context is done, hedged or not.
func TestHedgeRetryableNotAskedOnceDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var asked atomic.Int64
		base := newSlow(func(int) answer { return answer{hang: true} })
		tr := &httpretry.Transport{Base: base, Hedge: &httpretry.Hedge{Delay: 50 * time.Millisecond},
			Retryable: func(resp *http.Response, err error) bool { asked.Add(1); return true }}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		_, err := get(t, ctx, tr)
		if !errors.Is(err, context.DeadlineExceeded) || asked.Load() != 0 || base.requests() != 1 {
			t.Fatalf("%v; Retryable asked %d times, %d requests; want the deadline, never asked, one request", err, asked.Load(), base.requests())
		}
	})
}

// TestHedgeRefusedBodyClosed: a hedge the budget refuses after GetBody
// gave its body has that body closed, unsent.
func TestHedgeRefusedBodyClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var bodies []*body
		base := newSlow(func(int) answer { return answer{wait: 100 * time.Millisecond, body: "first"} })
		p := constant(time.Second, 3)
		p.Budget = &retry.Budget{Burst: -1} // no token, ever
		tr := &httpretry.Transport{Base: base, Policy: p, Hedge: &httpretry.Hedge{Delay: 10 * time.Millisecond}}
		req, _ := http.NewRequest(http.MethodPut, "http://api.example/doc", strings.NewReader("v"))
		req.GetBody = func() (io.ReadCloser, error) {
			b := &body{r: strings.NewReader("v")}
			mu.Lock()
			bodies = append(bodies, b)
			mu.Unlock()
			return b, nil
		}
		resp, err := tr.RoundTrip(req)
		if err != nil || readAll(t, resp) != "first" || base.requests() != 1 {
			t.Fatalf("%v after %d requests; want the first copy's answer, no hedge", err, base.requests())
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		for i, b := range bodies {
			if !b.closed {
				t.Fatalf("GetBody's body %d of %d, for a hedge the budget refused, is open", i+1, len(bodies))
			}
		}
	})
}

// TestNotWritableUnlessUpgraded: under AttemptTimeout, only a 101's body
// that is itself writable comes back writable: a 101 whose body only reads
// is not made to look writable (a Write would have nothing to write to).
func TestNotWritableUnlessUpgraded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusSwitchingProtocols, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(""))}, nil
		})
		resp, err := get(t, context.Background(), &httpretry.Transport{Base: base, AttemptTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := resp.Body.(io.Writer); ok {
			t.Fatalf("a 101 whose body only reads came back with a %T, which claims to write", resp.Body)
		}
		resp.Body.Close()
	})
}

// TestHedgeShortcutRules: a copy that fails retryably at once, under even
// the shortest hedge delay, fails its attempt: the retry follows after its
// wait, from the budget, and no hedge is sent in its place (hedges are for
// slowness, and priced apart); one whose error no retry can fix sends
// none, and the error comes back.
func TestHedgeShortcutRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(s503)
		tr := &httpretry.Transport{Base: srv, Policy: constant(time.Second, 3), Hedge: &httpretry.Hedge{Delay: time.Nanosecond}}
		start := time.Now()
		resp, err := get(t, context.Background(), tr)
		if err != nil || readAll(t, resp) != "ok" || time.Since(start) != time.Second || len(srv.reqs) != 2 {
			t.Fatalf("a 503 at once under a 1ns hedge delay: %v after %v and %d requests; want the retry's ok after 1s, 2 requests", err, time.Since(start), len(srv.reqs))
		}

		bad := &tls.CertificateVerificationError{Err: errors.New("expired")}
		srv = newServer(step{err: bad})
		tr = &httpretry.Transport{Base: srv, Policy: constant(time.Second, 3), Hedge: &httpretry.Hedge{Delay: 50 * time.Millisecond}}
		resp, err = get(t, context.Background(), tr)
		synctest.Wait()
		if resp != nil || !errors.Is(err, bad) || len(srv.reqs) != 1 {
			t.Fatalf("a bad certificate, hedged: %v, %v after %d requests; want the error after 1, no hedge", resp, err, len(srv.reqs))
		}
	})
}
