package retry

import (
	"context"
	"math"
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

// FuzzMilli: a field read to three places is never more than it says
// and less by under a thousandth, and a value written with three places
// ("1.001") reads as exactly that many thousandths.
func FuzzMilli(f *testing.F) {
	for _, x := range []float64{0.001, 0.2, 0.9996, 1.001, 2.5, 4.5e12, 1e-9} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		if !(x > 0) || x >= milliMax/milliUnit {
			return
		}
		m := float64(milli(x, -1))
		if m/milliUnit > x || x-m/milliUnit >= 1.0/milliUnit*(1+1e-9) {
			t.Fatalf("milli(%v) = %v thousandths", x, m)
		}
		if n := math.Floor(x * milliUnit); n < 1<<40 {
			if three := n / milliUnit; milli(three, -1) != int64(n) && three > 0 {
				t.Fatalf("milli(%v), three places, = %v thousandths, want %v", three, milli(three, -1), n)
			}
		}
	})
}
