package benchmarks

import (
	"context"
	"testing"
	"time"

	avast "github.com/avast/retry-go/v5"
	cenkaltiv7 "github.com/cenkalti/backoff/v7"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	sethvargo "github.com/sethvargo/go-retry"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/retry"
)

// The cost of the retry loop itself, each library used as generously as it
// allows: whatever can be built once is built once, outside the timed
// loop. Two workloads:
//
//   - Happy: the operation succeeds at once. "direct" calls it with no
//     retry loop: the floor.
//   - TwoRetries: it fails twice, then succeeds, with every wait zero: the
//     loop's own cost per retry is (TwoRetries − Happy) / 2.
//
// Rounds of the whole set, interleaved (each round runs every benchmark
// once, so a noisy minute lands on all of them):
//
//	go test -c -o bench.test . && for i in $(seq 10); do ./bench.test -test.run '^$' -test.bench 'Retry(Happy|TwoRetries)' -test.benchmem; done > loops.txt
//	go run ./cmd/speedtable -loops < loops.txt

// loopContender is one library's retry call around op, with zero waits
// and room for at least two retries.
type loopContender struct {
	name string
	// build returns the call, with everything the library lets a user
	// build once already built.
	build func(op func(context.Context) error) func(ctx context.Context) error
}

var loopContenders = []loopContender{
	{"direct", func(op func(context.Context) error) func(context.Context) error {
		return op
	}},
	{"unherd-retry.Do", func(op func(context.Context) error) func(context.Context) error {
		p := retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: 5}}
		return func(ctx context.Context) error { return retry.Do(ctx, p, op) }
	}},
	// With a Budget that earns what the workload spends (2 retries a call
	// at most, 2 earned by each success), so that it never refuses here.
	{"unherd-retry.Do-Budget", func(op func(context.Context) error) func(context.Context) error {
		p := retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: 5}, Budget: &retry.Budget{Ratio: 2}}
		return func(ctx context.Context) error { return retry.Do(ctx, p, op) }
	}},
	{"cenkalti-v7.Retry", func(op func(context.Context) error) func(context.Context) error {
		opts := []cenkaltiv7.RetryOption{cenkaltiv7.WithBackOff(&cenkaltiv7.ZeroBackOff{}), cenkaltiv7.WithMaxTries(6)}
		return func(ctx context.Context) error {
			_, err := cenkaltiv7.Retry(ctx, func() (struct{}, error) { return struct{}{}, op(ctx) }, opts...)
			return err
		}
	}},
	{"sethvargo.Do", func(op func(context.Context) error) func(context.Context) error {
		// A stateless backoff can be shared; WithMaxRetries is stateful, so
		// the limit is left out, which flatters it.
		next := sethvargo.BackoffFunc(func() (time.Duration, bool) { return 0, false })
		f := func(ctx context.Context) error { return sethvargo.RetryableError(op(ctx)) }
		return func(ctx context.Context) error { return sethvargo.Do(ctx, next, f) }
	}},
	{"avast-v5.Retrier.Do", func(op func(context.Context) error) func(context.Context) error {
		// A Retrier is reusable, but its context is fixed when it is built:
		// Background here, which flatters it.
		r := avast.New(avast.Attempts(6), avast.Delay(0), avast.DelayType(avast.FixedDelay), avast.LastErrorOnly(true))
		ctx := context.Background()
		f := func() error { return op(ctx) }
		return func(context.Context) error { return r.Do(f) }
	}},
	{"failsafe-go.Run", func(op func(context.Context) error) func(context.Context) error {
		e := failsafe.With[any](retrypolicy.NewBuilder[any]().WithMaxRetries(5).Build())
		return func(ctx context.Context) error {
			return e.WithContext(ctx).RunWithExecution(func(exec failsafe.Execution[any]) error { return op(exec.Context()) })
		}
	}},
}

func runLoopBench(b *testing.B, failures int) {
	for _, c := range loopContenders {
		b.Run(c.name, func(b *testing.B) {
			calls := 0
			op := func(context.Context) error {
				if calls++; calls%(failures+1) != 0 {
					return errRefused
				}
				return nil
			}
			call := c.build(op)
			ctx := context.Background()
			if c.name == "direct" && failures > 0 {
				call = func(ctx context.Context) error { // the floor: the same calls, with no loop around them
					for op(ctx) != nil {
					}
					return nil
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := call(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkRetryHappy(b *testing.B)      { runLoopBench(b, 0) }
func BenchmarkRetryTwoRetries(b *testing.B) { runLoopBench(b, 2) }

// BenchmarkRetryDeadline is retry.Do under a context with a deadline: each
// retry then reads the clock once, for the deadline rule.
func BenchmarkRetryDeadline(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	p := retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: 5}}
	for _, failures := range []int{0, 2} {
		b.Run(map[int]string{0: "Happy", 2: "TwoRetries"}[failures], func(b *testing.B) {
			calls := 0
			op := func(context.Context) error {
				if calls++; calls%(failures+1) != 0 {
					return errRefused
				}
				return nil
			}
			b.ReportAllocs()
			for b.Loop() {
				retry.Do(ctx, p, op)
			}
		})
	}
}

// BenchmarkClock is one time.Now: what retry.Do pays on its happy path for
// Elapsed and the deadline rule, and what the fastest peer does not.
func BenchmarkClock(b *testing.B) {
	for b.Loop() {
		time.Now()
	}
}
