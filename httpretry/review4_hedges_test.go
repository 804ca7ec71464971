package httpretry_test

import (
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// TestReview4HedgesPerCallPast31: retry.Counts documents HedgesPerCall as
// "how many hedges it sent" per call, and PerCall's Sum as "the numbers'
// sum"; Counts.Hedges counts the same copies as they are sent. An attempt
// sends at most 31 hedges, however many Hedge.Max asks for (40 here), so
// that the Sum, told to retry in 5 bits, counts every one: before Max was
// capped, a call whose 36th copy won sent 35 hedges and its Sum said 31.
func TestReview4HedgesPerCallPast31(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSlow(func(n int) answer {
			if n <= 35 { // the first copy and 34 hedges hang; a 35th would answer at once
				return answer{hang: true}
			}
			return answer{}
		})
		never := func(*http.Response, error) bool { return false }
		h := &httpretry.Hedge{Delay: 10 * time.Millisecond, Max: 40, ExtraLoad: 1}
		earnHedges(t, &httpretry.Transport{Base: base, Hedge: h, Policy: retry.Policy{Budget: httpretry.NoBudget()}}, 5) // 50 fast answers: the allowance is full
		p := constant(time.Second, 0)
		p.Name, p.Budget = unique("review4-hedges-31"), httpretry.NoBudget()
		tr := &httpretry.Transport{Base: base, Hedge: h, Policy: p, AttemptTimeout: time.Second, Retryable: never}
		req, _ := http.NewRequest(http.MethodGet, "http://api.example/slow", nil)
		if _, err := tr.RoundTrip(req); !errors.Is(err, httpretry.ErrAttemptTimeout) {
			t.Fatalf("32 copies that hang: %v, want ErrAttemptTimeout", err)
		}
		if base.requests() != 32 {
			t.Fatalf("%d copies sent, want 32: the first and 31 hedges, the most of one attempt", base.requests())
		}
		c := retry.Stats.Of(p.Name)
		if c.Hedges != 31 || c.HedgesPerCall.Sum != c.Hedges || c.HedgesPerCall.Counts[5] != 1 {
			t.Errorf("one call that sent 31 hedges: Hedges %d, HedgesPerCall %+v; want 31, and a Sum of 31 in the 5+ bucket", c.Hedges, c.HedgesPerCall)
		}
	})
}
