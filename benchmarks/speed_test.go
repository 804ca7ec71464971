package benchmarks

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	avast "github.com/avast/retry-go/v5"
	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	cenkaltiv4 "github.com/cenkalti/backoff/v4"
	cenkaltiv5 "github.com/cenkalti/backoff/v5"
	cenkaltiv7 "github.com/cenkalti/backoff/v7"
	retryablehttp "github.com/hashicorp/go-retryablehttp"
	jpillora "github.com/jpillora/backoff"
	sethvargo "github.com/sethvargo/go-retry"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/unherd/backoff"
)

// The speed workload: one wait in a retry sequence of base 100ms, cap 30s,
// ×2, ten attempts long (100ms … 25.6s, then the cap), repeated. Stateless
// calls get attempt 1…10 in turn; stateful ones are reset (or rebuilt, when
// they have no Reset) every ten waits, as a retry loop does after a success.
// Every figure is per wait.
//
//	go test -run '^$' -bench . -benchmem -count 10 | tee bench.txt
//	go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da bench.txt
const (
	base   = 100 * time.Millisecond
	cap    = 30 * time.Second
	seqLen = 10
)

var (
	sink    time.Duration
	errSink error
)

// floorFull is the least work any correct full-jitter wait can take: one
// shift against the cap and one draw from math/rand/v2.
func floorFull(attempt int) time.Duration {
	d := cap
	if n := uint(attempt - 1); n < 63 && base <= cap>>n {
		d = base << n
	}
	return time.Duration(rand.Int64N(int64(d) + 1))
}

// floorNone is the same without the draw.
func floorNone(attempt int) time.Duration {
	if n := uint(attempt - 1); n < 63 && base <= cap>>n {
		return base << n
	}
	return cap
}

// A contender is one library's comparable call, built fresh for each
// goroutine: next gives the wait for attempt (1…seqLen) of the sequence.
type contender struct {
	name string
	new  func() (next func(attempt int) time.Duration)
}

var fullJitter = []contender{
	{"floor", func() func(int) time.Duration { return floorFull }},
	{"unherd-Value.Delay", func() func(int) time.Duration {
		return backoff.Value{BaseDelay: base, MaxDelay: cap}.Delay
	}},
	{"unherd-Schedule.Next", scheduleSequence(backoff.JitterFull)},
	{"cenkalti-v4", func() func(int) time.Duration {
		b := cenkaltiv4.NewExponentialBackOff(cenkaltiv4.WithInitialInterval(base), cenkaltiv4.WithMaxInterval(cap), cenkaltiv4.WithMultiplier(2), cenkaltiv4.WithMaxElapsedTime(0))
		return func(a int) time.Duration {
			if a == 1 {
				b.Reset()
			}
			return b.NextBackOff()
		}
	}},
	{"cenkalti-v5", func() func(int) time.Duration {
		b := &cenkaltiv5.ExponentialBackOff{InitialInterval: base, RandomizationFactor: 0.5, Multiplier: 2, MaxInterval: cap}
		return func(a int) time.Duration {
			if a == 1 {
				b.Reset()
			}
			return b.NextBackOff()
		}
	}},
	{"cenkalti-v7", func() func(int) time.Duration {
		b := &cenkaltiv7.ExponentialBackOff{InitialInterval: base, RandomizationFactor: 0.5, Multiplier: 2, MaxInterval: cap}
		return func(a int) time.Duration {
			if a == 1 {
				b.Reset()
			}
			return b.NextBackOff()
		}
	}},
	{"jpillora", func() func(int) time.Duration {
		b := &jpillora.Backoff{Min: base, Max: cap, Factor: 2, Jitter: true}
		return func(a int) time.Duration { return b.ForAttempt(float64(a - 1)) }
	}},
	{"sethvargo", sethvargoSequence(true)},
	{"avast-v5", avastSequence(avast.FullJitterBackoffDelay)},
	{"aws-v2", func() func(int) time.Duration {
		b := awsretry.NewExponentialJitterBackoff(cap) // its base is fixed at 1s
		return func(a int) time.Duration {
			d, err := b.BackoffDelay(a, errFail)
			errSink = err
			return d
		}
	}},
	{"retryablehttp-LinearJitter", func() func(int) time.Duration {
		return func(a int) time.Duration { return retryablehttp.LinearJitterBackoff(base, cap, a-1, nil) }
	}},
	{"k8s-wait", func() func(int) time.Duration {
		init := wait.Backoff{Duration: base, Factor: 2, Jitter: 0.5, Steps: 1 << 30, Cap: cap}
		b := init
		return func(a int) time.Duration {
			if a == 1 {
				b = init
			}
			return b.Step()
		}
	}},
}

var noJitter = []contender{
	{"floor", func() func(int) time.Duration { return floorNone }},
	{"unherd-Value.Delay", func() func(int) time.Duration {
		return backoff.Value{BaseDelay: base, MaxDelay: cap, JitterMode: backoff.JitterNone}.Delay
	}},
	{"unherd-Schedule.Next", scheduleSequence(backoff.JitterNone)},
	{"cenkalti-v4", func() func(int) time.Duration {
		b := cenkaltiv4.NewExponentialBackOff(cenkaltiv4.WithInitialInterval(base), cenkaltiv4.WithMaxInterval(cap), cenkaltiv4.WithMultiplier(2), cenkaltiv4.WithMaxElapsedTime(0), cenkaltiv4.WithRandomizationFactor(0))
		return func(a int) time.Duration {
			if a == 1 {
				b.Reset()
			}
			return b.NextBackOff()
		}
	}},
	{"cenkalti-v5", func() func(int) time.Duration {
		b := &cenkaltiv5.ExponentialBackOff{InitialInterval: base, Multiplier: 2, MaxInterval: cap}
		return func(a int) time.Duration {
			if a == 1 {
				b.Reset()
			}
			return b.NextBackOff()
		}
	}},
	{"cenkalti-v7", func() func(int) time.Duration {
		b := &cenkaltiv7.ExponentialBackOff{InitialInterval: base, Multiplier: 2, MaxInterval: cap}
		return func(a int) time.Duration {
			if a == 1 {
				b.Reset()
			}
			return b.NextBackOff()
		}
	}},
	{"jpillora", func() func(int) time.Duration {
		b := &jpillora.Backoff{Min: base, Max: cap, Factor: 2}
		return func(a int) time.Duration { return b.ForAttempt(float64(a - 1)) }
	}},
	{"sethvargo", sethvargoSequence(false)},
	{"avast-v5", avastSequence(avast.BackOffDelay)},
	{"retryablehttp-Default", func() func(int) time.Duration {
		return func(a int) time.Duration { return retryablehttp.DefaultBackoff(base, cap, a-1, nil) }
	}},
	{"k8s-wait", func() func(int) time.Duration {
		init := wait.Backoff{Duration: base, Factor: 2, Steps: 1 << 30, Cap: cap}
		b := init
		return func(a int) time.Duration {
			if a == 1 {
				b = init
			}
			return b.Step()
		}
	}},
}

// scheduleSequence runs our Schedule, reset at the start of each sequence.
func scheduleSequence(mode backoff.JitterMode) func() func(int) time.Duration {
	return func() func(int) time.Duration {
		s := &backoff.Schedule{Curve: backoff.Value{BaseDelay: base, MaxDelay: cap, JitterMode: mode}}
		return func(a int) time.Duration {
			if a == 1 {
				s.Reset()
			}
			d, _ := s.Next()
			return d
		}
	}
}

// sethvargoSequence rebuilds go-retry's capped exponential (jittered or not)
// at the start of each sequence: it has no Reset.
func sethvargoSequence(fullJitter bool) func() func(int) time.Duration {
	return func() func(int) time.Duration {
		var b sethvargo.Backoff
		return func(a int) time.Duration {
			if a == 1 {
				b = sethvargo.WithCappedDuration(cap, sethvargo.NewExponential(base))
				if fullJitter {
					b = sethvargo.WithFullJitter(b)
				}
			}
			d, _ := b.Next()
			return d
		}
	}
}

// avastSequence calls one of retry-go's delay types and clamps at MaxDelay,
// as its Do loop does.
func avastSequence(delay avast.DelayTypeFunc) func() func(int) time.Duration {
	return func() func(int) time.Duration {
		r := avast.New(avast.Delay(base), avast.MaxDelay(cap))
		return func(a int) time.Duration { return min(delay(uint(a), errFail, r), cap) }
	}
}

func runSequential(b *testing.B, cs []contender) {
	for _, c := range cs {
		b.Run(c.name, func(b *testing.B) {
			next := c.new()
			a := 0
			for b.Loop() {
				a = a%seqLen + 1
				sink = next(a)
			}
		})
	}
}

func runParallel(b *testing.B, cs []contender) {
	for _, c := range cs {
		b.Run(c.name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				next := c.new() // one sequence per goroutine: stateful peers are not safe to share
				var d time.Duration
				a := 0
				for pb.Next() {
					a = a%seqLen + 1
					d += next(a)
				}
				sink = d
			})
		})
	}
}

func BenchmarkFull(b *testing.B)         { runSequential(b, fullJitter) }
func BenchmarkNone(b *testing.B)         { runSequential(b, noJitter) }
func BenchmarkFullParallel(b *testing.B) { runParallel(b, fullJitter) }
func BenchmarkNoneParallel(b *testing.B) { runParallel(b, noJitter) }

// BenchmarkAttempt shows Delay is O(1) in the attempt: attempt 1<<40 costs
// what attempt 7 does, for any multiplier.
func BenchmarkAttempt(b *testing.B) {
	for _, m := range []float64{2, 1.5, 1.0001} {
		for _, a := range []int{7, 1 << 40} {
			b.Run(fmt.Sprintf("mult=%v/attempt=%d", m, a), func(b *testing.B) {
				v := backoff.Value{BaseDelay: base, MaxDelay: cap, Multiplier: m}
				for b.Loop() {
					sink = v.Delay(a)
				}
			})
		}
	}
}

// The direct-call harness: each library called as its users call it, with
// no func value in between: Value.Delay on a struct field, NextBackOff and
// Step on a pointer, the floor inlined whole. Same workload, same interleaved
// rounds. A stateful peer is reset (or rebuilt) at attempt 1, as above.

func BenchmarkDirectFull(b *testing.B) { benchDirect(b, true) }
func BenchmarkDirectNone(b *testing.B) { benchDirect(b, false) }

// benchDirect runs every contender of the direct-call harness, with full
// jitter (each peer's nearest) or without.
func benchDirect(b *testing.B, jitter bool) {
	curve, rf := backoff.Value{BaseDelay: base, MaxDelay: cap, JitterMode: backoff.JitterNone}, 0.0
	if jitter {
		curve, rf = backoff.Value{BaseDelay: base, MaxDelay: cap}, 0.5
	}
	caller := struct{ curve backoff.Value }{curve} // a Value as users hold one: a struct field
	b.Run("floor", func(b *testing.B) {
		a := 0
		if jitter {
			for b.Loop() {
				a = a%seqLen + 1
				sink = floorFull(a)
			}
			return
		}
		for b.Loop() {
			a = a%seqLen + 1
			sink = floorNone(a)
		}
	})
	b.Run("unherd-Value.Delay", func(b *testing.B) {
		a := 0
		for b.Loop() {
			a = a%seqLen + 1
			sink = caller.curve.Delay(a)
		}
	})
	b.Run("unherd-Schedule.Next", func(b *testing.B) {
		s := &backoff.Schedule{Curve: curve}
		a := 0
		for b.Loop() {
			if a = a%seqLen + 1; a == 1 {
				s.Reset()
			}
			sink, _ = s.Next()
		}
	})
	b.Run("cenkalti-v4", func(b *testing.B) {
		bo := cenkaltiv4.NewExponentialBackOff(cenkaltiv4.WithInitialInterval(base), cenkaltiv4.WithMaxInterval(cap), cenkaltiv4.WithMultiplier(2), cenkaltiv4.WithMaxElapsedTime(0), cenkaltiv4.WithRandomizationFactor(rf))
		a := 0
		for b.Loop() {
			if a = a%seqLen + 1; a == 1 {
				bo.Reset()
			}
			sink = bo.NextBackOff()
		}
	})
	b.Run("cenkalti-v5", func(b *testing.B) {
		bo := &cenkaltiv5.ExponentialBackOff{InitialInterval: base, RandomizationFactor: rf, Multiplier: 2, MaxInterval: cap}
		a := 0
		for b.Loop() {
			if a = a%seqLen + 1; a == 1 {
				bo.Reset()
			}
			sink = bo.NextBackOff()
		}
	})
	b.Run("cenkalti-v7", func(b *testing.B) {
		bo := &cenkaltiv7.ExponentialBackOff{InitialInterval: base, RandomizationFactor: rf, Multiplier: 2, MaxInterval: cap}
		a := 0
		for b.Loop() {
			if a = a%seqLen + 1; a == 1 {
				bo.Reset()
			}
			sink = bo.NextBackOff()
		}
	})
	b.Run("k8s-wait", func(b *testing.B) {
		init := wait.Backoff{Duration: base, Factor: 2, Jitter: rf, Steps: 1 << 30, Cap: cap}
		bo := init
		a := 0
		for b.Loop() {
			if a = a%seqLen + 1; a == 1 {
				bo = init
			}
			sink = bo.Step()
		}
	})
}
