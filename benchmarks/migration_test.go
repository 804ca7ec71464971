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
	ksAlpha           = 0.001
)

// A migration is one peer policy and ours.
type migration struct {
	Peer    string // the library and the call
	Config  string // the peer's configuration, in its own terms
	Policy  string // ours, as policy text (Schedule.UnmarshalText reads it)
	Differs string // what differs, in one line; "" when nothing does
	Short   string // what differs, shorter, for the README's table; "" leaves the row out
	// Sequence starts a fresh sequence of the peer's and returns its first
	// migrationAttempts waits.
	Sequence func() []time.Duration
	// Check, when set, replaces the two-sample KS test at the attempts
	// where the peer is known to differ (or not to be expressible): it
	// asserts what is true instead. It returns false where the KS test
	// should still run.
	Check func(t *testing.T, attempt int, peer, ours []time.Duration) (checked bool)
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
// imported. retries counts from 0.
func grpcConnection(retries int) time.Duration {
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
	backoff *= 1 + jitter*(rand.Float64()*2-1)
	return time.Duration(max(backoff, 0))
}

// grpcRetryA6 transcribes grpc-go v1.85.0 stream.go's retry wait (gRFC A6)
// for retryPolicy {initialBackoff 0.1s, maxBackoff 1s, backoffMultiplier 2}.
// n counts retries since the last pushback, from 0.
func grpcRetryA6(n int) time.Duration {
	fact := math.Pow(2, float64(n))
	cur := min(float64(100*time.Millisecond)*fact, float64(time.Second))
	cur *= 0.8 + 0.4*rand.Float64()
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
		Sequence: func() []time.Duration {
			b := cenkaltiv7.NewExponentialBackOff()
			b.Reset()
			return first(func(int) time.Duration { return b.NextBackOff() })
		},
	},
	{
		Peer:   "cenkalti/backoff/v7 `ExponentialBackOff`",
		Config: "100ms ×2, RandomizationFactor 0.2, MaxInterval 10s; `WithMaxTries(6)`",
		Policy: "100ms×2 up to 12s, symmetric jitter 0.2, 5 retries",
		Sequence: func() []time.Duration {
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
		Sequence: func() []time.Duration {
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
		Sequence: func() []time.Duration {
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
		Sequence: func() []time.Duration {
			b := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.5, Cap: 30 * time.Second, Steps: math.MaxInt32}
			return first(func(int) time.Duration { return b.Step() })
		},
	},
	{
		Peer:    "k8s.io/client-go `retry.DefaultBackoff`",
		Config:  "Steps 4, Duration 10ms, Factor 5, Jitter 0.1",
		Policy:  "10ms×5 uncapped, additive jitter 0.1, 3 retries",
		Differs: "Steps counts attempts: 4 steps are 3 waits",
		Sequence: func() []time.Duration {
			b := wait.Backoff{Steps: math.MaxInt32, Duration: 10 * time.Millisecond, Factor: 5, Jitter: 0.1} // client-go's, with room for 8
			return first(func(int) time.Duration { return b.Step() })
		},
	},
	{
		Peer: "AWS standard retry (aws-sdk-go-v2 `retry.NewStandard`)", Short: "throttling errors: base 1s",
		Config:  "defaults: MaxAttempts 3, base 50ms (1s for throttling errors), MaxBackoff 20s, full jitter",
		Policy:  "50ms×2 up to 20s, full jitter, 2 retries",
		Differs: "throttling errors: `1s×2 up to 20s, full jitter, 2 retries`; its retry quota (token bucket) is outside a backoff",
		Sequence: func() []time.Duration {
			s := awsretry.NewStandard()
			return first(func(a int) time.Duration { d, _ := s.RetryDelay(a, errMigrate); return d })
		},
	},
	{
		Peer:    "aws-sdk-go-v2 `retry.NewExponentialJitterBackoff(20s)` (before 2026)",
		Config:  "full jitter over 1s×2^attempt; past log2(20) attempts, 20s exactly",
		Policy:  "2s×2 up to 20s, full jitter",
		Differs: "from attempt 5 it waits exactly 20s, unjittered: the herd returns together; ours keeps [0, 20s]",
		Sequence: func() []time.Duration {
			b := awsretry.NewExponentialJitterBackoff(20 * time.Second)
			return first(func(a int) time.Duration { d, _ := b.BackoffDelay(a, errMigrate); return d })
		},
		Check: func(t *testing.T, attempt int, peer, ours []time.Duration) bool {
			if attempt < 5 {
				return false
			}
			atCap := func(ws []time.Duration) int {
				return count(ws, func(d time.Duration) bool { return d == 20*time.Second })
			}
			if atCap(peer) != len(peer) || atCap(ours) > len(ours)/1000 {
				t.Errorf("attempt %d: %d of the peer's waits at 20s, %d of ours; want all of its and almost none of ours", attempt, atCap(peer), atCap(ours))
			}
			return true
		},
	},
	{
		Peer: "gRPC retry policy (gRFC A6, grpc-go `stream.go`)", Short: "pushback: `Override`",
		Config:  "retryPolicy: maxAttempts 4, initialBackoff 0.1s, maxBackoff 1s, backoffMultiplier 2",
		Policy:  "100ms×2 up to 1.2s, symmetric jitter 0.2, 3 retries",
		Differs: "maxAttempts counts the first call; a `grpc-retry-pushback-ms` is `Override`; maxBackoff caps before the ×[0.8, 1.2], so MaxDelay is 1s×1.2",
		Sequence: func() []time.Duration {
			return first(func(a int) time.Duration { return grpcRetryA6(a - 1) })
		},
	},
	{
		Peer: "gRPC connection backoff (grpc-go `backoff.DefaultConfig`)", Short: "its first wait is 1s exactly, unjittered",
		Config:  "BaseDelay 1s, Multiplier 1.6, Jitter 0.2, MaxDelay 120s",
		Policy:  "1s×1.6 up to 2m24s, symmetric jitter 0.2",
		Differs: "its first wait is 1s exactly, unjittered; ours spreads it over [0.8s, 1.2s]",
		Sequence: func() []time.Duration {
			return first(func(a int) time.Duration { return grpcConnection(a - 1) })
		},
		Check: func(t *testing.T, attempt int, peer, ours []time.Duration) bool {
			if attempt != 1 {
				return false
			}
			lo, hi := slices.Min(ours), slices.Max(ours)
			if slices.Min(peer) != time.Second || slices.Max(peer) != time.Second || lo < 800*time.Millisecond || hi > 1200*time.Millisecond || hi-lo < 300*time.Millisecond {
				t.Errorf("attempt 1: peer in [%v, %v], ours in [%v, %v]; want the peer at 1s exactly and ours spread over [0.8s, 1.2s]", slices.Min(peer), slices.Max(peer), lo, hi)
			}
			return true
		},
	},
	{
		Peer: "failsafe-go `retrypolicy`", Short: "`WithMaxDuration` is wall clock: `Deadline`",
		Config:  "`WithBackoff(100ms, 10s)`, `WithJitterFactor(0.25)`, `WithMaxRetries(8)`",
		Policy:  "100ms×2 up to 12.5s, symmetric jitter 0.25, 8 retries",
		Differs: "the jitter applies after maxDelay, so MaxDelay is 10s×1.25; its `WithMaxDuration` is wall clock: `Deadline`",
		Sequence: func() []time.Duration {
			return failsafeSequence(retrypolicy.NewBuilder[any]().WithBackoff(100*time.Millisecond, 10*time.Second).WithJitterFactor(0.25))
		},
	},
	{
		Peer:    "failsafe-go `retrypolicy`",
		Config:  "defaults (`NewWithDefaults`): 2 retries, no delay",
		Policy:  "no wait, 2 retries",
		Differs: "no wait at all: a tight loop; add a backoff",
		Sequence: func() []time.Duration {
			return failsafeSequence(retrypolicy.NewBuilder[any]())
		},
	},
	{
		Peer: "hashicorp/go-retryablehttp `DefaultBackoff`", Short: "no jitter: use full jitter",
		Config:  "defaults: RetryWaitMin 1s, RetryWaitMax 30s, RetryMax 4",
		Policy:  "1s×2 up to 30s, no jitter, 4 retries",
		Differs: "no jitter: clients that failed together retry together (use full jitter); it honours Retry-After itself: here `ParseRetryAfter` and `Override`",
		Sequence: func() []time.Duration {
			return first(func(a int) time.Duration { return retryablehttp.DefaultBackoff(time.Second, 30*time.Second, a-1, nil) })
		},
	},
	{
		Peer:    "hashicorp/go-retryablehttp `LinearJitterBackoff`",
		Config:  "RetryWaitMin 1s, RetryWaitMax 30s",
		Policy:  "",
		Differs: "not expressible: linear, attempt × uniform [min, max), so nothing caps it",
		Sequence: func() []time.Duration {
			return first(func(a int) time.Duration {
				return retryablehttp.LinearJitterBackoff(time.Second, 30*time.Second, a-1, nil)
			})
		},
		Check: func(t *testing.T, attempt int, peer, _ []time.Duration) bool {
			k := time.Duration(attempt)
			oneSampleUniform(t, fmt.Sprintf("attempt %d", attempt), k*time.Second, k*30*time.Second, peer)
			return true
		},
	},
	{
		Peer:    "jpillora/backoff",
		Config:  "defaults: Min 100ms, Max 10s, Factor 2, no jitter",
		Policy:  "100ms×2 up to 10s, no jitter",
		Differs: "no jitter: clients that failed together retry together",
		Sequence: func() []time.Duration {
			b := &jpillora.Backoff{}
			return first(func(int) time.Duration { return b.Duration() })
		},
	},
	{
		Peer:    "jpillora/backoff",
		Config:  "Min 100ms, Max 10s, Factor 2, `Jitter: true`",
		Policy:  "100ms×2 up to 10s, full jitter",
		Differs: "not expressible: uniform over [Min, d], clamped to Max after the jitter, so past the cap the waits pile up on 10s (22% of them at attempt 8); nearest is full jitter",
		Sequence: func() []time.Duration {
			b := &jpillora.Backoff{Jitter: true}
			return first(func(int) time.Duration { return b.Duration() })
		},
		Check: func(t *testing.T, attempt int, peer, _ []time.Duration) bool {
			g := min(100*time.Millisecond<<(attempt-1), 10*time.Second)
			if 100*time.Millisecond<<(attempt-1) <= 10*time.Second {
				oneSampleUniform(t, fmt.Sprintf("attempt %d", attempt), 100*time.Millisecond, g, peer)
				return true
			}
			// Uniform over [Min, d] and then clamped: (d−Max)/(d−Min) of
			// the waits pile up on Max.
			d := float64(100 * time.Millisecond << (attempt - 1))
			want := (d - float64(10*time.Second)) / (d - float64(100*time.Millisecond))
			n := count(peer, func(d time.Duration) bool { return d == 10*time.Second })
			if got := float64(n) / float64(len(peer)); math.Abs(got-want) > 0.02 {
				t.Errorf("attempt %d: %.3f of the peer's waits exactly at 10s, want %.3f", attempt, got, want)
			}
			return true
		},
	},
	{
		Peer:    "sethvargo/go-retry",
		Config:  "`WithMaxRetries(5, WithFullJitter(WithCappedDuration(10s, NewExponential(100ms))))`",
		Policy:  "100ms×2 up to 10s, full jitter, 5 retries",
		Differs: "wrap the cap inside the jitter: the other order clamps after it and collapses onto 10s",
		Sequence: func() []time.Duration {
			b := sethvargo.WithFullJitter(sethvargo.WithCappedDuration(10*time.Second, sethvargo.NewExponential(100*time.Millisecond)))
			return first(func(int) time.Duration { d, _ := b.Next(); return d })
		},
	},
	{
		Peer:    "sethvargo/go-retry",
		Config:  "`WithJitterPercent(10, WithCappedDuration(10s, NewExponential(100ms)))`",
		Policy:  "100ms×2 up to 11s, symmetric jitter 0.1",
		Differs: "not expressible: ±10% in whole percents, 20 values per attempt; nearest is symmetric jitter 0.1",
		Sequence: func() []time.Duration {
			b := sethvargo.WithJitterPercent(10, sethvargo.WithCappedDuration(10*time.Second, sethvargo.NewExponential(100*time.Millisecond)))
			return first(func(int) time.Duration { d, _ := b.Next(); return d })
		},
		Check: func(t *testing.T, attempt int, peer, _ []time.Duration) bool {
			g := min(100*time.Millisecond<<(attempt-1), 10*time.Second)
			values := map[time.Duration]bool{}
			for _, d := range peer {
				values[d] = true
				if d <= g*9/10 || d > g*11/10 {
					t.Errorf("attempt %d: peer waited %v, want within (0.9, 1.1]×%v", attempt, d, g)
					return true
				}
			}
			if len(values) != 20 {
				t.Errorf("attempt %d: %d distinct waits, want 20 (whole percents from −9 to +10)", attempt, len(values))
			}
			return true
		},
	},
	{
		Peer:    "avast/retry-go/v5",
		Config:  "`DelayType(FullJitterBackoffDelay)`, Delay 100ms, MaxDelay 10s, Attempts 10",
		Policy:  "200ms×2 up to 10s, full jitter, 9 retries",
		Differs: "its first retry is n = 1, so its first wait is drawn under 2×Delay: our base is 200ms",
		Sequence: func() []time.Duration {
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
		Sequence: func() []time.Duration {
			r := avast.New()
			delay := avast.CombineDelay(avast.BackOffDelay, avast.RandomDelay)
			return first(func(a int) time.Duration { return delay(uint(a), errMigrate, r) })
		},
		Check: func(t *testing.T, attempt int, peer, _ []time.Duration) bool {
			g := 100 * time.Millisecond << (attempt - 1)
			oneSampleUniform(t, fmt.Sprintf("attempt %d", attempt), g, g+100*time.Millisecond, peer)
			return true
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

// ksCritical is the two-sample Kolmogorov–Smirnov critical distance at
// ksAlpha for samples of n and m.
func ksCritical(n, m int) float64 {
	c := math.Sqrt(-math.Log(ksAlpha/2) / 2)
	return c * math.Sqrt(float64(n+m)/float64(n*m))
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

// oneSampleUniform fails if ws are not uniform over [lo, hi] (KS at ksAlpha).
func oneSampleUniform(t *testing.T, name string, lo, hi time.Duration, ws []time.Duration) {
	t.Helper()
	xs := make([]float64, len(ws))
	for i, w := range ws {
		if w < lo || w > hi {
			t.Errorf("%s: %v outside [%v, %v]", name, w, lo, hi)
			return
		}
		xs[i] = float64(w-lo) / float64(hi-lo)
	}
	slices.Sort(xs)
	var d float64
	n := float64(len(xs))
	for i, x := range xs {
		d = max(d, float64(i+1)/n-x, x-float64(i)/n)
	}
	if crit := math.Sqrt(-math.Log(ksAlpha/2)/2) / math.Sqrt(n); d > crit {
		t.Errorf("%s: KS distance %.4f from uniform on [%v, %v], want below %.4f", name, d, lo, hi, crit)
	}
}

// sample draws migrationDraws sequences from the peer and from ours, and
// returns them by attempt: [attempt-1][draw].
func (m migration) sample(t *testing.T) (peer, ours [][]time.Duration) {
	var s backoff.Schedule // a row with no policy compares against waits of 0, and must Check every attempt
	if err := s.UnmarshalText([]byte(m.Policy)); err != nil && m.Policy != "" {
		t.Fatalf("policy %q: %v", m.Policy, err)
	}
	// The curve is compared at every attempt, whatever the limits.
	s.MaxRetries, s.MaxElapsed = 0, 0
	peer = make([][]time.Duration, migrationAttempts)
	ours = make([][]time.Duration, migrationAttempts)
	draw := func() {
		for range migrationDraws {
			ws := m.Sequence()
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

// TestMigration proves the migration table draw for draw: at attempts 1 to
// 8, migrationDraws waits from the peer and from the Schedule its row
// names must pass a two-sample Kolmogorov–Smirnov test at α = 0.001, except
// where the row says what differs, which is checked instead.
//
// The peers draw from sources that cannot be seeded, so a row that fails
// is drawn again, and fails only if the fresh samples fail too: for a
// matching row, a false alarm has probability below 1e-6 per attempt.
func TestMigration(t *testing.T) {
	for _, m := range migrations {
		t.Run(m.Peer+" "+m.Config, func(t *testing.T) {
			peer, ours := m.sample(t)
			for a := 1; a <= migrationAttempts; a++ {
				if m.Check != nil && m.Check(t, a, peer[a-1], ours[a-1]) {
					continue
				}
				crit := ksCritical(migrationDraws, migrationDraws)
				d := ksDistance(peer[a-1], ours[a-1])
				if d > crit {
					p2, o2 := m.sample(t)
					d2 := ksDistance(p2[a-1], o2[a-1])
					if d2 > crit {
						t.Errorf("attempt %d: KS distance %.4f, then %.4f on fresh samples, want below %.4f: %q does not match", a, d, d2, crit, m.Policy)
					}
				}
			}
		})
	}
	if testing.Verbose() {
		fmt.Print(migrationTable(false), "\n", migrationTable(true))
	}
}

// TestMigrationDetects is the control: a row that names the wrong policy
// must fail the same test, so that a passing row means something.
func TestMigrationDetects(t *testing.T) {
	for _, policy := range []string{
		"500ms×1.5 up to 1m30s, symmetric jitter 0.4", // jitter 0.4, not 0.5
		"500ms×1.6 up to 1m30s, symmetric jitter 0.5", // ×1.6, not ×1.5
		"400ms×1.5 up to 1m30s, symmetric jitter 0.5", // base 400ms, not 500ms
		"500ms×1.5 up to 1m30s, equal jitter",         // another shape
	} {
		m := migrations[0]
		m.Policy = policy
		peer, ours := m.sample(t)
		worst := 0.0
		for a := range migrationAttempts {
			worst = max(worst, ksDistance(peer[a], ours[a]))
		}
		if crit := ksCritical(migrationDraws, migrationDraws); worst <= crit {
			t.Errorf("%q against cenkalti's defaults: largest KS distance %.4f, want above %.4f", policy, worst, crit)
		}
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
