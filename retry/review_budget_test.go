package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff/retry"
)

// TestBudgetFullOwes: retry.Budget.Full says "every retry it allowed
// has been given back or earned again"; a Budget that allowed 5 retries
// and earned none back reports Full once its room has faded.
func TestBudgetFullOwes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &retry.Budget{}
		for range 5 {
			if !b.Allow() {
				t.Fatal("a new Budget refused one of its first 5 retries")
			}
		}
		time.Sleep(time.Minute)
		if b.Full() {
			t.Fatalf("Full() = true with Tokens() = %v after 5 retries spent and none earned back or given back", b.Tokens())
		}
		time.Sleep(4 * time.Minute) // 5 minutes unasked: what it owed is forgiven
		if !b.Full() {
			t.Fatalf("Full() = false after 5 minutes unasked")
		}
	})
}

// TestBudgetFullExact: Full is exact to the thousandth: a retry allowed is
// owed until given back, or earned again in whole by the calls after it;
// a Budget unasked for just under 5 minutes still owes it.
func TestBudgetFullExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ok := func(context.Context) error { return nil }
		b := &retry.Budget{Ratio: 0.999}
		p := retry.Policy{Budget: b}
		if !b.Allow() {
			t.Fatal("a new Budget refused a retry")
		}
		retry.Do(context.Background(), p, ok) // earns 0.999 of the 1 owed
		if b.Full() {
			t.Fatal("Full with a thousandth of a retry still owed")
		}
		retry.Do(context.Background(), p, ok)
		if !b.Full() {
			t.Fatal("not Full once the retry was earned again")
		}

		// Given back: a retry whose attempt succeeds owes nothing, with
		// nothing earned; one of two taken before is still owed.
		b = &retry.Budget{Ratio: -1}
		p = retry.Policy{Budget: b, Schedule: constant(time.Millisecond, 3)}
		n := 0
		retry.Do(context.Background(), p, func(context.Context) error {
			if n++; n == 1 {
				return errors.New("once")
			}
			return nil
		})
		if !b.Full() {
			t.Fatal("not Full after the one retry it allowed was given back")
		}
		b.Allow()
		b.Allow()
		n = 0
		retry.Do(context.Background(), p, func(context.Context) error {
			if n++; n == 1 {
				return errors.New("once")
			}
			return nil
		})
		if b.Full() {
			t.Fatal("Full with two retries owed and a third given back")
		}
		time.Sleep(5*time.Minute - time.Second)
		if b.Full() {
			t.Fatal("Full after 4m59s unasked: what it owes is forgiven only at 5 minutes")
		}

		// Earned and given back together: never owed below nothing.
		b = &retry.Budget{Ratio: 0.75}
		p = retry.Policy{Budget: b, Schedule: constant(time.Millisecond, 3)}
		b.Allow()
		retry.Do(context.Background(), p, ok) // 0.25 owed
		n = 0
		retry.Do(context.Background(), p, func(context.Context) error {
			if n++; n == 1 {
				return errors.New("once")
			}
			return nil
		}) // 1.25, less 0.75 earned, less 1 given back
		if !b.Full() {
			t.Fatal("not Full when what it earned and gave back pay more than it owed")
		}
	})
}
