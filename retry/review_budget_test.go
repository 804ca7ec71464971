package retry_test

import (
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
