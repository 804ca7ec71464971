package backoff_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/unherd/backoff"
)

// A supervisor restarts a goroutine that keeps failing, waiting
// Value.Delay(failures) before each restart. JitterNone keeps this example's
// output fixed; a real supervisor keeps the default, JitterFull, so that a
// fleet of them restarted by one bad deploy does not restart in step.
func Example_supervisor() {
	curve := backoff.Value{
		BaseDelay:  100 * time.Millisecond,
		MaxDelay:   5 * time.Second,
		JitterMode: backoff.JitterNone,
	}
	run := func() error { return errors.New("connection refused") } // the supervised work

	failures := 0
	for range 8 {
		start := time.Now()
		err := run()
		if time.Since(start) > time.Minute {
			failures = 0 // it ran long enough to count as healthy
		}
		failures++
		wait := curve.Delay(failures)
		fmt.Printf("%v; restart %d in %v\n", err, failures, wait)
		// In a real supervisor: sleep wait, or select on a timer and ctx.Done().
	}
	// Output:
	// connection refused; restart 1 in 100ms
	// connection refused; restart 2 in 200ms
	// connection refused; restart 3 in 400ms
	// connection refused; restart 4 in 800ms
	// connection refused; restart 5 in 1.6s
	// connection refused; restart 6 in 3.2s
	// connection refused; restart 7 in 5s
	// connection refused; restart 8 in 5s
}

// A retry loop with a Schedule: it honours a context, reuses one timer, and
// gives up after MaxRetries waits. The operation fails twice, then succeeds.
// Rand is seeded only so that this example's output is fixed; leave it nil.
func Example_retryLoop() {
	calls := 0
	operation := func(context.Context) error {
		calls++
		if calls <= 2 {
			return errors.New("503 Service Unavailable")
		}
		return nil
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s := backoff.Schedule{
		Curve:      backoff.Value{BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond},
		MaxRetries: 5,
		Rand:       rand.New(rand.NewPCG(1, 2)),
	}
	timer := time.NewTimer(0)
	<-timer.C
	for {
		err := operation(ctx)
		if err == nil {
			fmt.Printf("succeeded after %d retries, %v of waiting\n", s.Attempt(), s.Elapsed())
			s.Reset() // ready for the next failure streak
			break
		}
		wait, ok := s.Next()
		if !ok {
			fmt.Println("giving up:", err)
			break
		}
		fmt.Printf("%v; retry %d in %v\n", err, s.Attempt(), wait)
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			fmt.Println("cancelled:", ctx.Err())
			return
		case <-timer.C:
		}
	}
	// Output:
	// 503 Service Unavailable; retry 1 in 769.374µs
	// 503 Service Unavailable; retry 2 in 1.232873ms
	// succeeded after 2 retries, 2.002247ms of waiting
}

// A periodic job paced with AddJitter: the first tick comes at a random
// point within the spread, so that a fleet started together does not tick
// together, and every later tick comes one interval plus a spread later.
func ExampleAddJitter() {
	const interval, spread = time.Minute, 5 * time.Second

	first := backoff.AddJitter(0, spread)
	fmt.Println("first tick within [0s, 5s):", first >= 0 && first < spread)

	next := backoff.AddJitter(interval, spread)
	fmt.Println("next tick within [1m0s, 1m5s):", next >= interval && next < interval+spread)

	// With a timer: t := time.NewTimer(first), and after each tick
	// t.Reset(backoff.AddJitter(interval, spread)).

	// Output:
	// first tick within [0s, 5s): true
	// next tick within [1m0s, 1m5s): true
}

// An HTTP 429 with a Retry-After header: the server's wait replaces the
// computed one, widened a little so that every client told the same value
// does not return at the same instant. MaxElapsed still applies, so a
// Retry-After of a day ends the sequence instead of holding the goroutine.
func ExampleParseRetryAfter() {
	s := backoff.Schedule{
		Curve:      backoff.Value{BaseDelay: 100 * time.Millisecond, MaxDelay: 30 * time.Second},
		MaxElapsed: 10 * time.Minute,
	}
	now := time.Date(2026, time.November, 29, 12, 0, 0, 0, time.UTC)
	for _, header := range []string{"120", "Sun, 29 Nov 2026 12:05:00 GMT", "86400"} {
		resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {header}}}
		if d, ok := backoff.ParseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
			s.Override(backoff.AddJitter(d, time.Second))
		}
		wait, ok := s.Next()
		if !ok {
			fmt.Printf("Retry-After %q: giving up after %v\n", header, s.Elapsed().Truncate(time.Minute))
			break
		}
		fmt.Printf("Retry-After %q: waiting %v and a fraction of a second\n", header, wait.Truncate(time.Second))
	}
	// Output:
	// Retry-After "120": waiting 2m0s and a fraction of a second
	// Retry-After "Sun, 29 Nov 2026 12:05:00 GMT": waiting 5m0s and a fraction of a second
	// Retry-After "86400": giving up after 7m0s
}

// Choosing the jitter mode from a command-line flag: JitterMode implements
// encoding.TextUnmarshaler, so flag.TextVar reads it, in any case.
func ExampleJitterMode_UnmarshalText() {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	curve := backoff.Value{BaseDelay: 100 * time.Millisecond, MaxDelay: 30 * time.Second}
	fs.TextVar(&curve.JitterMode, "jitter", backoff.JitterFull, "full, equal, decorrelated, additive or none")

	if err := fs.Parse([]string{"-jitter", "Equal"}); err == nil {
		fmt.Println(curve)
	}
	err := fs.Parse([]string{"-jitter", "random"})
	fmt.Println(err)
	// Output:
	// 100ms×2 up to 30s, equal jitter
	// invalid value "random" for flag -jitter: backoff: unknown jitter mode "random": want one of "full", "equal", "decorrelated", "additive", "none"
}

// Planning a request timeout: the longest n retries can wait is the sum of
// the upper bounds of attempts 1 to n, whatever the draws turn out to be.
func ExampleValue_Bounds() {
	curve := backoff.Value{BaseDelay: 100 * time.Millisecond, MaxDelay: 2 * time.Second}
	const retries, perTry = 5, 500 * time.Millisecond

	var worst time.Duration
	for attempt := 1; attempt <= retries; attempt++ {
		lo, hi := curve.Bounds(attempt)
		fmt.Printf("retry %d waits between %v and %v\n", attempt, lo, hi)
		worst += hi
	}
	fmt.Println("timeout:", worst+(retries+1)*perTry)
	// Output:
	// retry 1 waits between 0s and 100ms
	// retry 2 waits between 0s and 200ms
	// retry 3 waits between 0s and 400ms
	// retry 4 waits between 0s and 800ms
	// retry 5 waits between 0s and 1.6s
	// timeout: 6.1s
}

// Each mode draws from its own interval at the same point of the curve.
func ExampleJitterMode() {
	for _, mode := range []backoff.JitterMode{
		backoff.JitterFull, backoff.JitterEqual, backoff.JitterDecorrelated,
		backoff.JitterAdditive, backoff.JitterNone,
	} {
		curve := backoff.Value{BaseDelay: time.Second, MaxDelay: time.Minute, Jitter: 0.5, JitterMode: mode}
		lo, hi := curve.Bounds(4)
		fmt.Printf("%-12v [%v, %v]\n", mode, lo, hi)
	}
	// Output:
	// full         [0s, 8s]
	// equal        [4s, 8s]
	// decorrelated [1s, 12s]
	// additive     [8s, 11.999999999s]
	// none         [8s, 8s]
}

// Delay draws a fresh wait on every call; it always lies in Bounds.
func ExampleValue_Delay() {
	curve := backoff.Value{BaseDelay: 100 * time.Millisecond, MaxDelay: 30 * time.Second}
	d := curve.Delay(3)
	lo, hi := curve.Bounds(3)
	fmt.Println(curve)
	fmt.Println("Delay(3) within Bounds(3):", lo <= d && d <= hi)
	// Output:
	// 100ms×2 up to 30s, full jitter
	// Delay(3) within Bounds(3): true
}

// The zero Multiplier doubles; a Multiplier of exactly 1 is a fixed wait.
func ExampleValue_String() {
	fmt.Println(backoff.Value{BaseDelay: time.Second})
	fmt.Println(backoff.Value{BaseDelay: time.Second, MaxDelay: time.Minute, Multiplier: 1.5, JitterMode: backoff.JitterDecorrelated})
	fmt.Println(backoff.Value{BaseDelay: 5 * time.Second, Multiplier: 1, JitterMode: backoff.JitterNone})
	fmt.Println(backoff.Value{BaseDelay: time.Second, MaxDelay: time.Minute, Jitter: 0.2, JitterMode: backoff.JitterAdditive})
	// Output:
	// 1s×2 uncapped, full jitter
	// 1s×1.5 up to 1m0s, decorrelated jitter
	// 5s×1 uncapped, no jitter
	// 1s×2 up to 1m0s, additive jitter 0.2
}

// A configuration file names the mode; encoding/json reads and writes it as
// text through MarshalText and UnmarshalText.
func ExampleJitterMode_MarshalText() {
	var cfg struct{ Jitter backoff.JitterMode }
	if err := json.Unmarshal([]byte(`{"Jitter": "decorrelated"}`), &cfg); err != nil {
		fmt.Println(err)
	}
	fmt.Println(cfg.Jitter == backoff.JitterDecorrelated, cfg.Jitter.String())
	out, _ := json.Marshal(cfg)
	fmt.Println(string(out))
	_, err := backoff.JitterMode(9).MarshalText()
	fmt.Println(err)
	// Output:
	// true decorrelated
	// {"Jitter":"decorrelated"}
	// backoff: undefined jitter mode 9
}

// Grow is the curve without randomness, held at its ceiling; it saturates
// instead of wrapping negative.
func ExampleGrow() {
	for _, attempt := range []int{0, 1, 2, 9, 10, 1 << 60} {
		fmt.Println(attempt, backoff.Grow(100*time.Millisecond, 30*time.Second, 2, attempt))
	}
	fmt.Println(backoff.Grow(time.Second, 0, 2, 100) == time.Duration(1<<63-1))
	// Output:
	// 0 100ms
	// 1 100ms
	// 2 200ms
	// 9 25.6s
	// 10 30s
	// 1152921504606846976 30s
	// true
}

func ExampleNormalMultiplier() {
	for _, m := range []float64{0, -3, 0.5, 1, 1.5, 2} {
		fmt.Println(m, "→", backoff.NormalMultiplier(m))
	}
	// Output:
	// 0 → 2
	// -3 → 2
	// 0.5 → 2
	// 1 → 1
	// 1.5 → 1.5
	// 2 → 2
}

func ExampleNormalJitter() {
	for _, j := range []float64{-1, 0, 0.25, 1, 3} {
		fmt.Println(j, "→", backoff.NormalJitter(j))
	}
	// Output:
	// -1 → 0
	// 0 → 0
	// 0.25 → 0.25
	// 1 → 1
	// 3 → 1
}

// The helpers compose with Grow for a loop that wants its own mode.
func ExampleFull() {
	g := backoff.Grow(100*time.Millisecond, 30*time.Second, 2, 4) // 800ms
	full, equal, widened := backoff.Full(g), backoff.Equal(g), backoff.Widen(g, 0.25)
	fmt.Println("Full   in [0s, 800ms]:", 0 <= full && full <= g)
	fmt.Println("Equal  in [400ms, 800ms]:", g/2 <= equal && equal <= g)
	fmt.Println("Widen  in [800ms, 1s):", g <= widened && widened < time.Second)
	fmt.Println("zero or less gives 0:", backoff.Full(-time.Second), backoff.Equal(0), backoff.Widen(-1, 1))
	// Output:
	// Full   in [0s, 800ms]: true
	// Equal  in [400ms, 800ms]: true
	// Widen  in [800ms, 1s): true
	// zero or less gives 0: 0s 0s 0s
}

// The AWS decorrelated loop by hand: each wait is drawn from the one
// before. Schedule with JitterDecorrelated does this for you.
func ExampleDecorrelate() {
	base, ceiling := 100*time.Millisecond, 10*time.Second
	wait := base
	ok := true
	for range 20 {
		next := backoff.Decorrelate(base, ceiling, wait)
		ok = ok && base <= next && next <= min(ceiling, 3*wait)
		wait = next
	}
	fmt.Println("every wait in [base, min(ceiling, 3×previous)]:", ok)
	// Output:
	// every wait in [base, min(ceiling, 3×previous)]: true
}

// Override replaces one computed wait without moving the curve.
func ExampleSchedule_Override() {
	s := backoff.Schedule{Curve: backoff.Value{BaseDelay: time.Second, JitterMode: backoff.JitterNone}}
	a, _ := s.Next()
	s.Override(30 * time.Second) // the broker asked for 30s
	b, _ := s.Next()
	c, _ := s.Next()
	fmt.Println(a, b, c, "attempts:", s.Attempt(), "elapsed:", s.Elapsed())
	// Output:
	// 1s 30s 2s attempts: 3 elapsed: 33s
}

// With Rand set, the whole sequence is reproducible from the seed, here in
// the decorrelated loop.
func ExampleSchedule() {
	s := backoff.Schedule{
		Curve:      backoff.Value{BaseDelay: 100 * time.Millisecond, MaxDelay: 10 * time.Second, JitterMode: backoff.JitterDecorrelated},
		MaxRetries: 4,
		Rand:       rand.New(rand.NewPCG(7, 7)),
	}
	for {
		wait, ok := s.Next()
		if !ok {
			break
		}
		fmt.Println(wait.Round(time.Millisecond))
	}
	fmt.Println(s.Attempt(), "waits,", s.Elapsed().Round(time.Millisecond), "in all")
	// Output:
	// 292ms
	// 115ms
	// 286ms
	// 213ms
	// 4 waits, 907ms in all
}
