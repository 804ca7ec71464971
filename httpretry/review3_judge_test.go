package httpretry_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff/httpretry"
)

// TestReview3NoHedgeAfterHeaders: SPEC, "a replayable request ... that
// has had no response headers for the hedge delay gets another copy
// sent"; Hedge.Delay, "how long a copy goes without headers before the
// next is sent". The first copy has its headers at 5ms, well before the
// 10ms delay; Retryable, the caller's code, takes 20ms to judge them
// (it is called outside the flight's lock, the state already claimed as
// returned). The flight's timer sends a hedge at 10ms all the same:
// step never looks at copies that have returned and are being judged.
func TestReview3NoHedgeAfterHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sends, hedges atomic.Int64
		base := review3RT(func(req *http.Request) (*http.Response, error) {
			sends.Add(1)
			if httpretry.Resend(req.Context()) > 0 {
				hedges.Add(1)
			}
			select {
			case <-time.After(5 * time.Millisecond):
				return review3Resp(req, 200, "ok"), nil
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		})
		tr := &httpretry.Transport{Base: base, Hedge: &httpretry.Hedge{Delay: 10 * time.Millisecond},
			Retryable: func(resp *http.Response, err error) bool {
				time.Sleep(20 * time.Millisecond) // a slow classifier
				return httpretry.DefaultRetryable(resp, err)
			}}
		req, _ := http.NewRequestWithContext(context.Background(), "GET", "http://api.example/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		time.Sleep(time.Second) // the hedge's own judging ends
		synctest.Wait()
		if hedges.Load() != 0 {
			t.Fatalf("the first copy had its headers at 5ms, the hedge delay is 10ms: %d hedge(s) sent (%d sends), want none", hedges.Load(), sends.Load())
		}
	})
}

// review3RT is a Base made of a func (the review3 tests' in-memory host).
type review3RT func(*http.Request) (*http.Response, error)

func (f review3RT) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func review3Resp(req *http.Request, code int, body string) *http.Response {
	return &http.Response{StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
		Body: io.NopCloser(strings.NewReader(body)), Request: req}
}

// TestHedgeHeldWhileJudgedThenSent: a hedge that comes due while another
// copy's outcome is being judged is held, not dropped: the first copy
// hangs, the first hedge (at 10ms) answers 503 at 15ms, which a slow
// Retryable judges until 35ms; the second hedge, due at 20ms, goes once
// that 503 is taken in as a failure, at 35ms, and wins.
func TestHedgeHeldWhileJudgedThenSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var sentAt [3]time.Duration
		base := review3RT(func(req *http.Request) (*http.Response, error) {
			if req.URL.Path == "/warm" { // earnHedges's
				return review3Resp(req, http.StatusOK, ""), nil
			}
			n := httpretry.Resend(req.Context())
			sentAt[n] = time.Since(start)
			switch n {
			case 0:
				<-req.Context().Done()
				return nil, req.Context().Err()
			case 1:
				time.Sleep(5 * time.Millisecond)
				return review3Resp(req, http.StatusServiceUnavailable, ""), nil
			}
			return review3Resp(req, http.StatusOK, "ok"), nil
		})
		tr := &httpretry.Transport{Base: base, Hedge: &httpretry.Hedge{Delay: 10 * time.Millisecond, Max: 2},
			Retryable: func(resp *http.Response, err error) bool {
				if resp != nil && resp.StatusCode == http.StatusServiceUnavailable {
					time.Sleep(20 * time.Millisecond) // a slow classifier
				}
				return httpretry.DefaultRetryable(resp, err)
			}}
		earnHedges(t, tr, 2)
		start = time.Now()
		req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%v, %v; want the second hedge's 200", resp, err)
		}
		resp.Body.Close()
		if took := time.Since(start); sentAt != [3]time.Duration{0, 10 * time.Millisecond, 35 * time.Millisecond} || took != 35*time.Millisecond {
			t.Fatalf("copies sent at %v, answered in %v; want at 0, 10ms and 35ms (the second hedge held while the first's 503 was judged), in 35ms", sentAt, took)
		}
	})
}
