package httpretry_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff/httpretry"
)

// review2Body counts its Closes.
type review2Body struct {
	io.Reader
	closes atomic.Int64
}

func (b *review2Body) Close() error { b.closes.Add(1); return nil }

// TestPanicClosesOnce: flight.go, letGo "drops c's outcome,
// once" and "A body's Close is Base's code" (io.Closer: "The behavior of
// Close after the first call is undefined"). Max 2: the first copy fails
// (503) at 25ms and is the flight's last; the first hedge fails (503) at
// 30ms and takes its place, so the first copy's outcome is let go, its
// body closed; the second hedge's Base panics at 35ms, and catch drops
// every copy's c.resp again, the first copy's too: its body is closed a
// second time (and, had its first Close been slow, from two goroutines at
// once).
func TestPanicClosesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var warm atomic.Bool
		warm.Store(true)
		first := &review2Body{Reader: strings.NewReader("")}
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if warm.Load() {
				return reviewResp(req, 200), nil
			}
			switch httpretry.Resend(req.Context()) {
			case 0:
				time.Sleep(25 * time.Millisecond)
				r := reviewResp(req, 503)
				r.Body = first
				return r, nil
			case 1:
				time.Sleep(20 * time.Millisecond) // sent at 10ms
				return reviewResp(req, 503), nil
			}
			time.Sleep(15 * time.Millisecond) // sent at 20ms
			panic("Base broke")
		})
		tr := &httpretry.Transport{Base: base, Policy: constant(-1, 0), Hedge: &httpretry.Hedge{Delay: 10 * time.Millisecond, Max: 2}}
		for range 20 { // fast answers earn the allowance the hedges
			getURL(t, tr, "http://api.example/").Body.Close()
		}
		warm.Store(false)
		func() {
			defer func() {
				if r := recover(); r != "Base broke" {
					t.Errorf("RoundTrip's panic: %v; want Base's", r)
				}
			}()
			req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
			resp, err := tr.RoundTrip(req)
			t.Errorf("RoundTrip returned %v, %v; want Base's panic", resp, err)
		}()
		time.Sleep(time.Second)
		if n := first.closes.Load(); n != 1 {
			t.Fatalf("the first copy's body, let go when the hedge failed after it, then the flight panicked: closed %d times; want once", n)
		}
	})
}

// review2SlowClose is a body whose Close takes 500ms: Base's code.
type review2SlowClose struct{ io.Reader }

func (review2SlowClose) Close() error { time.Sleep(500 * time.Millisecond); return nil }

// TestSlowCloseHoldsNoHedge: doc.go, "Retryable and GetBody, the
// caller's code, and the Close of a body let go, Base's, are called
// outside any lock another copy needs" (CHANGELOG: a slow Close "held the
// winner (520ms for a 20ms answer)", fixed). Max 3, Delay 10ms,
// AttemptTimeout 30ms: the first hedge fails (503) at 15ms, its body's
// Close slow; at 30ms the first copy times out, which lets that 503 go,
// and the third hedge is due on the same tick. step's deferred unlock
// runs the slow Close on the timer's goroutine before ready sends the
// hedge, so the hedge that answers in 1ms goes out 500ms late, and
// RoundTrip takes about 531ms where 31ms is due.
func TestSlowCloseHoldsNoHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var warm atomic.Bool
		warm.Store(true)
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if warm.Load() {
				return reviewResp(req, 200), nil
			}
			switch httpretry.Resend(req.Context()) {
			case 1: // sent at 10ms
				time.Sleep(5 * time.Millisecond)
				r := reviewResp(req, 503)
				r.Body = review2SlowClose{strings.NewReader("")}
				return r, nil
			case 3: // due at 30ms
				time.Sleep(time.Millisecond)
				return reviewResp(req, 200), nil
			}
			select { // the first copy and the second hedge: slow, cut by their AttemptTimeout
			case <-req.Context().Done():
				return nil, req.Context().Err()
			case <-time.After(5 * time.Second):
				return reviewResp(req, 200), nil
			}
		})
		tr := &httpretry.Transport{Base: base, Policy: constant(-1, 0), AttemptTimeout: 30 * time.Millisecond,
			Hedge: &httpretry.Hedge{Delay: 10 * time.Millisecond, Max: 3}}
		for range 40 { // fast answers earn the allowance the hedges
			getURL(t, tr, "http://api.example/").Body.Close()
		}
		warm.Store(false)
		start := time.Now()
		req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
		resp, err := tr.RoundTrip(req)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("RoundTrip: %v after %v", err, took)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || took > 100*time.Millisecond {
			t.Fatalf("the third hedge, due at 30ms, answers in 1ms: RoundTrip returned %d after %v; want 200 after about 31ms (a let-go body's slow Close held the hedge)", resp.StatusCode, took)
		}
		time.Sleep(2 * time.Second)
	})
}

// TestHedgedContextEndsKeepsLastResponse: when the request's context ends
// while a hedge is in flight and another copy has failed with a status,
// RoundTrip returns that last response as is, as an unhedged attempt
// does when the context ends during it (doc.go, "What it returns").
func TestHedgedContextEndsKeepsLastResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSlow(func(n int) answer {
			if n == 1 {
				return answer{wait: 20 * time.Millisecond, status: http.StatusServiceUnavailable}
			}
			return answer{hang: true}
		})
		tr := &httpretry.Transport{Base: base, Policy: constant(time.Second, 3), Hedge: &httpretry.Hedge{Delay: 10 * time.Millisecond}}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("RoundTrip: %v, %v; want the 503, as is", resp, err)
		}
		resp.Body.Close()
	})
}
