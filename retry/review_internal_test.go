package retry

import (
	"context"
	"testing"
	"time"
)

// TestBudgetHappyPathNeverWaits: a call that succeeds at once never
// waits for the Budget's lock (SPEC: "adds at most one atomic operation
// and no lock"): with the lock held elsewhere, 128 such calls, two of them
// 64th calls that try it, all return.
func TestBudgetHappyPathNeverWaits(t *testing.T) {
	b := &Budget{}
	p := Policy{Budget: b}
	b.mu.Lock()
	done := make(chan int, 1)
	go func() {
		n := 0
		for range 128 {
			Do(context.Background(), p, func(context.Context) error { return nil })
			n++
		}
		done <- n
	}()
	select {
	case <-done:
		b.mu.Unlock()
	case <-time.After(time.Second):
		b.mu.Unlock()
		<-done
		t.Fatal("128 calls that succeeded at once blocked on the Budget's lock")
	}
}
