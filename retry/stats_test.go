package retry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/retry"
)

// Each test counts under a name of its own, made anew for each run, so
// that -count=N runs it N times against the process's one table.
var runs atomic.Int64

// unique returns name with this run's number.
func unique(name string) string { return fmt.Sprintf("%s-%d", name, runs.Add(1)) }

// TestStatsCounts: a mix of outcomes through Do, DoValue and a Loop under
// one name, and every count is what was made: the outcomes, the attempts,
// the waits and the time waited (virtual, so exact), the time the calls
// that failed took, and why each failure stopped.
func TestStatsCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		name := unique("test-counts")
		p := retry.Policy{Name: name, Schedule: constant(time.Second, 2)}
		ok := func(context.Context) error { return nil }
		fail := func(context.Context) error { return errFault }
		ctx := context.Background()

		for range 3 { // at once: 3 calls, 3 attempts
			retry.Do(ctx, p, ok)
		}
		retry.DoValue(ctx, p, func(context.Context) (int, error) { return 1, nil }) // at once
		n := 0
		retry.Do(ctx, p, func(context.Context) error { // after 2 retries: 3 attempts, 2 waits of 1s
			if n++; n < 3 {
				return errFault
			}
			return nil
		})
		retry.Do(ctx, p, func(context.Context) error { return retry.Permanent(errFault) }) // not retryable, at once
		retry.Do(ctx, p, fail)                                                             // MaxRetries: 3 attempts, 2 waits
		elapsed := p
		elapsed.Schedule = backoff.Schedule{Curve: constant(time.Second, 0).Curve, MaxElapsed: time.Second}
		retry.Do(ctx, elapsed, fail) // MaxElapsed: 2 attempts, 1 wait
		soon, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		retry.Do(soon, p, fail) // the deadline rule, after a retry: 2 attempts, 1 wait
		cancel()
		broke := p
		broke.Budget = &retry.Budget{Burst: -1}
		retry.Do(ctx, broke, fail) // the budget: 1 attempt, no wait
		done, cancel := context.WithCancel(ctx)
		cancel()
		retry.Do(done, p, ok) // the context, before fn: no attempt
		mid, cancel := context.WithCancel(ctx)
		go func() { time.Sleep(300 * time.Millisecond); cancel() }()
		retry.Do(mid, p, fail) // the context, mid-wait: 1 attempt, a wait of 300ms

		loop := retry.NewLoop(p)
		loop.Wait(ctx)      // attempt 1
		loop.Wait(ctx)      // a wait of 1s, attempt 2
		loop.Reset()        // a run that succeeded after a retry
		loop.Wait(ctx)      // attempt 1
		loop.Wait(ctx)      // a wait of 1s
		loop.Wait(ctx)      // a wait of 1s
		if loop.Wait(ctx) { // MaxRetries: a run that failed after retries
			t.Fatal("a Loop of 2 retries waited a third time")
		}

		got := retry.Stats.Of(name)
		want := retry.Counts{
			SucceededAtOnce:       4,
			SucceededAfterRetries: 2, // Do, and the Loop's first run
			FailedWithoutRetry:    3, // Permanent, the budget, the context before fn
			FailedAfterRetries:    5, // MaxRetries, MaxElapsed, the deadline, the context mid-wait (a wait started: a retry), the Loop's second run
			Attempts:              4 + 3 + 1 + 3 + 2 + 2 + 1 + 0 + 1 + 2 + 2,
			Retries:               2 + 2 + 1 + 1 + 1 + 1 + 2,
			Waited:                2*time.Second + 2*time.Second + time.Second + time.Second + 300*time.Millisecond + time.Second + 2*time.Second,
			Took:                  2*time.Second + 2*time.Second + time.Second + time.Second + 300*time.Millisecond + time.Second + 2*time.Second,
			GaveUp:                retry.GaveUp{MaxRetries: 2, MaxElapsed: 1, Deadline: 1, Budget: 1, Context: 2, NotRetryable: 1},
			// By call: no retry (4 at once, Permanent, the budget, the
			// context before fn), 1 (MaxElapsed, the deadline, mid-wait, the
			// Loop's first run), 2 (Do, MaxRetries, the Loop's second run).
			RetriesPerCall: retry.PerCall{Counts: [6]uint64{7, 4, 3}, Sum: 4 + 3*2},
			HedgesPerCall:  retry.PerCall{Counts: [6]uint64{14}},
			// Waited by call: 0 (7 calls); 300ms (at most 0.5s); 1s (3, at
			// most 1s); 2s (3, at most 2.5s).
			RetryDelay: retry.Delays{Counts: [16]uint64{0: 7, 8: 1, 9: 3, 10: 3}, Sum: 9*time.Second + 300*time.Millisecond},
		}
		got.Tokens, want.Tokens = 0, 0 // the budget's gauge: TestStatsTokens
		if got != want {
			t.Errorf("Stats.Of(%q) =\n%+v\nwant\n%+v", name, got, want)
		}
	})
}

// TestStatsConcurrent: 64 goroutines under one name, counted exactly.
func TestStatsConcurrent(t *testing.T) {
	name, each := unique("test-concurrent"), 200
	p := retry.Policy{Name: name, Schedule: noWait(1)}
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for i := range each {
				calls := 0
				retry.Do(context.Background(), p, func(context.Context) error {
					calls++
					if (g+i)%4 == 0 && calls == 1 { // a quarter fail once, then succeed
						return errFault
					}
					if (g+i)%4 == 1 { // a quarter fail twice: MaxRetries
						return errFault
					}
					return nil
				})
			}
		})
	}
	wg.Wait()
	got := retry.Stats.Of(name)
	quarter := uint64(64 * each / 4)
	if got.SucceededAtOnce != 2*quarter || got.SucceededAfterRetries != quarter || got.FailedAfterRetries != quarter ||
		got.Attempts != 2*quarter+2*quarter+2*quarter || got.Retries != 2*quarter || got.GaveUp.MaxRetries != quarter {
		t.Fatalf("64 goroutines: %+v; want %d at once, %d after a retry, %d failed after one, %d attempts", got, 2*quarter, quarter, quarter, 6*quarter)
	}
}

// TestStatsNoName: a Policy without a Name counts nothing.
func TestStatsNoName(t *testing.T) {
	before := 0
	retry.Stats.Each(func(string, string, retry.Counts) { before++ })
	retry.Do(context.Background(), retry.Policy{}, func(context.Context) error { return nil })
	after := 0
	retry.Stats.Each(func(string, string, retry.Counts) { after++ })
	if before != after || retry.Stats.Of("").Calls() != 0 {
		t.Fatalf("a call with no Name: %d rows before, %d after, %d calls under \"\"", before, after, retry.Stats.Of("").Calls())
	}
}

// TestStatsHosts: a name's rows by Host, summed by Of, listed by Each in
// order; past 1,024 hosts the rest count together under "other".
func TestStatsHosts(t *testing.T) {
	name := unique("test-hosts")
	ok := func(context.Context) error { return nil }
	for i := range 1100 {
		retry.Do(context.Background(), retry.Policy{Name: name, Host: fmt.Sprintf("h%04d", i)}, ok)
	}
	retry.Do(context.Background(), retry.Policy{Name: name}, ok) // a row with no host
	var hosts []string
	var other uint64
	retry.Stats.Each(func(n, host string, c retry.Counts) {
		if n == name {
			hosts = append(hosts, host)
			if host == "other" {
				other = c.Calls()
			}
		}
	})
	if len(hosts) != 1024+2 || hosts[0] != "" || hosts[1] != "h0000" || other != 1100-1024 {
		t.Fatalf("1,100 hosts and none: %d rows (first %q, %q), %d under other; want 1,026 rows in order, 76 under other", len(hosts), hosts[0], hosts[1], other)
	}
	if got := retry.Stats.Of(name).SucceededAtOnce; got != 1101 {
		t.Fatalf("Of(%q) = %d calls, want every host's, 1,101", name, got)
	}
}

// TestStatsTokens: a row's gauge is its Budget's Tokens; a name's, the sum
// of its rows'; none without a Budget.
func TestStatsTokens(t *testing.T) {
	b := &retry.Budget{Burst: 3}
	tokens, none := unique("test-tokens"), unique("test-no-tokens")
	retry.Do(context.Background(), retry.Policy{Name: tokens, Host: "a", Budget: b, Schedule: noWait(1)},
		func(context.Context) error { return errFault })
	retry.Do(context.Background(), retry.Policy{Name: tokens, Host: "b", Budget: &retry.Budget{Burst: 4}},
		func(context.Context) error { return nil })
	if got := retry.Stats.Of(tokens).Tokens; math.Abs(got-(2+4)) > 0.01 {
		t.Fatalf("Tokens of two rows, 2 and 4 held: %v", got)
	}
	retry.Do(context.Background(), retry.Policy{Name: none}, func(context.Context) error { return nil })
	if got := retry.Stats.Of(none).Tokens; !math.IsNaN(got) {
		t.Fatalf("Tokens with no Budget: %v, want NaN", got)
	}
}

// TestStatsJSON: String is JSON that encoding/json reads back, with every
// count under its name and the hosts beside, as expvar shows it.
func TestStatsJSON(t *testing.T) {
	p := retry.Policy{Name: unique("test-json"), Host: "api.example:443", Budget: &retry.Budget{Burst: math.Inf(1)}}
	retry.Do(context.Background(), p, func(context.Context) error { return nil })
	var table map[string]struct {
		SucceededAtOnce uint64 `json:"successful_without_retry"`
		Attempts        uint64 `json:"attempts"`
		GaveUp          struct {
			Budget uint64 `json:"budget"`
		} `json:"gave_up"`
		Tokens *float64 `json:"budget_tokens"`
		Hosts  map[string]struct {
			SucceededAtOnce uint64   `json:"successful_without_retry"`
			Tokens          *float64 `json:"budget_tokens"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(retry.Stats.String()), &table); err != nil {
		t.Fatalf("Stats.String() is not JSON: %v\n%s", err, retry.Stats.String())
	}
	row, ok := table[p.Name]
	host := row.Hosts["api.example:443"]
	if !ok || row.SucceededAtOnce != 1 || row.Attempts != 1 || host.SucceededAtOnce != 1 || host.Tokens == nil || *host.Tokens != math.MaxFloat64 {
		t.Fatalf("the JSON of one call: %+v", row)
	}
}

// TestOnDone: the hook hears each call's end, as the Error says it, and a
// Loop's runs.
func TestOnDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []retry.Done
		p := retry.Policy{Schedule: constant(time.Second, 1), OnDone: func(d retry.Done) { got = append(got, d) }}
		retry.Do(context.Background(), p, func(context.Context) error { time.Sleep(time.Millisecond); return nil })
		err := retry.Do(context.Background(), p, func(context.Context) error { return errFault })
		loop := retry.NewLoop(p)
		loop.Wait(context.Background())
		loop.Reset()
		want := []retry.Done{
			{Outcome: retry.SucceededAtOnce, Attempts: 1, Elapsed: time.Millisecond},
			{Outcome: retry.FailedAfterRetries, Attempts: 2, Elapsed: time.Second, Err: errFault, Cause: backoff.ErrMaxRetries},
			{Outcome: retry.SucceededAtOnce, Attempts: 1},
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("OnDone heard\n%v\nwant\n%v", got, want)
		}
		var e *retry.Error
		if !errors.As(err, &e) || e.Attempts != got[1].Attempts || e.Elapsed != got[1].Elapsed || e.Cause != got[1].Cause {
			t.Fatalf("OnDone's %v against the Error %v", got[1], err)
		}
	})
}

// TestOutcomeString: the names resilience4j gives its kinds.
func TestOutcomeString(t *testing.T) {
	for o, want := range map[retry.Outcome]string{
		retry.SucceededAtOnce: "successful_without_retry", retry.SucceededAfterRetries: "successful_with_retry",
		retry.FailedWithoutRetry: "failed_without_retry", retry.FailedAfterRetries: "failed_with_retry", 4: "unknown",
	} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String() = %q, want %q", o, got, want)
		}
	}
}

// TestStatsAllocs: a named call allocates nothing when it succeeds at
// once, and nothing per retry without a wait.
func TestStatsAllocs(t *testing.T) {
	p := retry.Policy{Name: unique("test-allocs")}
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	if n := testing.AllocsPerRun(100, func() { retry.Do(ctx, p, ok) }); n != 0 {
		t.Errorf("a named call that succeeds at once: %v allocations, want 0", n)
	}
	p.Schedule = noWait(3)
	calls := 0
	flaky := func(context.Context) error {
		if calls++; calls%3 != 0 {
			return errFault
		}
		return nil
	}
	with := testing.AllocsPerRun(100, func() { retry.Do(ctx, p, flaky) })
	p.Name = ""
	without := testing.AllocsPerRun(100, func() { retry.Do(ctx, p, flaky) })
	if with != without {
		t.Errorf("a named call with two retries and no wait: %v allocations, %v without a Name", with, without)
	}
}

// TestStatsWaitedExcludesHooks: the time waited is the waits', not the
// hooks' that run before each: a 100ms wait after an OnRetry that takes a
// second counts 100ms, through Do and a Loop alike.
func TestStatsWaitedExcludesHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := retry.Policy{Name: unique("test-waited-hooks"), Schedule: constant(100*time.Millisecond, 1),
			OnRetry: func(retry.Event) { time.Sleep(time.Second) }}
		retry.Do(context.Background(), p, func(context.Context) error { return errFault })
		if c := retry.Stats.Of(p.Name); c.Waited != 100*time.Millisecond || c.Took != 1100*time.Millisecond {
			t.Errorf("Do: waited %v, took %v; want 100ms and 1.1s", c.Waited, c.Took)
		}
		p.Name = unique("test-waited-hooks-loop")
		l := retry.NewLoop(p)
		l.Wait(context.Background())
		l.Wait(context.Background())
		if c := retry.Stats.Of(p.Name); c.Waited != 100*time.Millisecond {
			t.Errorf("Loop: waited %v, want 100ms", c.Waited)
		}
	})
}

// TestStatsLoopAttemptsAsMade: a Loop's attempts count as Wait returns
// true, so that a supervisor whose run never ends shows them, and its
// end counts none again.
func TestStatsLoopAttemptsAsMade(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := retry.Policy{Name: unique("test-loop-attempts"), Schedule: constant(time.Second, 5)}
		l := retry.NewLoop(p)
		for i := 1; i <= 4; i++ {
			l.Wait(context.Background())
			if c := retry.Stats.Of(p.Name); c.Attempts != uint64(i) || c.Retries != uint64(i-1) || c.Calls() != 0 {
				t.Fatalf("after %d attempts of a run not ended: %d attempts, %d retries, %d calls", i, c.Attempts, c.Retries, c.Calls())
			}
		}
		l.Reset()
		l.Wait(context.Background()) // a wait, then the next run's first attempt: a run with a retry, as Retries counts it
		l.Reset()
		c := retry.Stats.Of(p.Name)
		if c.Attempts != 5 || c.SucceededAfterRetries != 2 || c.SucceededAtOnce != 0 || c.Retries != 4 {
			t.Errorf("two runs, of 4 attempts and of 1: %+v", c)
		}
	})
}

// TestStatsNilContext: a nil ctx is a misuse, told in the error and not
// counted as a call, by Do and by a Loop alike.
func TestStatsNilContext(t *testing.T) {
	p := retry.Policy{Name: unique("test-nil-context")}
	//lint:ignore SA1012 the misuse under test
	if err := retry.Do(nil, p, func(context.Context) error { return nil }); err == nil {
		t.Fatal("Do(nil) returned nil")
	}
	l := retry.NewLoop(p)
	//lint:ignore SA1012 the misuse under test
	if l.Wait(nil) || l.Err() == nil {
		t.Fatal("Loop.Wait(nil) returned true, or no Err")
	}
	if c := retry.Stats.Of(p.Name); c.Calls() != 0 || c.GaveUp != (retry.GaveUp{}) {
		t.Errorf("a nil ctx counted: %+v", c)
	}
}

// TestPolicyTable: a Policy's own Table counts its calls from zero, and
// retry.Stats does not see them; httpretry counts its hosts there too.
func TestPolicyTable(t *testing.T) {
	tb := retry.NewTable()
	p := retry.Policy{Name: "test-policy-table", Table: tb}
	retry.Do(context.Background(), p, func(context.Context) error { return nil })
	retry.Do(context.Background(), p, func(context.Context) error { return retry.Permanent(errFault) })
	if c := tb.Of(p.Name); c.SucceededAtOnce != 1 || c.FailedWithoutRetry != 1 || c.GaveUp.NotRetryable != 1 || c.Attempts != 2 {
		t.Errorf("the Policy's table: %+v", c)
	}
	if c := retry.Stats.Of(p.Name); c.Calls() != 0 {
		t.Errorf("retry.Stats counted a call of a Policy with a Table of its own: %+v", c)
	}
	var rows int
	tb.Each(func(name, host string, c retry.Counts) { rows++ })
	if rows != 1 || !strings.Contains(tb.String(), `"test-policy-table":{"successful_without_retry":1`) {
		t.Errorf("the table: %d rows, %s", rows, tb.String())
	}
}
