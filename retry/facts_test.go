package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff/internal/stats"
	"github.com/unherd/backoff/retry"
)

// TestEndFacts: a call counted in a row with Facts (httpretry's, here a
// stand-in) takes its class from the Answer that ended it, or from the
// Facts of the error that did; its hedges are every attempt's together,
// the failed ones' as the Facts say and the last's as its Answer says;
// and the Answer is a success that no caller or hook ever sees.
func TestEndFacts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errHedged := errors.New("failed, after 2 hedges")
		facts := func(err error) (class, hedges int) {
			if errors.Is(err, errHedged) {
				return stats.Class5xx, 2
			}
			return stats.NoResponse, 0
		}
		table := retry.NewTable()
		(*stats.Table)(table).Row("n", "h", facts)
		var seen []error
		p := retry.Policy{Schedule: constant(time.Second, 2)}
		p.Name, p.Host, p.Table = "n", "h", table
		p.OnRetry = func(e retry.Event) { seen = append(seen, e.Err) }
		p.OnDone = func(d retry.Done) { seen = append(seen, d.Err) }
		ctx := context.Background()

		n := 0 // two failures of 2 hedges each, then an answer of class 3xx after 1
		if err := retry.Do(ctx, p, func(context.Context) error {
			if n++; n <= 2 {
				return errHedged
			}
			return stats.AnswerOf(stats.Class3xx, 1)
		}); err != nil {
			t.Fatalf("an Answer after two failures: %v, want nil", err)
		}
		if err := retry.Do(ctx, p, func(context.Context) error { return stats.AnswerOf(stats.Class4xx, 0) }); err != nil {
			t.Fatalf("an Answer at once: %v, want nil", err)
		}
		var e *retry.Error
		if err := retry.Do(ctx, p, func(context.Context) error { return errHedged }); !errors.As(err, &e) || e.Err != errHedged {
			t.Fatalf("3 failures: %v, want an Error of the last", err)
		}
		if err := retry.Do(ctx, p, func(context.Context) error { return errors.New("refused") }); err == nil {
			t.Fatal("a failure: nil")
		}
		for _, err := range seen {
			var a stats.Answer
			if errors.As(err, &a) {
				t.Fatalf("a hook saw the Answer: %v", seen)
			}
		}

		c := table.Of("n")
		if want := (retry.Status{S3xx: 1, S4xx: 1, S5xx: 1, NoResponse: 1}); c.Status != want {
			t.Errorf("status %+v, want %+v", c.Status, want)
		}
		// Hedges per call: 2+2+1 = 5, 0, 2+2+2 = 6, 0.
		if want := (retry.PerCall{Counts: [6]uint64{2, 0, 0, 0, 0, 2}, Sum: 11}); c.HedgesPerCall != want {
			t.Errorf("hedges per call %+v, want %+v", c.HedgesPerCall, want)
		}
		if want := (retry.PerCall{Counts: [6]uint64{1, 0, 3}, Sum: 6}); c.RetriesPerCall != want {
			t.Errorf("retries per call %+v, want %+v", c.RetriesPerCall, want)
		}
	})
}
