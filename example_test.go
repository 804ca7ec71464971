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
	"net/http/httptest"
	"os"
	"sync/atomic"
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

// fetch GETs url until it gets a response that is not a 5xx or a 429,
// waiting between attempts as policy says and as the server's Retry-After
// asks. It stops before a wait that would end after ctx's deadline, and
// then returns the last real error at once, instead of sleeping into the
// deadline and returning a bare context.DeadlineExceeded.
func fetch(ctx context.Context, url string, policy backoff.Schedule) (string, error) {
	s := policy // this call's own sequence: a copy of the template
	s.Deadline, _ = ctx.Deadline()
	for {
		body, retryAfter, err := get(ctx, url)
		if err == nil {
			return body, nil
		}
		if d, ok := backoff.ParseRetryAfter(retryAfter, time.Now()); ok {
			// The server's word replaces the curve's (the limits still
			// apply), widened so that a herd told one date spreads out.
			s.Override(backoff.AddJitter(d, max(d/2, time.Second)))
		}
		wait, ok := s.Next()
		if !ok { // s.Err() says which limit: retries, waiting or the deadline
			return "", fmt.Errorf("giving up after %d retries (%w): %w", s.Attempt(), s.Err(), err)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return "", fmt.Errorf("%w; last error: %w", ctx.Err(), err)
		case <-timer.C:
		}
	}
}

// get makes one attempt; a 5xx or a 429 is an error, with its Retry-After.
func get(ctx context.Context, url string) (body, retryAfter string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return "", resp.Header.Get("Retry-After"), errors.New(resp.Status)
	}
	return string(b), "", err
}

// A retry loop over a real HTTP server, under a context deadline. The server
// answers 503 twice, then 429 with Retry-After: 3, then 200. With 1.5s left,
// the Schedule refuses the 3s wait, so the loop returns the 429 at once
// instead of sleeping into the deadline. Rand is seeded only so that this
// example's output is fixed; leave it nil.
func Example_retryLoop() {
	var calls atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1, 2:
			fmt.Println("server: 503")
			w.WriteHeader(http.StatusServiceUnavailable)
		case 3:
			fmt.Println("server: 429, Retry-After: 3")
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			fmt.Println("server: 200")
			fmt.Fprint(w, "hello")
		}
	}))
	defer server.Close()

	policy := backoff.Schedule{
		Curve:      backoff.Value{BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond},
		MaxRetries: 5,
		Rand:       rand.New(rand.NewPCG(1, 2)),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := fetch(ctx, server.URL, policy)
	fmt.Println(err)
	fmt.Println("returned well before the deadline:", time.Since(start) < time.Second)
	fmt.Println("the Schedule saw the deadline coming:", errors.Is(err, backoff.ErrDeadline))

	body, err := fetch(ctx, server.URL, policy) // the server has recovered
	fmt.Println(body, err)
	// Output:
	// server: 503
	// server: 503
	// server: 429, Retry-After: 3
	// giving up after 2 retries (backoff: the next wait would end after the deadline): 429 Too Many Requests
	// returned well before the deadline: true
	// the Schedule saw the deadline coming: true
	// server: 200
	// hello <nil>
}

// A whole retry policy read from a JSON configuration file, as one line an
// operator can write. A typo is an error that says what it could not read,
// never a silently different policy.
func ExampleSchedule_UnmarshalText() {
	var config struct {
		Backoff backoff.Schedule `json:"backoff"`
	}
	file := `{"backoff": "100ms x 2 up to 30s, equal jitter, 5 retries"}`
	if err := json.Unmarshal([]byte(file), &config); err != nil {
		fmt.Println(err)
	}
	fmt.Println(config.Backoff)
	fmt.Println(config.Backoff.Curve.MaxDelay, config.Backoff.Curve.JitterMode, config.Backoff.MaxRetries)

	err := json.Unmarshal([]byte(`{"backoff": "100ms up to 30s, equal jiter"}`), &config)
	fmt.Println(err)
	// Output:
	// 100ms×2 up to 30s, equal jitter, 5 retries
	// 30s equal 5
	// backoff: policy "100ms up to 30s, equal jiter": "equal jiter": want "equal jitter" (the form: "100ms×2 up to 30s, full jitter, 5 retries, 1m0s of waiting")
}

// A command takes its whole retry policy as one flag: flag.TextVar reads it
// with UnmarshalText and shows the default with MarshalText.
func ExampleSchedule_MarshalText() {
	fs := flag.NewFlagSet("fetch", flag.ContinueOnError)
	fs.SetOutput(os.Stdout)
	var policy backoff.Schedule
	fs.TextVar(&policy, "retry", backoff.Schedule{
		Curve:      backoff.Value{BaseDelay: 100 * time.Millisecond, MaxDelay: 10 * time.Second},
		MaxRetries: 5,
		MaxElapsed: 30 * time.Second,
	}, "retry `policy`")
	fs.PrintDefaults()

	if err := fs.Parse([]string{"-retry", "1s×1.5 up to 1m, decorrelated jitter, 2m of waiting"}); err == nil {
		fmt.Println("policy:", policy)
	}
	// Output:
	//   -retry policy
	//     	retry policy (default 100ms×2 up to 10s, full jitter, 5 retries, 30s of waiting)
	// policy: 1s×1.5 up to 1m0s, decorrelated jitter, 2m0s of waiting
}

// UnmarshalText is lenient where nothing can be mistaken and strict where a
// typo would change the waits; MarshalText writes the canonical form back.
func ExampleValue_UnmarshalText() {
	for _, text := range []string{
		"100MS x 2 UP TO 30S, FULL JITTER",
		"1.5s*1.5 up to 1m30s, additive jitter 0.2",
		"250ms, no jitter",
		"100ms, full jitter, 3 retries",
		"100ms×0.5 up to 30s",
	} {
		var v backoff.Value
		if err := v.UnmarshalText([]byte(text)); err != nil {
			fmt.Println(err)
			continue
		}
		b, _ := v.MarshalText()
		fmt.Println(string(b))
	}
	// Output:
	// 100ms×2 up to 30s, full jitter
	// 1.5s×1.5 up to 1m30s, additive jitter 0.2
	// 250ms×2 uncapped, no jitter
	// backoff: policy "100ms, full jitter, 3 retries": "3 retries": a Schedule's limit, not part of a Value (the form: "100ms×2 up to 30s, full jitter")
	// backoff: policy "100ms×0.5 up to 30s": multiplier "0.5": want a number ≥ 1, such as 2 or 1.5 (the form: "100ms×2 up to 30s, full jitter")
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
// computed one, widened by half of itself (at least a second) so that every
// client told the same value does not return in the same instant; obeyed
// exactly, a herd of 1,000 comes back within 10ms and takes ten times as
// long to get through (benchmarks/README.md). MaxElapsed still applies, so a
// Retry-After of a day ends the sequence instead of holding the goroutine.
func ExampleParseRetryAfter() {
	s := backoff.Schedule{
		Curve:      backoff.Value{BaseDelay: 100 * time.Millisecond, MaxDelay: 30 * time.Second},
		MaxElapsed: 20 * time.Minute,
	}
	now := time.Date(2026, time.November, 29, 12, 0, 0, 0, time.UTC)
	for _, header := range []string{"120", "Sun, 29 Nov 2026 12:05:00 GMT", "86400"} {
		resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {header}}}
		d, ok := backoff.ParseRetryAfter(resp.Header.Get("Retry-After"), now)
		if ok {
			s.Override(backoff.AddJitter(d, max(d/2, time.Second)))
		}
		wait, ok := s.Next()
		if !ok {
			fmt.Printf("Retry-After %q: giving up rather than wait past %v\n", header, s.MaxElapsed)
			break
		}
		fmt.Printf("Retry-After %q: waiting between %v and %v: %v\n", header, d, d+max(d/2, time.Second), d <= wait && wait < d+max(d/2, time.Second))
	}
	// Output:
	// Retry-After "120": waiting between 2m0s and 3m0s: true
	// Retry-After "Sun, 29 Nov 2026 12:05:00 GMT": waiting between 5m0s and 7m30s: true
	// Retry-After "86400": giving up rather than wait past 20m0s
}

// Choosing the jitter mode from a command-line flag: JitterMode implements
// encoding.TextUnmarshaler, so flag.TextVar reads it, in any case.
func ExampleJitterMode_UnmarshalText() {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	curve := backoff.Value{BaseDelay: 100 * time.Millisecond, MaxDelay: 30 * time.Second}
	fs.TextVar(&curve.JitterMode, "jitter", backoff.JitterFull, "full, equal, decorrelated, additive, none or symmetric")

	if err := fs.Parse([]string{"-jitter", "Equal"}); err == nil {
		fmt.Println(curve)
	}
	err := fs.Parse([]string{"-jitter", "random"})
	fmt.Println(err)
	// Output:
	// 100ms×2 up to 30s, equal jitter
	// invalid value "random" for flag -jitter: backoff: unknown jitter mode "random": want one of "full", "equal", "decorrelated", "additive", "none", "symmetric"
}

// Planning a request timeout around Value.Delay: the longest n retries can
// wait is the sum of the upper bounds of attempts 1 to n, whatever the
// draws turn out to be. (Not for a decorrelated Schedule, whose waits grow
// from what it drew, nor for overridden waits: bound those with MaxElapsed
// or Deadline.)
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
		backoff.JitterAdditive, backoff.JitterNone, backoff.JitterSymmetric,
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
	// symmetric    [4s, 12s]
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

// gRPC's retry policy (gRFC A6) waits min(initialBackoff×multiplier^(n−1),
// maxBackoff) × random(0.8, 1.2). As a Schedule: symmetric jitter 0.2, with
// MaxDelay at maxBackoff×1.2 so that the ceiling spreads as gRPC's does, and
// maxAttempts 4 (the first call and 3 retries) as MaxRetries 3.
func ExampleJitterSymmetric() {
	var grpcA6 backoff.Schedule
	if err := grpcA6.UnmarshalText([]byte("100ms×2 up to 1.2s, symmetric jitter 0.2, 3 retries")); err != nil {
		fmt.Println(err)
	}
	for attempt := 1; attempt <= 5; attempt++ {
		lo, hi := grpcA6.Curve.Bounds(attempt)
		fmt.Printf("retry %d waits between %v and %v\n", attempt, lo, hi)
	}
	fmt.Println(grpcA6.Curve == backoff.Value{
		BaseDelay: 100 * time.Millisecond, MaxDelay: 1200 * time.Millisecond, Multiplier: 2,
		Jitter: 0.2, JitterMode: backoff.JitterSymmetric,
	})
	// Output:
	// retry 1 waits between 80ms and 120ms
	// retry 2 waits between 160ms and 240ms
	// retry 3 waits between 320ms and 480ms
	// retry 4 waits between 640ms and 960ms
	// retry 5 waits between 800ms and 1.2s
	// true
}

// Err says which limit ended a sequence, so a loop's error can say it too:
// here 3 retries were allowed and 10s of waiting, and the retries ran out
// first. ErrDeadline matches context.DeadlineExceeded as well.
func ExampleSchedule_Err() {
	s := backoff.Schedule{
		Curve:      backoff.Value{BaseDelay: time.Second, JitterMode: backoff.JitterNone},
		MaxRetries: 3,
		MaxElapsed: 10 * time.Second,
	}
	for {
		wait, ok := s.Next()
		if !ok {
			break
		}
		fmt.Println("wait", wait)
	}
	err := s.Err()
	fmt.Println(err)
	fmt.Println(errors.Is(err, backoff.ErrMaxRetries), errors.Is(err, backoff.ErrMaxElapsed))
	fmt.Println(errors.Is(backoff.ErrDeadline, context.DeadlineExceeded))
	s.Reset()
	fmt.Println("after Reset:", s.Err())
	// Output:
	// wait 1s
	// wait 2s
	// wait 4s
	// backoff: no retries left
	// true false
	// true
	// after Reset: <nil>
}
