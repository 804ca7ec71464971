package retry_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff/retry"
)

// TestReview4BurstBelowOneAllowsNoRetry: the doc's bound, "the retries it
// allows are at most what it held at a ... plus Ratio × the calls that
// earned ... plus PerSecond × T", and the spec's "It starts holding Burst
// tokens and never holds more". A Budget with Burst 0.9996, earning
// nothing (Ratio and PerSecond none), holds less than one retry: it must
// allow none.
func TestReview4BurstBelowOneAllowsNoRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{Burst: 0.9996, Ratio: -1}
		if got := b.Tokens(); got > b.Burst {
			t.Errorf("a new Budget{Burst: %v}.Tokens() = %v: holds more than Burst", b.Burst, got)
		}
		retries := 0
		p := retry.Policy{Budget: b, Schedule: constant(time.Second, 3), OnRetry: func(retry.Event) { retries++ }}
		retry.Do(context.Background(), p, func(context.Context) error { return errFault })
		if retries != 0 {
			t.Errorf("Burst %v, nothing earned: %d retries allowed, want 0 (at most Burst + Ratio×calls + PerSecond×T = %v)",
				b.Burst, retries, b.Burst)
		}
	})
}

// TestReview4RatioRoundedUp: Ratio 0.0015, after its Burst of 1 is
// spent: 500 calls that earn make 0.75 of a retry by the doc's bound
// ("plus Ratio × the calls that earned in the interval"), so no retry may
// follow; the Budget allows one, having read the Ratio as 0.002.
func TestReview4RatioRoundedUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{Burst: 1, Ratio: 0.0015}
		retries := 0
		p := retry.Policy{Budget: b, Schedule: constant(time.Second, 1), OnRetry: func(retry.Event) { retries++ }}
		ctx := context.Background()
		retry.Do(ctx, p, func(context.Context) error { return errFault }) // spends the Burst: the retry fails
		if retries != 1 {
			t.Fatalf("the Burst's retry: %d retries", retries)
		}
		retries = 0
		before := b.Tokens()
		const calls = 500
		for range calls {
			retry.Do(ctx, p, func(context.Context) error { return nil })
		}
		retry.Do(ctx, p, func(context.Context) error { return errFault })
		if bound := before + b.Ratio*calls; float64(retries) > bound {
			t.Errorf("held %v, then %d calls earned at Ratio %v: %d retries allowed, bound %v; Tokens now %v",
				before, calls, b.Ratio, retries, bound, b.Tokens())
		}
	})
}
