package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/retry"
)

// The happy path: fn succeeds at once. benchmarks/ runs the same against
// the peers, interleaved; these keep the package's own numbers honest.
func BenchmarkDo(b *testing.B) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	var p retry.Policy
	b.ReportAllocs()
	for b.Loop() {
		retry.Do(ctx, p, ok)
	}
}

// BenchmarkDoNamed: the happy path under a Policy.Name, which adds a
// cached row lookup and one atomic add: compare with BenchmarkDo.
func BenchmarkDoNamed(b *testing.B) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	p := retry.Policy{Name: "bench"}
	b.ReportAllocs()
	for b.Loop() {
		retry.Do(ctx, p, ok)
	}
}

// BenchmarkDoNamedParallel: 64 goroutines' calls under one name, every
// core adding to one row.
func BenchmarkDoNamedParallel(b *testing.B) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	p := retry.Policy{Name: "bench-parallel"}
	b.SetParallelism(32) // 64 goroutines on 2 processors
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			retry.Do(ctx, p, ok)
		}
	})
}

// BenchmarkDoParallel is BenchmarkDoNamedParallel without the Name.
func BenchmarkDoParallel(b *testing.B) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	var p retry.Policy
	b.SetParallelism(32)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			retry.Do(ctx, p, ok)
		}
	})
}

// BenchmarkDoBudget: the happy path with a Budget, which adds one atomic
// add (and, one call in 64, a lock to reckon its room): compare with
// BenchmarkDo.
func BenchmarkDoBudget(b *testing.B) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	p := retry.Policy{Budget: &retry.Budget{}}
	b.ReportAllocs()
	for b.Loop() {
		retry.Do(ctx, p, ok)
	}
}

// BenchmarkBudgetParallel: every goroutine's calls on one Budget, as a
// server's are: nine in ten succeed at once, one in ten fails once and
// retries without a wait, so the Budget earns and spends from every core.
func BenchmarkBudgetParallel(b *testing.B) {
	ctx := context.Background()
	budget := &retry.Budget{}
	fault := errors.New("fault")
	p := retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: 1}, Budget: budget}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		n := 0
		for pb.Next() {
			n++
			first := true
			retry.Do(ctx, p, func(context.Context) error {
				if n%10 == 0 && first {
					first = false
					return fault
				}
				return nil
			})
		}
	})
}

func BenchmarkDoValue(b *testing.B) {
	ctx := context.Background()
	ok := func(context.Context) (int, error) { return 1, nil }
	var p retry.Policy
	b.ReportAllocs()
	for b.Loop() {
		retry.DoValue(ctx, p, ok)
	}
}

// BenchmarkDoTwoRetries: two failures, then success, with no wait: the cost
// of the loop itself (a Schedule copy, the classifier, two Nexts, the clock).
func BenchmarkDoTwoRetries(b *testing.B) {
	ctx := context.Background()
	p := retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: 5}}
	err := errors.New("fault")
	calls := 0
	fn := func(context.Context) error {
		if calls++; calls%3 != 0 {
			return err
		}
		return nil
	}
	b.ReportAllocs()
	for b.Loop() {
		retry.Do(ctx, p, fn)
	}
}

// BenchmarkDoRetry: the cost of one more retry with no wait, measured over
// sequences of 100.
func BenchmarkDoRetry(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	p := retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: 99}}
	err := errors.New("fault")
	fn := func(context.Context) error { return err }
	b.ReportAllocs()
	for b.Loop() {
		retry.Do(ctx, p, fn)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/attempt")
}

func BenchmarkSleepZero(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		retry.Sleep(ctx, 0)
	}
}

func BenchmarkLoopWait(b *testing.B) {
	ctx := context.Background()
	loop := retry.NewLoop(retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}}})
	b.ReportAllocs()
	for b.Loop() {
		loop.Wait(ctx)
	}
}

func BenchmarkIsPermanent(b *testing.B) {
	err := errors.Join(errors.New("a"), retry.Permanent(errors.New("b")))
	b.ReportAllocs()
	for b.Loop() {
		retry.IsPermanent(err)
	}
}

func BenchmarkNow(b *testing.B) {
	for b.Loop() {
		time.Now()
	}
}
