package benchmarks

import (
	"errors"
	"math"
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
)

// Config is one curve, asked of every library in its own terms.
type Config struct {
	Base, Cap  time.Duration // Cap ≤ 0: no cap (each library's own spelling of none)
	Multiplier float64       // used only when SetMult; otherwise each library doubles
	SetMult    bool
}

// A Peer is one library's nearest equivalent of a backoff curve. New starts a
// fresh sequence and returns the function that gives the wait before retry
// attempt (1-based); stateful libraries ignore attempt and advance. Either
// may panic: the harness recovers.
type Peer struct {
	Name       string
	Jitter     string // what its jitter draws, in our terms
	Headroom   string // what its docs say about waits above the cap
	Multiplier bool   // whether it takes a multiplier at all
	Fixed      string // what of Config it cannot take
	New        func(c Config) func(attempt int) time.Duration
	// Run, instead of New, for a library whose delays can only be seen
	// through its executor: it returns the first n waits.
	Run func(t *testing.T, c Config, n int) []time.Duration
}

// capOr is c's cap, or none spelled as math.MaxInt64, for libraries where 0
// does not mean "no cap".
func capOr(c Config) time.Duration {
	if c.Cap <= 0 {
		return math.MaxInt64
	}
	return c.Cap
}

// mult is c's multiplier, or 2.
func mult(c Config) float64 {
	if !c.SetMult {
		return 2
	}
	return c.Multiplier
}

var errFail = errors.New("fail")

// peers lists every library measured, ours first.
var peers = []Peer{
	{
		Name: "unherd/backoff Value.Delay", Jitter: "full [0, d]", Headroom: "none: MaxDelay is a hard ceiling", Multiplier: true,
		New: func(c Config) func(int) time.Duration {
			v := backoff.Value{BaseDelay: c.Base, MaxDelay: c.Cap, Multiplier: mult(c)}
			return v.Delay
		},
	},
	{
		Name: "unherd/backoff Schedule.Next", Jitter: "full [0, d]", Headroom: "none", Multiplier: true,
		New: func(c Config) func(int) time.Duration {
			s := &backoff.Schedule{Curve: backoff.Value{BaseDelay: c.Base, MaxDelay: c.Cap, Multiplier: mult(c)}}
			return func(int) time.Duration { d, _ := s.Next(); return d }
		},
	},
	{
		Name: "unherd/backoff JitterNone", Jitter: "none", Headroom: "none", Multiplier: true,
		New: func(c Config) func(int) time.Duration {
			v := backoff.Value{BaseDelay: c.Base, MaxDelay: c.Cap, Multiplier: mult(c), JitterMode: backoff.JitterNone}
			return v.Delay
		},
	},
	{
		Name: "cenkalti/backoff/v4", Jitter: "±50% (default)", Headroom: "documented: MaxInterval caps the interval before ±50%", Multiplier: true,
		New: func(c Config) func(int) time.Duration {
			b := cenkaltiv4.NewExponentialBackOff(
				cenkaltiv4.WithInitialInterval(c.Base), cenkaltiv4.WithMaxInterval(capOr(c)),
				cenkaltiv4.WithMultiplier(mult(c)), cenkaltiv4.WithMaxElapsedTime(0))
			return func(int) time.Duration { return b.NextBackOff() }
		},
	},
	{
		Name: "cenkalti/backoff/v5", Jitter: "±50% (default)", Headroom: "documented: MaxInterval caps the interval before ±50%", Multiplier: true,
		New: func(c Config) func(int) time.Duration {
			b := &cenkaltiv5.ExponentialBackOff{InitialInterval: c.Base, RandomizationFactor: 0.5, Multiplier: mult(c), MaxInterval: capOr(c)}
			b.Reset()
			return func(int) time.Duration { return b.NextBackOff() }
		},
	},
	{
		Name: "cenkalti/backoff/v7", Jitter: "±50% (default)", Headroom: "documented: MaxInterval caps the interval before ±50%", Multiplier: true,
		New: func(c Config) func(int) time.Duration {
			b := &cenkaltiv7.ExponentialBackOff{InitialInterval: c.Base, RandomizationFactor: 0.5, Multiplier: mult(c), MaxInterval: capOr(c)}
			b.Reset()
			return func(int) time.Duration { return b.NextBackOff() }
		},
	},
	{
		Name: "jpillora/backoff", Jitter: "[base, d]", Headroom: "none documented", Multiplier: true,
		New: func(c Config) func(int) time.Duration {
			b := &jpillora.Backoff{Min: c.Base, Max: capOr(c), Factor: mult(c), Jitter: true}
			return func(a int) time.Duration { return b.ForAttempt(float64(a - 1)) }
		},
	},
	{
		Name: "sethvargo/go-retry", Jitter: "full [0, d)", Headroom: "none: WithCappedDuration", Fixed: "multiplier (×2 only)",
		New: func(c Config) func(int) time.Duration {
			b := sethvargo.WithFullJitter(sethvargo.WithCappedDuration(capOr(c), sethvargo.NewExponential(c.Base)))
			return func(int) time.Duration { d, _ := b.Next(); return d }
		},
	},
	{
		Name: "avast/retry-go/v5", Jitter: "full [0, d)", Headroom: "none: MaxDelay clamps in Do", Fixed: "multiplier (×2 only)",
		New: func(c Config) func(int) time.Duration {
			r := avast.New(avast.Delay(c.Base), avast.MaxDelay(c.Cap))
			return func(a int) time.Duration {
				// Do clamps the DelayType's result at MaxDelay, when set.
				d := avast.FullJitterBackoffDelay(uint(a), errFail, r)
				if c.Cap > 0 && d > c.Cap {
					d = c.Cap
				}
				return d
			}
		},
	},
	{
		Name: "aws-sdk-go-v2 ExponentialJitterBackoff", Jitter: "full [0, d), none at the cap", Headroom: "none", Fixed: "base (1s) and multiplier",
		New: func(c Config) func(int) time.Duration {
			b := awsretry.NewExponentialJitterBackoff(capOr(c))
			return func(a int) time.Duration { d, _ := b.BackoffDelay(a, errFail); return d }
		},
	},
	{
		Name: "hashicorp/go-retryablehttp DefaultBackoff", Jitter: "none", Headroom: "none", Fixed: "multiplier (×2 only)",
		New: func(c Config) func(int) time.Duration {
			max := capOr(c)
			return func(a int) time.Duration { return retryablehttp.DefaultBackoff(c.Base, max, a-1, nil) }
		},
	},
	{
		Name: "hashicorp/go-retryablehttp LinearJitterBackoff", Jitter: "linear: a×[base, cap]", Headroom: "by design: attempt × cap", Fixed: "growth (linear)",
		New: func(c Config) func(int) time.Duration {
			max := capOr(c)
			return func(a int) time.Duration { return retryablehttp.LinearJitterBackoff(c.Base, max, a-1, nil) }
		},
	},
	{
		Name: "failsafe-go retrypolicy", Jitter: "±50% (WithJitterFactor)", Headroom: "undocumented: jitter applies after maxDelay", Multiplier: true,
		Run: func(t *testing.T, c Config, n int) []time.Duration {
			var delays []time.Duration
			// Its delays exist only inside its executor, which sleeps them:
			// run it in a synctest bubble, where the clock is virtual.
			synctest.Test(t, func(t *testing.T) {
				p := retrypolicy.NewBuilder[any]().
					WithBackoffFactor(c.Base, capOr(c), mult(c)).
					WithJitterFactor(0.5).
					WithMaxRetries(n).
					OnRetryScheduled(func(e failsafe.ExecutionScheduledEvent[any]) { delays = append(delays, e.Delay) }).
					Build()
				_, _ = failsafe.With(p).Get(func() (any, error) { return nil, errFail })
			})
			return delays
		},
	},
	{
		Name: "k8s.io/apimachinery wait.Backoff", Jitter: "+[0, 50%) (Jitter 0.5)", Headroom: "documented: Cap applies before jitter", Multiplier: true,
		New: func(c Config) func(int) time.Duration {
			b := &wait.Backoff{Duration: c.Base, Factor: mult(c), Jitter: 0.5, Steps: math.MaxInt, Cap: c.Cap}
			return func(int) time.Duration { return b.Step() }
		},
	},
}
