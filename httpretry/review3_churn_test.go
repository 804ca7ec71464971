package httpretry_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff/httpretry"
)

// TestReview3AllowanceBoundWithManyHosts: doc.go, "So the hedges to a
// host over any interval are at most 100 plus 2 × ExtraLoad × its
// attempts, whatever the delay"; SPEC, "Their extra load is bounded by
// ExtraLoad itself". A Hedge keeps at most 1,024 hosts and, past that,
// forgets hosts at random (hosts.of with never as spare), each of which
// comes back holding a fresh allowance: a client that also talks to many
// other hosts has one host, every one of whose requests is slow (so none
// earns), hedged again and again, far past the bound.
func TestReview3AllowanceBoundWithManyHosts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hedges atomic.Int64
		base := review3RT(func(req *http.Request) (*http.Response, error) {
			if !strings.HasPrefix(req.URL.Host, "target") {
				return review3Resp(req, 200, ""), nil // other hosts: at once, before any hedge
			}
			if httpretry.Resend(req.Context()) > 0 {
				hedges.Add(1)
			}
			select { // every request to the target is slower than the delay
			case <-time.After(50 * time.Millisecond):
				return review3Resp(req, 200, "ok"), nil
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		})
		tr := &httpretry.Transport{Base: base, Hedge: &httpretry.Hedge{Delay: 10 * time.Millisecond}}
		done, cancel := context.WithCancel(context.Background())
		cancel()
		do := func(url string) {
			ctx := context.Background()
			if !strings.HasPrefix(url, "http://target") {
				ctx = done // a request to another host, given up before it was sent: it costs no flight, and is met all the same
			}
			req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			} else if ctx != done {
				t.Fatal(err)
			}
		}
		other, attempts := 0, 0
		for range 500 {
			for range 600 {
				other++
				do(fmt.Sprintf("http://h%d.example/", other))
			}
			do("http://target.example/")
			attempts++
		}
		synctest.Wait()
		if bound := 100 + 2*0.05*float64(attempts); float64(hedges.Load()) > bound {
			t.Fatalf("%d requests to one host, every one slower than the delay (600 requests to other hosts between them, cancelled before they were sent): %d hedged; the allowance's bound is 100 + 2 × 0.05 × %d = %.0f", attempts, hedges.Load(), attempts, bound)
		}
	})
}
