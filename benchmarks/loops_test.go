package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	avast "github.com/avast/retry-go/v5"
	cenkaltiv7 "github.com/cenkalti/backoff/v7"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	sethvargo "github.com/sethvargo/go-retry"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/retry"
)

// The retry loops side by side: retry.Do, and the loop each peer ships,
// each configured as its own documentation says, run in a testing/synctest
// bubble so that their waits take no real time and time.Now inside is
// exact. Every cell of the table in benchmarks/README.md is a fact one of
// these runs observes, asserted below:
//
//	go test -run TestLoops -v

// loopCase is one configuration of a retry loop: a constant wait, a number
// of retries, and optionally a classifier that says yes to every error and
// a hook for each retry.
type loopCase struct {
	wait     time.Duration
	retries  int
	retryAll bool   // install a classifier that says yes to every error
	hook     func() // the peer's retry hook, when it has one
}

// loopPeer is one library's retry loop.
type loopPeer struct {
	name string
	// do runs fn under ctx, retrying as c says, the way the peer's users
	// write it.
	do func(ctx context.Context, c loopCase, fn func(context.Context) error) error
	// permanent marks an error as not to be retried; nil when the peer has
	// no such mark.
	permanent func(error) error
	// classifier and hook say whether the peer takes them.
	classifier, hook bool
	// note is what the table says where the peer has no such thing.
	noPermanent, noHook string
}

// errFailsafePermanent is the error failsafe-go users abort on: it has no
// permanent mark of its own, but a policy aborts on the errors it names.
var errFailsafePermanent = errors.New("permanent")

var loopPeers = []loopPeer{
	{
		name: "unherd/backoff retry.Do",
		do: func(ctx context.Context, c loopCase, fn func(context.Context) error) error {
			p := retry.Policy{Schedule: backoff.Schedule{
				Curve:      backoff.Value{BaseDelay: c.wait, Multiplier: 1, JitterMode: backoff.JitterNone},
				MaxRetries: c.retries,
			}}
			if c.retryAll {
				p.Retryable = func(error) bool { return true }
			}
			if c.hook != nil {
				p.OnRetry = func(retry.Event) { c.hook() }
			}
			return retry.Do(ctx, p, fn)
		},
		permanent:  retry.Permanent,
		classifier: true, hook: true,
	},
	{
		name: "cenkalti/backoff/v7 Retry",
		do: func(ctx context.Context, c loopCase, fn func(context.Context) error) error {
			opts := []cenkaltiv7.RetryOption{
				cenkaltiv7.WithBackOff(cenkaltiv7.NewConstantBackOff(c.wait)),
				cenkaltiv7.WithMaxTries(uint(c.retries + 1)),
			}
			if c.hook != nil {
				opts = append(opts, cenkaltiv7.WithNotify(func(error, time.Duration) { c.hook() }))
			}
			_, err := cenkaltiv7.Retry(ctx, func() (struct{}, error) { return struct{}{}, fn(ctx) }, opts...)
			return err
		},
		permanent: cenkaltiv7.Permanent,
		hook:      true,
	},
	{
		name: "sethvargo/go-retry Do",
		do: func(ctx context.Context, c loopCase, fn func(context.Context) error) error {
			next := sethvargo.BackoffFunc(func() (time.Duration, bool) { return c.wait, false })
			return sethvargo.Do(ctx, sethvargo.WithMaxRetries(uint64(c.retries), next), func(ctx context.Context) error {
				return sethvargo.RetryableError(fn(ctx)) // it retries only what is marked; a classifier that says yes marks all
			})
		},
		noPermanent: "– (retries only errors marked `RetryableError`)",
		noHook:      "– (no hook)",
	},
	{
		name: "avast/retry-go/v5 Do",
		do: func(ctx context.Context, c loopCase, fn func(context.Context) error) error {
			opts := []avast.Option{
				avast.Context(ctx),
				avast.Attempts(uint(c.retries + 1)),
				avast.Delay(c.wait),
				avast.DelayType(avast.FixedDelay),
			}
			if c.retryAll {
				opts = append(opts, avast.RetryIf(func(error) bool { return true }))
			}
			if c.hook != nil {
				opts = append(opts, avast.OnRetry(func(uint, error) { c.hook() }))
			}
			return avast.New(opts...).Do(func() error { return fn(ctx) })
		},
		permanent:  avast.Unrecoverable,
		classifier: true, hook: true,
	},
	{
		name: "failsafe-go retrypolicy",
		do: func(ctx context.Context, c loopCase, fn func(context.Context) error) error {
			b := retrypolicy.NewBuilder[any]().
				WithMaxRetries(c.retries).
				WithDelay(c.wait).
				AbortOnErrors(errFailsafePermanent)
			if c.retryAll {
				b = b.HandleIf(func(_ any, err error) bool { return err != nil })
			}
			if c.hook != nil {
				b = b.OnRetryScheduled(func(failsafe.ExecutionScheduledEvent[any]) { c.hook() })
			}
			return failsafe.With[any](b.Build()).WithContext(ctx).RunWithExecution(func(exec failsafe.Execution[any]) error {
				return fn(exec.Context())
			})
		},
		permanent:  func(err error) error { return fmt.Errorf("%w: %w", errFailsafePermanent, err) },
		classifier: true, hook: true,
	},
}

var errRefused = errors.New("connection refused")

// loopRow is what one peer did in each scenario.
type loopRow struct {
	deadlineAfter  time.Duration // when it returned, from a 1.5s context, a fast failure and a 2s wait
	deadlineErr    error
	lastSurvives   bool // the last error is in the chain after cancellation mid-wait
	permanentCalls int  // calls of a function that fails permanently, under a classifier that says yes
	hooks, calls   int  // hook calls, and calls, for 3 failing attempts (2 retries)
	exhaustedErr   error
	exhaustedAfter time.Duration
}

// runLoopPeer runs every scenario against p in virtual time.
func runLoopPeer(t *testing.T, p loopPeer) loopRow {
	var r loopRow
	fail := func(context.Context) error { return errRefused }
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		start := time.Now()
		r.deadlineErr = p.do(ctx, loopCase{wait: 2 * time.Second, retries: 5}, fail)
		r.deadlineAfter = time.Since(start)
	})
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(500*time.Millisecond, cancel)
		err := p.do(ctx, loopCase{wait: time.Second, retries: 5}, fail)
		r.lastSurvives = errors.Is(err, errRefused)
	})
	if p.permanent != nil {
		synctest.Test(t, func(t *testing.T) {
			p.do(context.Background(), loopCase{wait: time.Second, retries: 5, retryAll: true}, func(context.Context) error {
				r.permanentCalls++
				return p.permanent(errRefused)
			})
		})
	}
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		c := loopCase{wait: time.Second, retries: 2}
		if p.hook {
			c.hook = func() { r.hooks++ }
		}
		r.exhaustedErr = p.do(context.Background(), c, func(context.Context) error { r.calls++; return errRefused })
		r.exhaustedAfter = time.Since(start)
	})
	return r
}

// The table's cells, from a row.

func (r loopRow) deadlineCell() string {
	when := "returns at once"
	if r.deadlineAfter > 0 {
		when = "sleeps " + r.deadlineAfter.String() + " into it"
	}
	return fmt.Sprintf("%s: `%s`", when, oneLine(r.deadlineErr))
}

func (r loopRow) lastCell() string {
	if r.lastSurvives {
		return "kept"
	}
	return "**lost**: the bare context error"
}

func (p loopPeer) permanentCell(r loopRow) string {
	switch {
	case p.permanent == nil:
		return p.noPermanent
	case !p.classifier:
		return fmt.Sprintf("no (%s; no classifier to override it)", callsOf(r.permanentCalls))
	case r.permanentCalls > 1:
		return fmt.Sprintf("**yes**: %s", callsOf(r.permanentCalls))
	}
	return fmt.Sprintf("no (%s)", callsOf(r.permanentCalls))
}

func (p loopPeer) hookCell(r loopRow) string {
	switch {
	case !p.hook:
		return p.noHook
	case r.hooks >= r.calls:
		return fmt.Sprintf("**yes**: %d hooks for %d attempts", r.hooks, r.calls)
	}
	return fmt.Sprintf("no: %d hooks for %d attempts", r.hooks, r.calls)
}

// messageCell: does the message, after 3 attempts over 2s, say how many
// attempts and how long?
func (r loopRow) messageCell() string {
	msg := r.exhaustedErr.Error()
	attempts := strings.Contains(msg, "3 attempts") || strings.Contains(msg, "#3")
	took := strings.Contains(msg, r.exhaustedAfter.String())
	var says string
	switch {
	case attempts && took:
		says = "yes"
	case attempts:
		says = "attempts, not the time"
	case took:
		says = "the time, not the attempts"
	default:
		says = "neither"
	}
	return fmt.Sprintf("%s: `%s`", says, oneLine(r.exhaustedErr))
}

func callsOf(n int) string {
	if n == 1 {
		return "1 call"
	}
	return fmt.Sprintf("%d calls", n)
}

// oneLine is an error's message on one line, for a table cell.
func oneLine(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

func loopTable(t *testing.T) (string, map[string]loopRow) {
	var b strings.Builder
	b.WriteString("| library | deadline: 1.5s context, a fast failure, a 2s wait | last error after cancellation mid-wait | permanent error retried under a classifier that says yes? | hook after the final attempt? | message names the attempts and the time? |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	rows := map[string]loopRow{}
	for _, p := range loopPeers {
		r := runLoopPeer(t, p)
		rows[p.name] = r
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", p.name, r.deadlineCell(), r.lastCell(), p.permanentCell(r), p.hookCell(r), r.messageCell())
	}
	return b.String(), rows
}

// TestLoops prints the behaviour table of benchmarks/README.md and asserts
// what each cell says, so that a change in a peer or in retry fails here
// rather than leaving the table wrong.
func TestLoops(t *testing.T) {
	table, rows := loopTable(t)
	fmt.Print(table)

	type want struct {
		deadlineAfter  time.Duration
		lastSurvives   bool
		permanentCalls int // 0: the peer has no mark
		hooks          int // -1: no hook
		message        string
	}
	for name, w := range map[string]want{
		"unherd/backoff retry.Do":   {0, true, 1, 2, "yes"},
		"cenkalti/backoff/v7 Retry": {1500 * time.Millisecond, true, 1, 2, "neither"},
		"sethvargo/go-retry Do":     {1500 * time.Millisecond, false, 0, -1, "neither"},
		"avast/retry-go/v5 Do":      {1500 * time.Millisecond, true, 6, 3, "attempts, not the time"},
		"failsafe-go retrypolicy":   {1500 * time.Millisecond, false, 1, 2, "neither"},
	} {
		r, ok := rows[name]
		if !ok {
			t.Fatalf("no row for %s", name)
		}
		if r.deadlineAfter != w.deadlineAfter || r.lastSurvives != w.lastSurvives || r.permanentCalls != w.permanentCalls {
			t.Errorf("%s: returned after %v (want %v), last error kept %v (want %v), permanent calls %d (want %d)",
				name, r.deadlineAfter, w.deadlineAfter, r.lastSurvives, w.lastSurvives, r.permanentCalls, w.permanentCalls)
		}
		if w.hooks >= 0 && r.hooks != w.hooks || r.calls != 3 {
			t.Errorf("%s: %d hooks for %d calls, want %d for 3", name, r.hooks, r.calls, w.hooks)
		}
		if got := r.messageCell(); !strings.HasPrefix(got, w.message+":") {
			t.Errorf("%s: message cell %q, want %q", name, got, w.message)
		}
	}
	// Ours, exactly: the deadline rule returns the real error at once, with
	// the deadline in the chain.
	r := rows["unherd/backoff retry.Do"]
	if !errors.Is(r.deadlineErr, errRefused) || !errors.Is(r.deadlineErr, context.DeadlineExceeded) {
		t.Errorf("retry.Do under the deadline: %v, want the real error and the deadline both in the chain", r.deadlineErr)
	}
}
