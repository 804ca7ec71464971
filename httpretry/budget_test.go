package httpretry_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff/httpretry"
)

// The budget per host tells bad luck from overload (the issue "The tail,
// measured outside the project"), through the Transport's defaults, in
// virtual time.

// chancy is a Base whose attempts fail (503) as fail says, by the path and
// how many times it was sent.
type chancy struct {
	mu   sync.Mutex
	sent map[string]int
	fail func(path string, n int) bool
	all  atomic.Int64
}

func (f *chancy) RoundTrip(req *http.Request) (*http.Response, error) {
	f.all.Add(1)
	f.mu.Lock()
	if f.sent == nil {
		f.sent = map[string]int{}
	}
	f.sent[req.URL.Path]++
	n := f.sent[req.URL.Path]
	f.mu.Unlock()
	status := http.StatusOK
	if f.fail(req.URL.Path, n) {
		status = http.StatusServiceUnavailable
	}
	return &http.Response{StatusCode: status, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// TestBudgetSavesBadLuck: a new Transport whose 20 calls each fail once
// and then succeed saves all 20 (a budget that charged every retry saved
// 11: its 10, and one earned).
func TestBudgetSavesBadLuck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &chancy{fail: func(_ string, n int) bool { return n == 1 }}
		tr := &httpretry.Transport{Base: base}
		for i := range 20 {
			resp := getURL(t, tr, "http://api.example/"+strconv.Itoa(i))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("call %d, failing once: %s; want it saved", i+1, resp.Status)
			}
			resp.Body.Close()
		}
	})
}

// TestBudgetRandomFailures: attempts failing at random, independently, at
// 10%, 20% and 30%, over 5,000 calls from one Transport, one after
// another at three paces and 20 at a time: at least 99.9%, 99.9% and 99%
// of the calls succeed (with no budget, 5 retries leave 100%, 99.99% and
// 99.93%; a budget that charged every retry left 97.96%, 87.24% and
// 75.42%). Seeded.
func TestBudgetRandomFailures(t *testing.T) {
	for _, tt := range []struct {
		fail, want float64
	}{{0.1, 0.999}, {0.2, 0.999}, {0.3, 0.99}} {
		for _, pace := range []struct {
			gap     time.Duration
			callers int
		}{{0, 1}, {time.Second, 1}, {5 * time.Second, 1}, {100 * time.Millisecond, 20}} {
			synctest.Test(t, func(t *testing.T) {
				r := rand.New(rand.NewPCG(29, uint64(100*tt.fail)))
				var mu sync.Mutex
				base := &chancy{fail: func(string, int) bool {
					mu.Lock()
					defer mu.Unlock()
					return r.Float64() < tt.fail
				}}
				tr := &httpretry.Transport{Base: base}
				var ok atomic.Int64
				var wg sync.WaitGroup
				const calls = 5000
				for range pace.callers {
					wg.Go(func() {
						for range calls / pace.callers {
							req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://api.example/", nil)
							if resp, err := tr.RoundTrip(req); err == nil {
								if resp.StatusCode == http.StatusOK {
									ok.Add(1)
								}
								resp.Body.Close()
							}
							time.Sleep(pace.gap)
						}
					})
				}
				wg.Wait()
				got := float64(ok.Load()) / calls
				t.Logf("%.0f%% of attempts failing, %d callers %v apart: %.2f%% of calls succeeded", 100*tt.fail, pace.callers, pace.gap, 100*got)
				if got < tt.want {
					t.Errorf("%.0f%% of attempts failing, %d callers %v apart: %.2f%% of calls succeeded, want at least %.1f%%",
						100*tt.fail, pace.callers, pace.gap, 100*got, 100*tt.want)
				}
			})
		}
	}
}

// TestBudgetStopsAFailingHost: a host that fails every attempt after
// 1,000 healthy calls (in an instant, the most room they can make) is
// sent at most 1.12 attempts a call over the next 1,000: the room of a
// tenth of the calls, once, then none.
func TestBudgetStopsAFailingHost(t *testing.T) {
	for _, gap := range []time.Duration{0, 10 * time.Millisecond, time.Second} {
		synctest.Test(t, func(t *testing.T) {
			var down atomic.Bool
			base := &chancy{fail: func(string, int) bool { return down.Load() }}
			tr := &httpretry.Transport{Base: base}
			call := func() {
				req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
				if resp, err := tr.RoundTrip(req); err == nil {
					resp.Body.Close()
				}
				time.Sleep(gap)
			}
			for range 1000 {
				call()
			}
			down.Store(true)
			before := base.all.Load()
			for range 1000 {
				call()
			}
			got := float64(base.all.Load()-before) / 1000
			t.Logf("calls %v apart: %.3f attempts a call", gap, got)
			if got > 1.12 {
				t.Errorf("calls %v apart: %.3f attempts a call to a host failing every one, want at most 1.12", gap, got)
			}
		})
	}
}
