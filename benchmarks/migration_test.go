package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	avast "github.com/avast/retry-go/v5"
	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	cenkaltiv4 "github.com/cenkalti/backoff/v4"
	cenkaltiv5 "github.com/cenkalti/backoff/v5"
	cenkaltiv7 "github.com/cenkalti/backoff/v7"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	retryablehttp "github.com/hashicorp/go-retryablehttp"
	jpillora "github.com/jpillora/backoff"
	sethvargo "github.com/sethvargo/go-retry"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/retry"
)

// The migration table: for each peer policy, the Schedule that matches it,
// proven draw for draw. Print it with
//
//	go test -run TestMigration -v
const (
	migrationAttempts = 8     // attempts compared: 1 … 8
	migrationDraws    = 20000 // draws per attempt, from each side
	// migrationFalseFailure bounds the chance that one run of TestMigration
	// fails on a table whose every row is right.
	migrationFalseFailure = 1e-9
)

// migrationAlpha is each comparison's share of migrationFalseFailure, as
// Bonferroni shares it: TestMigration makes at most one random comparison
// per row and attempt, and the table has at most migrationRows rows (it
// fails if it outgrows them), so the chance that any comparison fails on a
// right row is at most their number times this: 1e-9/(32×8), about 4e-12.
//
// Seeding cannot remove the chance: of the peers, only the gRPC rows (our
// own transcriptions) take a source. cenkalti v5 and v7, sethvargo and
// failsafe-go draw from math/rand/v2's package-level source and AWS from
// crypto/rand, which cannot be seeded; go-retryablehttp seeds a source
// from the clock on every call; cenkalti v4, k8s, jpillora and avast draw
// from math/rand's, which rand.Seed seeds only under GODEBUG=randseednop=0
// since Go 1.24, and for the whole test binary at once (rejected for
// that). So the gRPC rows are seeded, both sides, and pass or fail the
// same way every run. The others compare two unseeded samples: ours is
// left unseeded beside them, since the bounds (ksCritical) are for two
// independent samples, and one fixed sample would make them hold on
// average over seeds, not for the seed chosen.
const (
	migrationRows  = 32
	migrationAlpha = migrationFalseFailure / (migrationRows * migrationAttempts)
)

// A migration is one peer policy and ours.
type migration struct {
	Peer    string // the library and the call
	Config  string // the peer's configuration, in its own terms
	Policy  string // ours, as policy text (Schedule.UnmarshalText reads it)
	Differs string // what differs, in one line; "" when nothing does
	Short   string // what differs, shorter, for the README's table; "" leaves the row out
	// Sequence starts a fresh sequence of the peer's and returns its first
	// migrationAttempts waits. Only a Seeded row's Sequence draws from r.
	Sequence func(r *rand.Rand) []time.Duration
	// Seeded says Sequence draws from r alone: the row is then drawn from
	// fixed seeds, both sides, and its result is the same every run.
	Seeded bool
	// Check, when set, replaces the two-sample KS test at the attempts
	// where the peer is known to differ (or not to be expressible): it
	// says what is true instead, returning a mismatch, or "" for none. It
	// returns checked false where the KS test should still run.
	Check func(attempt int, peer, ours []time.Duration) (checked bool, mismatch string)
}

// first returns the first migrationAttempts waits of next.
func first(next func(attempt int) time.Duration) []time.Duration {
	ws := make([]time.Duration, migrationAttempts)
	for i := range ws {
		ws[i] = next(i + 1)
	}
	return ws
}

// grpcConnection transcribes grpc-go v1.85.0 internal/backoff
// Exponential.Backoff with backoff.DefaultConfig (BaseDelay 1s, Multiplier
// 1.6, Jitter 0.2, MaxDelay 120s): it is internal, so it cannot be
// imported. retries counts from 0; r stands in for grpc-go's package-level
// source.
func grpcConnection(r *rand.Rand, retries int) time.Duration {
	const base, mult, jitter, maxDelay = float64(time.Second), 1.6, 0.2, float64(120 * time.Second)
	if retries == 0 {
		return time.Second
	}
	backoff := base
	for backoff < maxDelay && retries > 0 {
		backoff *= mult
		retries--
	}
	backoff = min(backoff, maxDelay)
	backoff *= 1 + jitter*(r.Float64()*2-1)
	return time.Duration(max(backoff, 0))
}

// grpcRetryA6 transcribes grpc-go v1.85.0 stream.go's retry wait (gRFC A6)
// for retryPolicy {initialBackoff 0.1s, maxBackoff 1s, backoffMultiplier 2}.
// n counts retries since the last pushback, from 0; r stands in for
// grpc-go's package-level source.
func grpcRetryA6(r *rand.Rand, n int) time.Duration {
	fact := math.Pow(2, float64(n))
	cur := min(float64(100*time.Millisecond)*fact, float64(time.Second))
	cur *= 0.8 + 0.4*r.Float64()
	return time.Duration(int64(cur))
}

var errMigrate = errors.New("503")

var migrations = []migration{
	{
		Peer: "cenkalti/backoff/v7 `ExponentialBackOff`", Short: "its 15m is wall clock, calls included: `Deadline`",
		Config: "defaults: 500ms ×1.5, RandomizationFactor 0.5, MaxInterval 60s; `Retry` stops after 15m",
		Policy: "500ms×1.5 up to 1m30s, symmetric jitter 0.5, 15m0s of waiting",
		Differs: "its 15m (`WithMaxElapsedTime`) is wall clock, calls included: for that, set `Deadline`; " +
			"MaxInterval caps before the ±50%, so the matching MaxDelay is 60s×1.5",
		Sequence: func(*rand.Rand) []time.Duration {
			b := cenkaltiv7.NewExponentialBackOff()
			b.Reset()
			return first(func(int) time.Duration { return b.NextBackOff() })
		},
	},
	{
		Peer:   "cenkalti/backoff/v7 `ExponentialBackOff`",
		Config: "100ms ×2, RandomizationFactor 0.2, MaxInterval 10s; `WithMaxTries(6)`",
		Policy: "100ms×2 up to 12s, symmetric jitter 0.2, 5 retries",
		Sequence: func(*rand.Rand) []time.Duration {
			b := &cenkaltiv7.ExponentialBackOff{InitialInterval: 100 * time.Millisecond, RandomizationFactor: 0.2, Multiplier: 2, MaxInterval: 10 * time.Second}
			b.Reset()
			return first(func(int) time.Duration { return b.NextBackOff() })
		},
	},
	{
		Peer:    "cenkalti/backoff/v5 `ExponentialBackOff`",
		Config:  "defaults: as v7",
		Policy:  "500ms×1.5 up to 1m30s, symmetric jitter 0.5, 15m0s of waiting",
		Differs: "as v7",
		Sequence: func(*rand.Rand) []time.Duration {
			b := cenkaltiv5.NewExponentialBackOff()
			b.Reset()
			return first(func(int) time.Duration { return b.NextBackOff() })
		},
	},
	{
		Peer:    "cenkalti/backoff/v4 `ExponentialBackOff`",
		Config:  "defaults: as v7, with MaxElapsedTime 15m on the backoff itself",
		Policy:  "500ms×1.5 up to 1m30s, symmetric jitter 0.5, 15m0s of waiting",
		Differs: "as v7; and it signals the end in band, with `Stop` (−1)",
		Sequence: func(*rand.Rand) []time.Duration {
			b := cenkaltiv4.NewExponentialBackOff()
			b.Reset()
			return first(func(int) time.Duration { return b.NextBackOff() })
		},
	},
	{
		Peer: "k8s.io/apimachinery `wait.Backoff`", Short: "reaching Cap ends `wait.ExponentialBackoff`",
		Config:  "Duration 1s, Factor 2, Jitter 0.5, Cap 30s",
		Policy:  "1s×2 up to 45s, additive jitter 0.5",
		Differs: "Cap applies before the jitter, so the matching MaxDelay is 30s×1.5; reaching Cap ends `wait.ExponentialBackoff`; Factor 0 is constant there (here `×1`)",
		Sequence: func(*rand.Rand) []time.Duration {
			b := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.5, Cap: 30 * time.Second, Steps: math.MaxInt32}
			return first(func(int) time.Duration { return b.Step() })
		},
	},
	{
		Peer:    "k8s.io/client-go `retry.DefaultBackoff`",
		Config:  "Steps 4, Duration 10ms, Factor 5, Jitter 0.1",
		Policy:  "10ms×5 uncapped, additive jitter 0.1, 3 retries",
		Differs: "Steps counts attempts: 4 steps are 3 waits",
		Sequence: func(*rand.Rand) []time.Duration {
			b := wait.Backoff{Steps: math.MaxInt32, Duration: 10 * time.Millisecond, Factor: 5, Jitter: 0.1} // client-go's, with room for 8
			return first(func(int) time.Duration { return b.Step() })
		},
	},
	{
		Peer: "AWS standard retry (aws-sdk-go-v2 `retry.NewStandard`)", Short: "throttling errors: base 1s",
		Config:  "defaults: MaxAttempts 3, base 50ms (1s for throttling errors), MaxBackoff 20s, full jitter",
		Policy:  "50ms×2 up to 20s, full jitter, 2 retries",
		Differs: "throttling errors: `1s×2 up to 20s, full jitter, 2 retries`; its retry quota (token bucket) is outside a backoff",
		Sequence: func(*rand.Rand) []time.Duration {
			s := awsretry.NewStandard()
			return first(func(a int) time.Duration { d, _ := s.RetryDelay(a, errMigrate); return d })
		},
	},
	{
		Peer:    "aws-sdk-go-v2 `retry.NewExponentialJitterBackoff(20s)` (before 2026)",
		Config:  "full jitter over 1s×2^attempt; past log2(20) attempts, 20s exactly",
		Policy:  "2s×2 up to 20s, full jitter",
		Differs: "from attempt 5 it waits exactly 20s, unjittered: the herd returns together; ours keeps [0, 20s]",
		Sequence: func(*rand.Rand) []time.Duration {
			b := awsretry.NewExponentialJitterBackoff(20 * time.Second)
			return first(func(a int) time.Duration { d, _ := b.BackoffDelay(a, errMigrate); return d })
		},
		Check: func(attempt int, peer, ours []time.Duration) (bool, string) {
			if attempt < 5 {
				return false, ""
			}
			atCap := func(ws []time.Duration) int {
				return count(ws, func(d time.Duration) bool { return d == 20*time.Second })
			}
			// Ours are drawn from [0, 20s] in whole nanoseconds: 20s exactly
			// is one chance in 2e10 a draw.
			if atCap(peer) != len(peer) || atCap(ours) > len(ours)/1000 {
				return true, fmt.Sprintf("attempt %d: %d of the peer's waits at 20s, %d of ours; want all of its and almost none of ours", attempt, atCap(peer), atCap(ours))
			}
			return true, ""
		},
	},
	{
		Peer: "gRPC retry policy (gRFC A6, grpc-go `stream.go`)", Short: "pushback: `Override`",
		Config:  "retryPolicy: maxAttempts 4, initialBackoff 0.1s, maxBackoff 1s, backoffMultiplier 2",
		Policy:  "100ms×2 up to 1.2s, symmetric jitter 0.2, 3 retries",
		Differs: "maxAttempts counts the first call; a `grpc-retry-pushback-ms` is `Override`; maxBackoff caps before the ×[0.8, 1.2], so MaxDelay is 1s×1.2",
		Seeded:  true,
		Sequence: func(r *rand.Rand) []time.Duration {
			return first(func(a int) time.Duration { return grpcRetryA6(r, a-1) })
		},
	},
	{
		Peer: "gRPC connection backoff (grpc-go `backoff.DefaultConfig`)", Short: "its first wait is 1s exactly, unjittered",
		Config:  "BaseDelay 1s, Multiplier 1.6, Jitter 0.2, MaxDelay 120s",
		Policy:  "1s×1.6 up to 2m24s, symmetric jitter 0.2",
		Differs: "its first wait is 1s exactly, unjittered; ours spreads it over [0.8s, 1.2s]",
		Seeded:  true,
		Sequence: func(r *rand.Rand) []time.Duration {
			return first(func(a int) time.Duration { return grpcConnection(r, a-1) })
		},
		Check: func(attempt int, peer, ours []time.Duration) (bool, string) {
			if attempt != 1 {
				return false, ""
			}
			lo, hi := slices.Min(ours), slices.Max(ours)
			if slices.Min(peer) != time.Second || slices.Max(peer) != time.Second || lo < 800*time.Millisecond || hi > 1200*time.Millisecond || hi-lo < 300*time.Millisecond {
				return true, fmt.Sprintf("attempt 1: peer in [%v, %v], ours in [%v, %v]; want the peer at 1s exactly and ours spread over [0.8s, 1.2s]", slices.Min(peer), slices.Max(peer), lo, hi)
			}
			return true, ""
		},
	},
	{
		Peer: "failsafe-go `retrypolicy`", Short: "`WithMaxDuration` is wall clock: `Deadline`",
		Config:  "`WithBackoff(100ms, 10s)`, `WithJitterFactor(0.25)`, `WithMaxRetries(8)`",
		Policy:  "100ms×2 up to 12.5s, symmetric jitter 0.25, 8 retries",
		Differs: "the jitter applies after maxDelay, so MaxDelay is 10s×1.25; its `WithMaxDuration` is wall clock: `Deadline`",
		Sequence: func(*rand.Rand) []time.Duration {
			return failsafeSequence(retrypolicy.NewBuilder[any]().WithBackoff(100*time.Millisecond, 10*time.Second).WithJitterFactor(0.25))
		},
	},
	{
		Peer:    "failsafe-go `retrypolicy`",
		Config:  "defaults (`NewWithDefaults`): 2 retries, no delay",
		Policy:  "no wait, 2 retries",
		Differs: "no wait at all: a tight loop; add a backoff",
		Sequence: func(*rand.Rand) []time.Duration {
			return failsafeSequence(retrypolicy.NewBuilder[any]())
		},
	},
	{
		Peer: "hashicorp/go-retryablehttp `DefaultBackoff`", Short: "no jitter: use full jitter",
		Config:  "defaults: RetryWaitMin 1s, RetryWaitMax 30s, RetryMax 4",
		Policy:  "1s×2 up to 30s, no jitter, 4 retries",
		Differs: "no jitter: clients that failed together retry together (use full jitter); it honours Retry-After itself: here `ParseRetryAfter` and `Override`",
		Sequence: func(*rand.Rand) []time.Duration {
			return first(func(a int) time.Duration { return retryablehttp.DefaultBackoff(time.Second, 30*time.Second, a-1, nil) })
		},
	},
	{
		Peer:    "hashicorp/go-retryablehttp `LinearJitterBackoff`",
		Config:  "RetryWaitMin 1s, RetryWaitMax 30s",
		Policy:  "",
		Differs: "not expressible: linear, attempt × uniform [min, max), so nothing caps it",
		Sequence: func(*rand.Rand) []time.Duration {
			return first(func(a int) time.Duration {
				return retryablehttp.LinearJitterBackoff(time.Second, 30*time.Second, a-1, nil)
			})
		},
		Check: func(attempt int, peer, _ []time.Duration) (bool, string) {
			k := time.Duration(attempt)
			return true, oneSampleUniform(fmt.Sprintf("attempt %d", attempt), k*time.Second, k*30*time.Second, peer)
		},
	},
	{
		Peer:    "jpillora/backoff",
		Config:  "defaults: Min 100ms, Max 10s, Factor 2, no jitter",
		Policy:  "100ms×2 up to 10s, no jitter",
		Differs: "no jitter: clients that failed together retry together",
		Sequence: func(*rand.Rand) []time.Duration {
			b := &jpillora.Backoff{}
			return first(func(int) time.Duration { return b.Duration() })
		},
	},
	{
		Peer:    "jpillora/backoff",
		Config:  "Min 100ms, Max 10s, Factor 2, `Jitter: true`",
		Policy:  "100ms×2 up to 10s, full jitter",
		Differs: "not expressible: uniform over [Min, d], clamped to Max after the jitter, so past the cap the waits pile up on 10s (22% of them at attempt 8); nearest is full jitter",
		Sequence: func(*rand.Rand) []time.Duration {
			b := &jpillora.Backoff{Jitter: true}
			return first(func(int) time.Duration { return b.Duration() })
		},
		Check: func(attempt int, peer, _ []time.Duration) (bool, string) {
			g := min(100*time.Millisecond<<(attempt-1), 10*time.Second)
			if 100*time.Millisecond<<(attempt-1) <= 10*time.Second {
				return true, oneSampleUniform(fmt.Sprintf("attempt %d", attempt), 100*time.Millisecond, g, peer)
			}
			// Uniform over [Min, d] and then clamped: (d−Max)/(d−Min) of
			// the waits pile up on Max.
			d := float64(100 * time.Millisecond << (attempt - 1))
			want := (d - float64(10*time.Second)) / (d - float64(100*time.Millisecond))
			n := count(peer, func(d time.Duration) bool { return d == 10*time.Second })
			// A share of draws strays from its mean by more than this with
			// probability below migrationAlpha (Hoeffding's inequality).
			tol := math.Sqrt(math.Log(2/migrationAlpha) / (2 * float64(len(peer))))
			if got := float64(n) / float64(len(peer)); math.Abs(got-want) > tol {
				return true, fmt.Sprintf("attempt %d: %.3f of the peer's waits exactly at 10s, want %.3f ± %.3f", attempt, got, want, tol)
			}
			return true, ""
		},
	},
	{
		Peer:    "sethvargo/go-retry",
		Config:  "`WithMaxRetries(5, WithFullJitter(WithCappedDuration(10s, NewExponential(100ms))))`",
		Policy:  "100ms×2 up to 10s, full jitter, 5 retries",
		Differs: "wrap the cap inside the jitter: the other order clamps after it and collapses onto 10s",
		Sequence: func(*rand.Rand) []time.Duration {
			b := sethvargo.WithFullJitter(sethvargo.WithCappedDuration(10*time.Second, sethvargo.NewExponential(100*time.Millisecond)))
			return first(func(int) time.Duration { d, _ := b.Next(); return d })
		},
	},
	{
		Peer:    "sethvargo/go-retry",
		Config:  "`WithJitterPercent(10, WithCappedDuration(10s, NewExponential(100ms)))`",
		Policy:  "100ms×2 up to 11s, symmetric jitter 0.1",
		Differs: "not expressible: ±10% in whole percents, 20 values per attempt; nearest is symmetric jitter 0.1",
		Sequence: func(*rand.Rand) []time.Duration {
			b := sethvargo.WithJitterPercent(10, sethvargo.WithCappedDuration(10*time.Second, sethvargo.NewExponential(100*time.Millisecond)))
			return first(func(int) time.Duration { d, _ := b.Next(); return d })
		},
		Check: func(attempt int, peer, _ []time.Duration) (bool, string) {
			g := min(100*time.Millisecond<<(attempt-1), 10*time.Second)
			values := map[time.Duration]bool{}
			for _, d := range peer {
				values[d] = true
				if d <= g*9/10 || d > g*11/10 {
					return true, fmt.Sprintf("attempt %d: peer waited %v, want within (0.9, 1.1]×%v", attempt, d, g)
				}
			}
			// Each of the 20 values is missed by all 20,000 draws with
			// probability (19/20)^20000, about 1e-446.
			if len(values) != 20 {
				return true, fmt.Sprintf("attempt %d: %d distinct waits, want 20 (whole percents from −9 to +10)", attempt, len(values))
			}
			return true, ""
		},
	},
	{
		Peer:    "avast/retry-go/v5",
		Config:  "`DelayType(FullJitterBackoffDelay)`, Delay 100ms, MaxDelay 10s, Attempts 10",
		Policy:  "200ms×2 up to 10s, full jitter, 9 retries",
		Differs: "its first retry is n = 1, so its first wait is drawn under 2×Delay: our base is 200ms",
		Sequence: func(*rand.Rand) []time.Duration {
			r := avast.New(avast.Delay(100*time.Millisecond), avast.MaxDelay(10*time.Second))
			return first(func(a int) time.Duration {
				return min(avast.FullJitterBackoffDelay(uint(a), errMigrate, r), 10*time.Second)
			})
		},
	},
	{
		Peer:    "avast/retry-go/v5",
		Config:  "defaults: Delay 100ms, `BackOffDelay` + `RandomDelay` (MaxJitter 100ms), Attempts 10",
		Policy:  "100ms×2 uncapped, no jitter, 9 retries",
		Differs: "not expressible as a Value: its jitter is absolute, up to 100ms on top; add `AddJitter(wait, 100ms)` by hand",
		Sequence: func(*rand.Rand) []time.Duration {
			r := avast.New()
			delay := avast.CombineDelay(avast.BackOffDelay, avast.RandomDelay)
			return first(func(a int) time.Duration { return delay(uint(a), errMigrate, r) })
		},
		Check: func(attempt int, peer, _ []time.Duration) (bool, string) {
			g := 100 * time.Millisecond << (attempt - 1)
			return true, oneSampleUniform(fmt.Sprintf("attempt %d", attempt), g, g+100*time.Millisecond, peer)
		},
	},
}

// failsafeSequence runs an executor that always fails, in a synctest
// bubble where its sleeps take no real time, and returns the waits it
// scheduled; failsafe-go shows its delays only through its executor.
func failsafeSequence(b retrypolicy.Builder[any]) []time.Duration {
	var ws []time.Duration
	p := b.WithMaxRetries(migrationAttempts).
		OnRetryScheduled(func(e failsafe.ExecutionScheduledEvent[any]) { ws = append(ws, e.Delay) }).
		Build()
	_, _ = failsafe.With(p).Get(func() (any, error) { return nil, errMigrate })
	return ws
}

func count(ws []time.Duration, f func(time.Duration) bool) int {
	n := 0
	for _, w := range ws {
		if f(w) {
			n++
		}
	}
	return n
}

// ksCritical is the distance that the two-sample Kolmogorov–Smirnov
// statistic of two samples of n draws each from one distribution exceeds
// with probability at most alpha. For continuous draws, P(D ≥ k/n) ≤
// 2·C(2n, n−k)/C(2n, n) (Gnedenko and Korolyuk, 1951: the one-sided tail,
// twice), and C(2n, n−k)/C(2n, n) = ∏ᵢ₌₁ᵏ (1 − k/(n+i)) ≤ exp(−k²/(n+k)), so
// P(D ≥ ε) ≤ 2·exp(−nε²/(1+ε)): this is the ε that makes that alpha. It is
// a bound, not the asymptotic estimate, so it holds at any alpha, however
// small. Ties (a wait the two sides both draw) only lower the statistic.
func ksCritical(n int, alpha float64) float64 {
	l, fn := math.Log(2/alpha), float64(n)
	return (l + math.Sqrt(l*l+4*fn*l)) / (2 * fn)
}

// dkwCritical is the distance by which the empirical distribution of n
// draws strays from their own distribution with probability at most alpha:
// P(sup |Fₙ − F| > ε) ≤ 2·exp(−2nε²) (Dvoretzky, Kiefer and Wolfowitz,
// with Massart's constant, 1990).
func dkwCritical(n int, alpha float64) float64 {
	return math.Sqrt(math.Log(2/alpha) / (2 * float64(n)))
}

// ksDistance is the two-sample Kolmogorov–Smirnov statistic.
func ksDistance(a, b []time.Duration) float64 {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	var d float64
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		x := min(a[i], b[j])
		for i < len(a) && a[i] == x {
			i++
		}
		for j < len(b) && b[j] == x {
			j++
		}
		d = max(d, math.Abs(float64(i)/float64(len(a))-float64(j)/float64(len(b))))
	}
	return d
}

// oneSampleUniform says how ws are not uniform over [lo, hi], or "" when
// they are: each within the interval, and their KS distance from the
// uniform distribution within dkwCritical at migrationAlpha. (Waits are
// whole nanoseconds, which moves a distribution function by under 1e-7
// here, far inside the threshold.)
func oneSampleUniform(name string, lo, hi time.Duration, ws []time.Duration) string {
	xs := make([]float64, len(ws))
	for i, w := range ws {
		if w < lo || w > hi {
			return fmt.Sprintf("%s: %v outside [%v, %v]", name, w, lo, hi)
		}
		xs[i] = float64(w-lo) / float64(hi-lo)
	}
	slices.Sort(xs)
	var d float64
	n := float64(len(xs))
	for i, x := range xs {
		d = max(d, float64(i+1)/n-x, x-float64(i)/n)
	}
	if crit := dkwCritical(len(xs), migrationAlpha); d > crit {
		return fmt.Sprintf("%s: KS distance %.4f from uniform on [%v, %v], want below %.4f", name, d, lo, hi, crit)
	}
	return ""
}

// sample draws migrationDraws sequences from the peer and from ours, and
// returns them by attempt: [attempt-1][draw]. A Seeded row draws both
// sides from PCG streams of seed; the others from sources no one seeds.
func (m migration) sample(t *testing.T, seed uint64) (peer, ours [][]time.Duration) {
	var s backoff.Schedule // a row with no policy compares against waits of 0, and must Check every attempt
	if err := s.UnmarshalText([]byte(m.Policy)); err != nil && m.Policy != "" {
		t.Fatalf("policy %q: %v", m.Policy, err)
	}
	// The curve is compared at every attempt, whatever the limits.
	s.MaxRetries, s.MaxElapsed = 0, 0
	var r *rand.Rand
	if m.Seeded {
		r, s.Rand = rand.New(rand.NewPCG(seed, 1)), rand.New(rand.NewPCG(seed, 2))
	}
	peer = make([][]time.Duration, migrationAttempts)
	ours = make([][]time.Duration, migrationAttempts)
	draw := func() {
		for range migrationDraws {
			ws := m.Sequence(r)
			if len(ws) != migrationAttempts {
				t.Fatalf("the peer gave %d waits, want %d", len(ws), migrationAttempts)
			}
			s.Reset()
			for a := range migrationAttempts {
				d, _ := s.Next()
				peer[a] = append(peer[a], ws[a])
				ours[a] = append(ours[a], d)
			}
		}
	}
	if strings.HasPrefix(m.Peer, "failsafe-go") {
		synctest.Test(t, func(*testing.T) { draw() })
	} else {
		draw()
	}
	return peer, ours
}

// mismatches says where a row's samples do not match, attempt by attempt:
// its Check where it has one, the two-sample KS test at migrationAlpha
// elsewhere. Nil means they match.
func (m migration) mismatches(peer, ours [][]time.Duration) []string {
	var out []string
	crit := ksCritical(migrationDraws, migrationAlpha)
	for a := 1; a <= migrationAttempts; a++ {
		if m.Check != nil {
			if checked, mismatch := m.Check(a, peer[a-1], ours[a-1]); checked {
				if mismatch != "" {
					out = append(out, mismatch)
				}
				continue
			}
		}
		if d := ksDistance(peer[a-1], ours[a-1]); d > crit {
			out = append(out, fmt.Sprintf("attempt %d: KS distance %.4f, want below %.4f: %q does not match", a, d, crit, m.Policy))
		}
	}
	return out
}

// TestMigration proves the migration table draw for draw: at attempts 1 to
// 8, migrationDraws waits from the peer and from the Schedule its row
// names must pass a two-sample Kolmogorov–Smirnov test, except where the
// row says what differs, which is checked instead.
//
// It cannot fail by chance on a right table but with probability below
// migrationFalseFailure (1e-9) a run: every random comparison is sized for
// migrationAlpha, its share of that (see there). At 20,000 draws a side
// the KS threshold is a distance of 0.037 (0.026 against a known uniform
// distribution); TestMigrationDetects shows what that resolves.
func TestMigration(t *testing.T) {
	if len(migrations) > migrationRows {
		t.Fatalf("%d rows, and migrationAlpha is sized for %d: raise migrationRows", len(migrations), migrationRows)
	}
	for i, m := range migrations {
		t.Run(m.Peer+" "+m.Config, func(t *testing.T) {
			for _, mismatch := range m.mismatches(m.sample(t, uint64(i))) {
				t.Error(mismatch)
			}
		})
	}
	if testing.Verbose() {
		fmt.Print(migrationTable(false), "\n", migrationTable(true))
	}
}

// TestMigrationDetects is the control: a row that names the wrong policy
// must fail the same comparison TestMigration makes, so that a passing row
// means something.
//
// Against cenkalti's defaults (unseeded) the nearest wrong policy, jitter
// 0.4 for 0.5, is 0.1 away from the right one as a distribution, where the
// threshold is 0.037: for both samples together to close the 0.063 between
// has probability below 4·exp(−2n(0.063/2)²), about 1e-17 at n = 20,000.
// The seeded rows, and the one-sample test on seeded draws, are
// deterministic.
func TestMigrationDetects(t *testing.T) {
	for _, wrong := range []struct{ peer, config, policy string }{
		{"cenkalti/backoff/v7", "defaults", "500ms×1.5 up to 1m30s, symmetric jitter 0.4"}, // jitter 0.4, not 0.5
		{"cenkalti/backoff/v7", "defaults", "500ms×1.6 up to 1m30s, symmetric jitter 0.5"}, // ×1.6, not ×1.5
		{"cenkalti/backoff/v7", "defaults", "400ms×1.5 up to 1m30s, symmetric jitter 0.5"}, // base 400ms, not 500ms
		{"cenkalti/backoff/v7", "defaults", "500ms×1.5 up to 1m30s, equal jitter"},         // another shape
		{"cenkalti/backoff/v7", "100ms", "105ms×2 up to 12s, symmetric jitter 0.2"},        // a base 5% off
		{"gRPC retry policy", "", "100ms×2 up to 1.2s, symmetric jitter 0.1"},              // seeded: jitter 0.1, not 0.2
		{"gRPC connection backoff", "", "1s×1.5 up to 2m24s, symmetric jitter 0.2"},        // seeded: ×1.5, not ×1.6
	} {
		i := slices.IndexFunc(migrations, func(m migration) bool {
			return strings.HasPrefix(m.Peer, wrong.peer) && strings.HasPrefix(m.Config, wrong.config)
		})
		if i < 0 {
			t.Fatalf("no row %s %s", wrong.peer, wrong.config)
		}
		m := migrations[i]
		m.Policy = wrong.policy
		mismatches := m.mismatches(m.sample(t, uint64(i)))
		if len(mismatches) == 0 {
			t.Errorf("%q against %s %s: no attempt fails, want a mismatch", wrong.policy, m.Peer, m.Config)
		} else if testing.Verbose() {
			fmt.Printf("%q against %s %s: %d of %d attempts fail; %s\n", wrong.policy, m.Peer, m.Config, len(mismatches), migrationAttempts, mismatches[0])
		}
	}
	// The one-sample test: uniform draws over [100ms, 1s] are uniform over
	// that, and not over [0, 1s] (0.1 away).
	r := rand.New(rand.NewPCG(1, 2))
	ws := make([]time.Duration, migrationDraws)
	for i := range ws {
		ws[i] = 100*time.Millisecond + time.Duration(r.Int64N(int64(900*time.Millisecond)+1))
	}
	if got := oneSampleUniform("right", 100*time.Millisecond, time.Second, ws); got != "" {
		t.Errorf("uniform draws over [100ms, 1s]: %s, want none", got)
	}
	if got := oneSampleUniform("wrong", 0, time.Second, ws); got == "" {
		t.Errorf("uniform draws over [100ms, 1s] against [0, 1s]: no mismatch, want one")
	}
}

// migrationTable writes the table as Markdown: every row, or the short
// README version.
func migrationTable(short bool) string {
	var b strings.Builder
	b.WriteString("| peer | its configuration | the same here | what differs |\n|---|---|---|---|\n")
	for _, m := range migrations {
		differs := m.Differs
		if short {
			if differs = m.Short; differs == "" {
				continue
			}
		}
		if differs == "" {
			differs = "nothing"
		}
		policy := "none"
		if m.Policy != "" {
			policy = "`" + m.Policy + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", m.Peer, m.Config, policy, differs)
	}
	return b.String()
}

// TestMigrationRetryAfter: cenkalti/backoff v7's RetryAfter(d, err) and
// our After(d, err) (Schedule.Override) both make the next wait d, but v7
// then restarts its curve, where Override keeps it: after a curve of 10ms
// doubling, a RetryAfter of 1s on the second failure, v7 waits
// [10ms 1s 10ms 20ms] and we wait [10ms 1s 20ms 40ms]. Both run for real,
// in virtual time.
func TestMigrationRetryAfter(t *testing.T) {
	fault := errors.New("fault")
	// gaps runs op (its calls fail as errs says, then succeed) and returns
	// the time between successive calls.
	gaps := func(run func(op func() error)) []time.Duration {
		var out []time.Duration
		synctest.Test(t, func(t *testing.T) {
			var last time.Time
			calls := 0
			run(func() error {
				if calls > 0 {
					out = append(out, time.Since(last))
				}
				last = time.Now()
				calls++
				switch calls {
				case 1, 3, 4:
					return fault
				case 2:
					return errRetryAfter
				}
				return nil
			})
		})
		return out
	}
	v7 := gaps(func(op func() error) {
		b := cenkaltiv7.NewExponentialBackOff()
		b.InitialInterval, b.Multiplier, b.RandomizationFactor, b.MaxInterval = 10*time.Millisecond, 2, 0, time.Hour
		cenkaltiv7.Retry(context.Background(), func() (struct{}, error) {
			err := op()
			if err == errRetryAfter {
				err = cenkaltiv7.RetryAfter(time.Second, fault)
			}
			return struct{}{}, err
		}, cenkaltiv7.WithBackOff(b))
	})
	ours := gaps(func(op func() error) {
		p := retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: 10 * time.Millisecond, JitterMode: backoff.JitterNone}, MaxRetries: 10}}
		retry.Do(context.Background(), p, func(context.Context) error {
			err := op()
			if err == errRetryAfter {
				err = retry.After(time.Second, fault)
			}
			return err
		})
	})
	if got, want := fmt.Sprint(v7), "[10ms 1s 10ms 20ms]"; got != want {
		t.Errorf("cenkalti v7 with RetryAfter(1s) waited %s, want %s: its restart after RetryAfter changed", got, want)
	}
	if got, want := fmt.Sprint(ours), "[10ms 1s 20ms 40ms]"; got != want {
		t.Errorf("retry.After(1s) waited %s, want %s: the curve must go on where it was", got, want)
	}
	if testing.Verbose() {
		fmt.Printf("after a RetryAfter/After of 1s on the second failure: cenkalti v7 %v, ours %v\n", v7, ours)
	}
}

var errRetryAfter = errors.New("retry after")
