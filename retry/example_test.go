package retry_test

import (
	"context"
	"encoding/json"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/retry"
)

// Do around a real HTTP call: the server answers 503 twice, then 200. A
// 5xx is an error worth retrying; a 4xx is Permanent. The waits here are
// milliseconds so that the example runs fast; the zero Policy waits
// "200ms×2 up to 30s, full jitter" and gives up after 5 retries.
func ExampleDo() {
	var calls atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "hello")
	}))
	defer server.Close()

	policy := retry.Policy{Schedule: backoff.Schedule{
		Curve:      backoff.Value{BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond},
		MaxRetries: 5,
	}}
	var body string
	err := retry.Do(context.Background(), policy, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, server.URL, nil)
		if err != nil {
			return retry.Permanent(err) // a bad URL does not get better
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		switch {
		case resp.StatusCode >= 500:
			fmt.Println("attempt failed:", resp.Status)
			return errors.New(resp.Status)
		case resp.StatusCode >= 400:
			return retry.Permanent(errors.New(resp.Status))
		}
		body = string(b)
		return err
	})
	fmt.Println(body, err)
	// Output:
	// attempt failed: 503 Service Unavailable
	// attempt failed: 503 Service Unavailable
	// hello <nil>
}

// fetch is the README's first example, whole: GET url, retrying network
// errors, 5xx and 429 (as the server's Retry-After asks, spread, up to a
// minute), and not retrying what cannot get better.
func fetch(ctx context.Context, url string) ([]byte, error) {
	return retry.DoValue(ctx, retry.Policy{}, func(ctx context.Context) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, retry.Permanent(err) // a bad URL does not get better
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err // the network: worth another attempt
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		switch {
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			err = errors.New(resp.Status)
			if d, ok := backoff.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				if d > time.Minute {
					return nil, retry.GiveUp(err) // an hour's wait is not a retry
				}
				err = retry.After(backoff.AddJitter(d, max(d/2, time.Second)), err) // the server's word, spread
			}
			return nil, err
		case resp.StatusCode >= 400:
			return nil, retry.Permanent(errors.New(resp.Status))
		}
		return body, err
	})
}

// fetch under a deadline, against a server that answers 429 with
// "Retry-After: 30": the wait cannot fit in the 10s left, so fetch returns
// the 429 at once, not a bare context.DeadlineExceeded 10s later. Then the
// server recovers; then it asks for an hour, and fetch gives up at once.
func Example_fetch() {
	var calls atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			fmt.Fprint(w, "hello")
		default:
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer server.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := fetch(ctx, server.URL)
	var e *retry.Error
	errors.As(err, &e)
	fmt.Println(e.Err, "|", e.Cause)
	fmt.Println("at once:", time.Since(start) < time.Second, "| a deadline error too:", errors.Is(err, context.DeadlineExceeded))

	body, err := fetch(ctx, server.URL)
	fmt.Println(string(body), err)

	start = time.Now() // no deadline, and the server asks for an hour
	_, err = fetch(context.Background(), server.URL)
	errors.As(err, &e)
	fmt.Println(e.Err, "| attempts:", e.Attempts, "| at once:", time.Since(start) < time.Second)
	// Output:
	// 429 Too Many Requests | backoff: the next wait would end after the deadline
	// at once: true | a deadline error too: true
	// hello <nil>
	// 503 Service Unavailable | attempts: 1 | at once: true
}

// A loop of one's own over a backoff.Schedule, with Sleep as its wait: a
// consumer that polls a queue, backs off while it is empty, and starts the
// curve over when a message arrives. Schedule.Err says which limit ended it.
func Example_scheduleLoop() {
	polls := 0
	poll := func(ctx context.Context) (string, error) { // the caller's own attempt
		if polls++; polls%3 != 0 {
			return "", errors.New("queue empty")
		}
		return fmt.Sprintf("message %d", polls/3), nil
	}

	ctx := context.Background()
	s := backoff.Schedule{Curve: backoff.Value{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}, MaxRetries: 4}
	for handled := 0; handled < 2; {
		msg, err := poll(ctx)
		if err == nil {
			fmt.Println("handled", msg)
			handled++
			s.Reset() // a success: the next wait is the curve's first again
			continue
		}
		wait, ok := s.Next()
		if !ok {
			fmt.Printf("giving up (%v): %v\n", s.Err(), err)
			return
		}
		if serr := retry.Sleep(ctx, wait); serr != nil { // ctx ended, or its deadline is too near
			fmt.Printf("%v; last error: %v\n", serr, err)
			return
		}
	}
	// Output:
	// handled message 1
	// handled message 2
}

// DoValue returns what the function returns, once it succeeds.
func ExampleDoValue() {
	attempts := 0
	lookup := func(ctx context.Context) (string, error) {
		if attempts++; attempts < 3 {
			return "", errors.New("i/o timeout")
		}
		return "10.0.0.4", nil
	}
	policy := retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: time.Millisecond}, MaxRetries: 3}}
	addr, err := retry.DoValue(context.Background(), policy, lookup)
	fmt.Println(addr, err, "after", attempts, "attempts")
	// Output:
	// 10.0.0.4 <nil> after 3 attempts
}

// A supervisor that keeps a connection up. A dial that fails waits the
// next wait of the curve; a connection that was up and then dropped calls
// Reset, so the next dial waits the curve's first wait (jittered, so that a
// fleet that lost the same broker does not reconnect in the same instant).
// Here the context ends after the second connection.
func ExampleLoop() {
	ctx, cancel := context.WithCancel(context.Background())
	dials := 0
	// runOnce dials and serves until the connection drops; connected says
	// whether it got as far as serving.
	runOnce := func(ctx context.Context) (connected bool, err error) {
		switch dials++; dials {
		case 1, 2, 4:
			return false, errors.New("dial tcp 10.0.0.4:5672: connect: connection refused")
		case 3:
			return true, errors.New("connection reset by peer")
		default:
			cancel() // the process is shutting down
			return true, nil
		}
	}

	policy := retry.Policy{Schedule: backoff.Schedule{
		Curve: backoff.Value{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
	}}
	loop := retry.NewLoop(policy)
	for loop.Wait(ctx) {
		connected, err := runOnce(ctx)
		if connected {
			loop.Reset()
		}
		if err != nil {
			fmt.Printf("dial %d: %v\n", dials, err)
		}
	}
	fmt.Println("stopped by the context:", errors.Is(loop.Err(), context.Canceled))
	// Output:
	// dial 1: dial tcp 10.0.0.4:5672: connect: connection refused
	// dial 2: dial tcp 10.0.0.4:5672: connect: connection refused
	// dial 3: connection reset by peer
	// dial 4: dial tcp 10.0.0.4:5672: connect: connection refused
	// stopped by the context: true
}

// Metrics hang on OnRetry: it is called once before each wait, in the
// caller's goroutine, and never after the final attempt, so a counter of
// retries counts retries, not failures.
func ExamplePolicy_onRetry() {
	var retries atomic.Int64 // say, a Prometheus counter
	policy := retry.Policy{
		Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: 3},
		OnRetry: func(e retry.Event) {
			retries.Add(1)
			fmt.Printf("attempt %d failed (%v); next in %v\n", e.Attempt, e.Err, e.Wait)
		},
	}
	err := retry.Do(context.Background(), policy, func(context.Context) error { return errors.New("503") })
	var e *retry.Error
	errors.As(err, &e)
	fmt.Println("retries:", retries.Load(), "attempts:", e.Attempts, "why:", e.Cause)
	// Output:
	// attempt 1 failed (503); next in 0s
	// attempt 2 failed (503); next in 0s
	// attempt 3 failed (503); next in 0s
	// retries: 3 attempts: 4 why: backoff: no retries left
}

// A Policy is one flag (or one JSON or YAML string): flag.TextVar reads
// its text, and String writes it back. The text is the Schedule's
// (backoff.Schedule.UnmarshalText); Retryable, OnRetry and Logger are code
// and are left as they were.
func ExamplePolicy_UnmarshalText() {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var policy retry.Policy
	fs.TextVar(&policy, "retry", retry.Policy{}, "how to retry the database")
	fmt.Println("default:", fs.Lookup("retry").DefValue)

	fs.Parse([]string{"-retry", "100ms x2 up to 5s, equal jitter, 8 retries"})
	fmt.Println("set:", policy)

	err := fs.Parse([]string{"-retry", "100ms, equal jiter"})
	fmt.Println(err)
	// Output:
	// default: 200ms×2 up to 30s, full jitter
	// set: 100ms×2 up to 5s, equal jitter, 8 retries
	// invalid value "100ms, equal jiter" for flag -retry: backoff: policy "100ms, equal jiter": "equal jiter": want "equal jitter" (the form: "100ms×2 up to 30s, full jitter, 5 retries, 1m0s of waiting")
}

// The zero Policy, in its text: the default curve. Do adds its default of
// 5 retries when no limit is set, which is Do's rule, not text.
func ExamplePolicy_String() {
	fmt.Println(retry.Policy{})
	b, _ := retry.Policy{Schedule: backoff.Schedule{MaxElapsed: time.Minute}}.MarshalText()
	fmt.Println(string(b))
	// Output:
	// 200ms×2 up to 30s, full jitter
	// 200ms×2 up to 30s, full jitter, 1m0s of waiting
}

// Permanent marks an error no retry can fix, even under a Retryable that
// would say yes, and through wrapping.
func ExamplePermanent() {
	attempts := 0
	err := retry.Do(context.Background(), retry.Policy{Retryable: func(error) bool { return true }},
		func(context.Context) error {
			attempts++
			return fmt.Errorf("loading config: %w", retry.Permanent(errors.New("permission denied")))
		})
	fmt.Println("attempts:", attempts, "permanent:", retry.IsPermanent(err))
	// Output:
	// attempts: 1 permanent: true
}

// After carries the wait the other end asked for. Do obeys it exactly, so
// widen it first (here a broker asked for 2ms), as httpretry does with a
// Retry-After; the limits still apply.
func ExampleAfter() {
	calls := 0
	policy := retry.Policy{
		Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: time.Millisecond}, MaxRetries: 3},
		OnRetry:  func(e retry.Event) { fmt.Println("waiting", e.Wait, "after:", e.Err) },
	}
	err := retry.Do(context.Background(), policy, func(context.Context) error {
		if calls++; calls == 1 {
			return retry.After(2*time.Millisecond, errors.New("broker: slow down"))
		}
		return nil
	})
	fmt.Println(err)
	// Output:
	// waiting 2ms after: broker: slow down
	// <nil>
}

// Sleep is the wait for a loop of one's own over a backoff.Schedule: it
// refuses at once a wait that would pass the context's deadline, and ends
// early when the context does.
func ExampleSleep() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	fmt.Println(retry.Sleep(ctx, time.Millisecond))
	err := retry.Sleep(ctx, 2*time.Hour)
	fmt.Println(err, errors.Is(err, context.DeadlineExceeded))
	// Output:
	// <nil>
	// backoff: the next wait would end after the deadline true
}

// An Error carries the last error, the attempts, the time and why it
// stopped, and errors.Is reaches both the last error and the cause.
func ExampleError() {
	refused := errors.New("dial tcp 10.0.0.4:5432: connect: connection refused")
	var err error = &retry.Error{Err: refused, Attempts: 4, Elapsed: 7312 * time.Millisecond, Cause: backoff.ErrDeadline}
	fmt.Println(err)
	fmt.Println(errors.Is(err, refused), errors.Is(err, context.DeadlineExceeded))
	var timedOut interface{ Timeout() bool } // as net.Error asks
	fmt.Println(errors.As(err, &timedOut) && timedOut.Timeout())
	// Output:
	// retry: giving up after 4 attempts in 7.31s (backoff: the next wait would end after the deadline): dial tcp 10.0.0.4:5432: connect: connection refused
	// true true
	// true
}

// fetchConfig is the user's own code: it retries with retry.Do, and takes
// no clock, no sleeper and no option for tests.
func fetchConfig(ctx context.Context, get func(context.Context) (string, error)) (string, error) {
	policy := retry.Policy{Schedule: backoff.Schedule{
		Curve:      backoff.Value{BaseDelay: time.Second, MaxDelay: time.Minute, JitterMode: backoff.JitterNone},
		MaxRetries: 3,
	}}
	return retry.DoValue(ctx, policy, get)
}

// TestFetchConfig is how to test your own retrying code: in a
// testing/synctest bubble every timer is virtual, so three retries with
// waits of a second, two and four run in no time at all, and time.Now
// reports exactly what they would have taken. fetchConfig needs no
// injected clock. Copy it as a test of your own, as the synctest docs do.
func TestFetchConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		calls := 0
		_, err := fetchConfig(t.Context(), func(context.Context) (string, error) {
			calls++
			return "", errors.New("503 Service Unavailable")
		})
		want := "retry: giving up after 4 attempts in 7s (backoff: no retries left): 503 Service Unavailable"
		if calls != 4 || time.Since(start) != 7*time.Second || err == nil || err.Error() != want {
			t.Errorf("%d calls over %v of virtual time, %v; want 4 over 7s, %s", calls, time.Since(start), err, want)
		}
	})
}

// A Budget shared by every call to one dependency: one that fails every
// call gets the Budget's saved retries once, then none, each call giving up
// at once with ErrBudget, until calls succeed again and earn a tenth of a
// retry each.
func ExampleBudget() {
	budget := &retry.Budget{Burst: 3}
	policy := retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: 5}, Budget: budget}
	// A dependency that fails every call: the Budget's 3 retries, then none.
	for range 3 {
		calls := 0
		err := retry.Do(context.Background(), policy, func(context.Context) error {
			calls++
			return errors.New("503 Service Unavailable")
		})
		fmt.Println("calls:", calls, "| budget exhausted:", errors.Is(err, retry.ErrBudget), "| retries left:", budget.Tokens())
	}
	for range 5 {
		retry.Do(context.Background(), policy, func(context.Context) error { return nil })
	}
	fmt.Println("after 5 successes:", budget.Tokens())
	// Bad luck: a retry that succeeds is given back, and its call earns.
	calls := 0
	retry.Do(context.Background(), policy, func(context.Context) error {
		if calls++; calls == 1 {
			return errors.New("503 Service Unavailable")
		}
		return nil
	})
	fmt.Println("calls:", calls, "| retries left:", budget.Tokens())
	// Output:
	// calls: 4 | budget exhausted: true | retries left: 0
	// calls: 1 | budget exhausted: true | retries left: 0
	// calls: 1 | budget exhausted: true | retries left: 0
	// after 5 successes: 1
	// calls: 2 | retries left: 1.2
}

// A Policy with a Name counted in retry.Stats, published with expvar and
// read back from /debug/vars, as a dashboard's scraper would: one call
// that succeeded at once, one after a retry, one that gave up.
func Example_expvar() {
	expvar.Publish("retry", retry.Stats) // once, in main
	server := httptest.NewServer(expvar.Handler())
	defer server.Close()

	policy := retry.Policy{Name: "example-inventory"}
	policy.UnmarshalText([]byte("no wait, 2 retries"))
	ctx := context.Background()
	retry.Do(ctx, policy, func(context.Context) error { return nil })
	calls := 0
	retry.Do(ctx, policy, func(context.Context) error {
		if calls++; calls == 1 {
			return errors.New("connection reset")
		}
		return nil
	})
	retry.Do(ctx, policy, func(context.Context) error { return errors.New("connection refused") })

	resp, err := http.Get(server.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var vars struct {
		Retry map[string]struct {
			AtOnce  int `json:"successful_without_retry"`
			After   int `json:"successful_with_retry"`
			Failed  int `json:"failed_with_retry"`
			Retries int `json:"retries"`
			GaveUp  struct {
				MaxRetries int `json:"max_retries"`
			} `json:"gave_up"`
		} `json:"retry"`
	}
	json.NewDecoder(resp.Body).Decode(&vars)
	c := vars.Retry["example-inventory"]
	fmt.Printf("at once %d, after retries %d, failed after retries %d (max retries %d); %d retries\n", c.AtOnce, c.After, c.Failed, c.GaveUp.MaxRetries, c.Retries)
	// Output:
	// at once 1, after retries 1, failed after retries 1 (max retries 1); 3 retries
}

// OnDone hears how each call ended, for a metric or a trace of one's own:
// its outcome, in resilience4j's words, its attempts and why it stopped.
func ExamplePolicy_onDone() {
	var policy retry.Policy
	policy.UnmarshalText([]byte("no wait, 1 retry"))
	policy.OnDone = func(d retry.Done) {
		fmt.Printf("%v after %d attempts (cause: %v)\n", d.Outcome, d.Attempts, d.Cause)
	}
	ctx := context.Background()
	retry.Do(ctx, policy, func(context.Context) error { return nil })
	retry.Do(ctx, policy, func(context.Context) error { return errors.New("connection refused") })
	retry.Do(ctx, policy, func(context.Context) error { return retry.Permanent(errors.New("404 Not Found")) })
	// Output:
	// successful_without_retry after 1 attempts (cause: <nil>)
	// failed_with_retry after 2 attempts (cause: backoff: no retries left)
	// failed_without_retry after 1 attempts (cause: <nil>)
}

// Reading retry.Stats by name, as an exporter does for each row (Each), or
// for a name's total (Of), with a Budget's tokens as a gauge.
func ExampleTable_Each() {
	budget := &retry.Budget{Burst: 3}
	for _, host := range []string{"db-1", "db-2"} {
		policy := retry.Policy{Name: "example-orders", Host: host, Budget: budget}
		policy.UnmarshalText([]byte("no wait, 3 retries"))
		retry.Do(context.Background(), policy, func(context.Context) error { return nil })
	}
	retry.Stats.Each(func(name, host string, c retry.Counts) {
		if name == "example-orders" {
			fmt.Printf("%s %s: %d calls, %d attempts, %.1f tokens\n", name, host, c.Calls(), c.Attempts, c.Tokens)
		}
	})
	total := retry.Stats.Of("example-orders")
	fmt.Println("in all:", total.SucceededAtOnce, "succeeded at once,", total.GaveUp.Budget, "refused by the budget")
	// Output:
	// example-orders db-1: 1 calls, 1 attempts, 3.0 tokens
	// example-orders db-2: 1 calls, 1 attempts, 3.0 tokens
	// in all: 2 succeeded at once, 0 refused by the budget
}

// Allow takes a retry from a Budget for a loop of one's own beside Do's
// calls: what it takes, Do's retries cannot.
func ExampleBudget_Allow() {
	budget := &retry.Budget{Burst: 1}
	for i := range 3 {
		fmt.Printf("retry %d of a loop of one's own: %v\n", i+1, budget.Allow())
	}
	// Output:
	// retry 1 of a loop of one's own: true
	// retry 2 of a loop of one's own: false
	// retry 3 of a loop of one's own: false
}

// A test counts into a table of its own, from zero whatever ran before,
// and retry.Stats, the process's, does not see its calls.
func ExampleNewTable() {
	table := retry.NewTable()
	policy := retry.Policy{Name: "orders", Table: table}
	policy.UnmarshalText([]byte("no wait, 2 retries"))
	retry.Do(context.Background(), policy, func(context.Context) error { return errors.New("down") })
	c := table.Of("orders")
	fmt.Println(c.FailedAfterRetries, "failed after", c.Retries, "retries; gave up at the limit:", c.GaveUp.MaxRetries)
	fmt.Println("in retry.Stats:", retry.Stats.Of("orders").Calls())
	// Output:
	// 1 failed after 2 retries; gave up at the limit: 1
	// in retry.Stats: 0
}

// The retries each call needed, as a histogram: Counts[i] is the calls
// that made i retries, up to PerCallBounds's last; RetryDelay the time
// each waited, over DelayBounds.
func ExamplePerCall() {
	table := retry.NewTable()
	policy := retry.Policy{Name: "orders", Table: table}
	policy.UnmarshalText([]byte("no wait, 5 retries"))
	for _, failures := range []int{0, 0, 1, 3} {
		retry.Do(context.Background(), policy, func(context.Context) error {
			if failures > 0 {
				failures--
				return errors.New("busy")
			}
			return nil
		})
	}
	c := table.Of("orders")
	fmt.Println("bounds:", retry.PerCallBounds, "counts:", c.RetriesPerCall.Counts, "sum:", c.RetriesPerCall.Sum)
	fmt.Println("calls that never waited:", c.RetryDelay.Counts[0], "of", len(retry.DelayBounds)+1, "buckets")
	// Output:
	// bounds: [0 1 2 3 4] counts: [2 1 0 1 0 0] sum: 4
	// calls that never waited: 2 of 16 buckets
}
