package benchmarks

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cristalhq/hedgedhttp"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/failsafe-go/failsafe-go/timeout"
	retryablehttp "github.com/hashicorp/go-retryablehttp"

	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// A slow dependency: the tail of a call's latency, end to end. Real
// http.Clients, each library as its README sets it up and tuned as a
// careful user would, against the in-memory server of tailserver_test.go,
// in testing/synctest bubbles, so that minutes of calls take seconds:
//
//   - A: of every request, 5% answer 503 after 1ms, 2% after 1.5s, 1%
//     never send headers, the rest after 3–7ms; 20 callers share one
//     client, each making its calls one after another; each call has a 2s
//     deadline;
//   - B, The Tail at Scale: 10 replicas behind one host, each request to
//     one at random, each serving in 2–10ms but pausing for 0.5–1.5s now
//     and then; a call fans out to 100 keys at once through one client and
//     ends when all have answered; calls arrive open loop, 2 a second;
//   - C, a shift: A, whose every latency rises 4× when half the calls have
//     started; reported whole and after the shift.
//
//	go test -run TestTail -v               # the reference run; CI asserts its orderings
//	go test -run TestTail -v -tail-large   # ten times the calls, and ../docs/tail.svg

var tailLarge = flag.Bool("tail-large", false, "run TestTail with ten times the calls, and write docs/tail.svg")

// tailTarget is what an arm is built on: the server's Base, as an
// http.Transport with no timeout would be, the same with a
// ResponseHeaderTimeout, and what a careful user would have tuned for the
// host by looking at its latencies.
type tailTarget struct {
	Base http.RoundTripper
	// HeaderTimeout is the Base with http.Transport's
	// ResponseHeaderTimeout set to d.
	HeaderTimeout func(d time.Duration) http.RoundTripper
	// Delay is a fixed hedge delay tuned to the host: its healthy p95,
	// rounded up, as The Tail at Scale advises.
	Delay time.Duration
	// Hedges is how many hedges of one request a user would allow.
	Hedges int
}

// tailArm is one client: new builds the RoundTripper every caller of a run
// shares, on the target of the run.
type tailArm struct {
	name  string
	short string // in the picture; empty: the name
	new   func(t tailTarget) http.RoundTripper
	// hedged marks cristalhq/hedgedhttp: see hedgedInBubble.
	hedged bool
	// only names the one scenario the arm runs in; empty: every one.
	only string
}

// runs reports whether the arm runs in sc.
func (a tailArm) runs(sc tailScenario) bool { return a.only == "" || a.only == sc.name }

// The arms' names, as the assertions and the picture find them.
const (
	armNone          = "no retries"
	armOurs          = "unherd/backoff httpretry, defaults"
	armOursNoBudget  = "unherd/backoff httpretry, NoBudget"
	armOursHeader    = "unherd/backoff httpretry, Base with ResponseHeaderTimeout 250ms"
	armRetryable     = "hashicorp/go-retryablehttp, RetryMax 3, waits 10ms–100ms, HTTPClient.Timeout 250ms"
	armFailsafe      = "failsafe-go, retry + timeout.New(250ms)"
	armFailsafeDelay = "failsafe-go, retry + hedgepolicy.NewWithDelay(d) + timeout"
	armFailsafeQuant = "failsafe-go, retry + hedgepolicy.NewWithDelayQuantile(0.95, 1000, 100) + timeout"
	armHedgedHTTP    = "cristalhq/hedgedhttp, NewRoundTripper(d, upto = hedges + 1)"
	armOursTimeout   = "unherd/backoff httpretry, AttemptTimeout 250ms"
	armOursHedgeD    = "unherd/backoff httpretry, AttemptTimeout 250ms, Hedge{Delay: d, Max: hedges}"
	armOursHedge     = "unherd/backoff httpretry, AttemptTimeout 250ms, Hedge{}"
	armOursHedge2    = "unherd/backoff httpretry, AttemptTimeout 250ms, Hedge{Max: 2}"
	armFailsafeOne   = "failsafe-go, retry + hedgepolicy.NewWithDelay(d), one hedge, + timeout"
	armFailsafeQOne  = "failsafe-go, retry + NewWithDelayQuantile(0.95, 1000, 100), one hedge, + timeout"
)

// failsafeRetry is the retry policy a failsafe-go user writes for a 2s
// deadline: failsafehttp's builder (it retries 5xx but 501, 429 and
// transport errors, timeout.ErrExceeded among them), 3 retries, backoff
// 10ms to 100ms (the builder's default is 2 retries with no wait).
func failsafeRetry() retrypolicy.RetryPolicy[*http.Response] {
	return failsafehttp.NewRetryPolicyBuilder().WithMaxRetries(3).WithBackoff(10*time.Millisecond, 100*time.Millisecond).Build()
}

// tailArms are the clients of every scenario. Policies compose outermost
// first, as failsafehttp.NewRoundTripper takes them: a retry of a hedged
// attempt whose every copy has its own 250ms timeout. An arm is one entry;
// httpretry's attempt timeout and hedging, for instance:
//
//	{name: "unherd/backoff httpretry, AttemptTimeout 250ms, Hedge{Delay: d}", short: "httpretry, Hedge{Delay: d}", new: func(t tailTarget) http.RoundTripper {
//		return &httpretry.Transport{Base: t.Base, AttemptTimeout: 250 * time.Millisecond, Hedge: &httpretry.Hedge{Delay: t.Delay, Max: t.Hedges}}
//	}},
var tailArms = []tailArm{
	{name: armNone, new: func(t tailTarget) http.RoundTripper { return t.Base }},
	{name: armOurs, short: "httpretry, defaults", new: func(t tailTarget) http.RoundTripper { return &httpretry.Transport{Base: t.Base} }},
	{name: armOursNoBudget, short: "httpretry, NoBudget", new: func(t tailTarget) http.RoundTripper {
		return &httpretry.Transport{Base: t.Base, Policy: retry.Policy{Budget: httpretry.NoBudget()}}
	}},
	{name: armOursHeader, short: "httpretry, Base with a 250ms header timeout", new: func(t tailTarget) http.RoundTripper {
		return &httpretry.Transport{Base: t.HeaderTimeout(250 * time.Millisecond)}
	}},
	{name: armOursTimeout, short: "httpretry, AttemptTimeout 250ms", new: func(t tailTarget) http.RoundTripper {
		return &httpretry.Transport{Base: t.Base, AttemptTimeout: 250 * time.Millisecond}
	}},
	{name: armOursHedgeD, short: "httpretry, + Hedge{Delay: d}", new: func(t tailTarget) http.RoundTripper {
		return &httpretry.Transport{Base: t.Base, AttemptTimeout: 250 * time.Millisecond, Hedge: &httpretry.Hedge{Delay: t.Delay, Max: t.Hedges}}
	}},
	{name: armOursHedge, short: "httpretry, + Hedge{}", new: func(t tailTarget) http.RoundTripper {
		return &httpretry.Transport{Base: t.Base, AttemptTimeout: 250 * time.Millisecond, Hedge: &httpretry.Hedge{}}
	}},
	{name: armOursHedge2, short: "httpretry, + Hedge{Max: 2}", new: func(t tailTarget) http.RoundTripper {
		return &httpretry.Transport{Base: t.Base, AttemptTimeout: 250 * time.Millisecond, Hedge: &httpretry.Hedge{Max: 2}}
	}},
	// go-retryablehttp: its defaults (4 retries, waits 1s to 30s) would
	// spend a 2s deadline on one wait; its per-attempt timeout is the
	// HTTPClient's Timeout (each attempt is one HTTPClient.Do), which also
	// bounds the body: read at once here, so it cuts nothing.
	{name: armRetryable, short: "go-retryablehttp, 3 retries, Timeout 250ms", new: func(t tailTarget) http.RoundTripper {
		c := retryablehttp.NewClient()
		c.HTTPClient = &http.Client{Transport: t.Base, Timeout: 250 * time.Millisecond}
		c.RetryMax = 3
		c.RetryWaitMin, c.RetryWaitMax = 10*time.Millisecond, 100*time.Millisecond
		c.Logger = nil
		return c.StandardClient().Transport
	}},
	{name: armFailsafe, short: "failsafe-go, retry + timeout 250ms", new: func(t tailTarget) http.RoundTripper {
		return failsafehttp.NewRoundTripper(t.Base, failsafeRetry(), timeout.New[*http.Response](250*time.Millisecond))
	}},
	// NewWithDelay(d) is NewBuilderWithDelay(d).Build(), one hedge; more
	// where the scenario's user would allow more.
	{name: armFailsafeDelay, short: "failsafe-go, + NewWithDelay(d)", new: func(t tailTarget) http.RoundTripper {
		hedge := hedgepolicy.NewBuilderWithDelay[*http.Response](t.Delay).WithMaxHedges(t.Hedges).Build()
		return failsafehttp.NewRoundTripper(t.Base, failsafeRetry(), hedge, timeout.New[*http.Response](250*time.Millisecond))
	}},
	// The quantile delay: the p95 of the last ~1,000 executions (its EMA's
	// age), hedging once 100 have been seen.
	{name: armFailsafeQuant, short: "failsafe-go, + NewWithDelayQuantile(0.95, …)", new: func(t tailTarget) http.RoundTripper {
		hedge := hedgepolicy.NewBuilderWithDelayQuantile[*http.Response](0.95, 1000, 100).WithMaxHedges(t.Hedges).Build()
		return failsafehttp.NewRoundTripper(t.Base, failsafeRetry(), hedge, timeout.New[*http.Response](250*time.Millisecond))
	}},
	// B's tuned arms send two hedges; with one, as Hedge{} does, in B
	// only (in A and C the tuned arms send one already).
	{name: armFailsafeOne, short: "failsafe-go, + NewWithDelay(d), one hedge", only: "B", new: func(t tailTarget) http.RoundTripper {
		hedge := hedgepolicy.NewWithDelay[*http.Response](t.Delay)
		return failsafehttp.NewRoundTripper(t.Base, failsafeRetry(), hedge, timeout.New[*http.Response](250*time.Millisecond))
	}},
	{name: armFailsafeQOne, short: "failsafe-go, + quantile delay, one hedge", only: "B", new: func(t tailTarget) http.RoundTripper {
		hedge := hedgepolicy.NewBuilderWithDelayQuantile[*http.Response](0.95, 1000, 100).Build()
		return failsafehttp.NewRoundTripper(t.Base, failsafeRetry(), hedge, timeout.New[*http.Response](250*time.Millisecond))
	}},
	// hedgedhttp hedges and does nothing else: no retry, no timeout; the
	// first response of any status wins.
	{name: armHedgedHTTP, short: "hedgedhttp, NewRoundTripper(d, upto)", hedged: true, new: func(t tailTarget) http.RoundTripper {
		rt, err := hedgedhttp.NewRoundTripper(t.Delay, t.Hedges+1, t.Base)
		if err != nil {
			panic(err)
		}
		return rt
	}},
}

// tailScenario is one model and its load.
type tailScenario struct {
	name, about string
	picture     string // its panel's title in the picture
	seed        uint64
	clients     int     // A, C: callers sharing the client, each calling one after another
	rate        float64 // B: calls a second, open loop (Poisson)
	calls       int     // in all
	keys        int     // requests a call fans out to
	deadline    time.Duration
	shift       bool          // C: latencies ×4 once half the calls have started
	delay       time.Duration // tailTarget.Delay
	hedges      int           // tailTarget.Hedges
}

// The tuning, as a user who has looked at the host's latencies would set
// it. A: the p95 of all times to headers is 6.9ms (the healthy answers
// reach 7ms, the 3% slow or hung never), so d = 7ms hedges about the 3%
// that need it; one hedge, as a second copy is slow only 3% of the time
// too. B: a replica's p95 is 9.6ms, so d = 10ms; two hedges, because a
// call that meets a pause has about 10 of its 100 keys on the paused
// replica, and each hedge lands there again one time in 10: one hedge
// each frees all of them 0.9^10 = 35% of the time, two 90%. C: the user
// of A, who tuned before the shift.

func tailScenarios(scale int) []tailScenario {
	return []tailScenario{{
		name: "A", seed: 2201, clients: 20, calls: 10000 * scale, keys: 1, deadline: 2 * time.Second,
		delay: 7 * time.Millisecond, hedges: 1,
		about:   "5% 503, 2% at 1.5s, 1% no headers, the rest 3–7ms; 20 callers on one client, one call after another; 2s deadline",
		picture: "A: 5% 503, 2% at 1.5s, 1% no headers, the rest 3–7ms; 20 callers; 2s deadline; d = 7ms",
	}, {
		name: "B", seed: 2202, rate: 2, calls: 2000 * scale, keys: 100, deadline: 2 * time.Second,
		delay: 10 * time.Millisecond, hedges: 2,
		about:   "The Tail at Scale: 10 replicas, each request to one at random, 2–10ms, each pausing 0.5–1.5s every 200s on average; a call fans out to 100 keys; 2 calls/s, open loop; 2s deadline",
		picture: "B, The Tail at Scale: a fan-out to 100 keys over 10 replicas that pause for ~1s now and then; d = 10ms, 2 hedges",
	}, {
		name: "C", seed: 2203, clients: 20, calls: 10000 * scale, keys: 1, deadline: 2 * time.Second, shift: true,
		delay: 7 * time.Millisecond, hedges: 1,
		about:   "A, whose every latency rises 4× once half the calls have started",
		picture: "C: A, whose every latency rises 4× halfway: the calls after the shift; d = 7ms still",
	}}
}

// tailResult is what one arm did in one scenario.
type tailResult struct {
	calls    []*tailCall
	requests int64 // every request the server saw
	paused   float64
}

// tailGet is one GET of key through client: it succeeds on a 200 whose
// body is read whole and is the key's.
func tailGet(ctx context.Context, client *http.Client, key int) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://dependency.example/k/%d", key), nil)
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return err == nil && resp.StatusCode == http.StatusOK && string(b) == string(tailBodyFor(key))
}

// tailLinger is how long a bubble waits, virtual, after its last call: the
// goroutines a library leaves (hedgedhttp's workers: 10s) end in it.
const tailLinger = 15 * time.Second

// runTail runs one arm in one scenario.
func runTail(t *testing.T, sc tailScenario, arm tailArm) tailResult {
	if arm.hedged {
		hedgedMu.Lock()
		defer hedgedMu.Unlock()
	}
	var res tailResult
	synctest.Test(t, func(t *testing.T) {
		if arm.hedged {
			hedgedInBubble()
		}
		srv := &tailServer{seed: sc.seed, t0: time.Now()}
		var arrivals []time.Duration // B
		if sc.rate > 0 {
			r := rand.New(rand.NewPCG(sc.seed, 1<<63))
			at := time.Duration(0)
			for range sc.calls {
				at += time.Duration(r.ExpFloat64() / sc.rate * float64(time.Second))
				arrivals = append(arrivals, at)
			}
			m := newReplicaModel(sc.seed, at+sc.deadline+time.Second)
			srv.model = m
			res.paused = m.pausedShare(at + sc.deadline + time.Second)
		} else {
			srv.model = slowModel{}
		}
		target := tailTarget{
			Base:          tailConn{srv: srv},
			HeaderTimeout: func(d time.Duration) http.RoundTripper { return tailConn{srv: srv, headerTimeout: d} },
			Delay:         sc.delay,
			Hedges:        sc.hedges,
		}
		client := &http.Client{Transport: arm.new(target)}
		calls := make([]*tailCall, sc.calls)
		var started atomic.Int64
		do := func(c *tailCall) {
			if n := started.Add(1) - 1; sc.shift && n == int64(sc.calls/2) {
				srv.shifted.Store(true)
			}
			c.second = srv.shifted.Load()
			ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), tailCallKey{}, c), sc.deadline)
			defer cancel()
			start := time.Now()
			if sc.keys == 1 {
				c.ok = tailGet(ctx, client, 0)
			} else {
				var wg sync.WaitGroup
				var failed atomic.Bool
				for k := range sc.keys {
					wg.Go(func() {
						if !tailGet(ctx, client, k) {
							failed.Store(true)
						}
					})
				}
				wg.Wait()
				c.ok = !failed.Load()
			}
			c.latency = time.Since(start)
		}
		var wg sync.WaitGroup
		if sc.rate > 0 {
			for i, at := range arrivals {
				time.Sleep(at - time.Since(srv.t0))
				c := &tailCall{index: i, sent: make([]atomic.Int32, sc.keys)}
				calls[i] = c
				wg.Go(func() { do(c) })
			}
		} else {
			per := sc.calls / sc.clients
			for caller := range sc.clients {
				wg.Go(func() {
					for i := range per {
						c := &tailCall{client: caller, index: i, sent: make([]atomic.Int32, sc.keys)}
						calls[caller*per+i] = c
						do(c)
					}
				})
			}
		}
		wg.Wait()
		time.Sleep(tailLinger)
		res.calls, res.requests = calls, srv.requests.Load()
	})
	return res
}

// tailRow is one arm's line of a table.
type tailRow struct {
	arm, short      string
	calls           int
	success         float64
	p50, p90, p99   time.Duration
	p999, max       time.Duration
	requestsPerCall float64
}

// tailRowOf summarises the calls keep selects (nil: all). The quantiles
// are nearest-rank over every call, succeeded or not: a call that failed
// counts the time it took to fail.
func tailRowOf(arm tailArm, res tailResult, keep func(*tailCall) bool) tailRow {
	var lat []time.Duration
	ok, requests := 0, 0
	for _, c := range res.calls {
		if keep != nil && !keep(c) {
			continue
		}
		lat = append(lat, c.latency)
		requests += c.requests()
		if c.ok {
			ok++
		}
	}
	short := arm.short
	if short == "" {
		short = arm.name
	}
	if len(lat) == 0 {
		return tailRow{arm: arm.name, short: short}
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(lat)))) - 1
		return lat[max(i, 0)]
	}
	return tailRow{arm: arm.name, short: short, calls: len(lat), success: float64(ok) / float64(len(lat)),
		p50: q(0.5), p90: q(0.9), p99: q(0.99), p999: q(0.999), max: lat[len(lat)-1],
		requestsPerCall: float64(requests) / float64(len(lat))}
}

// tailDur prints a latency to 2 or 3 significant figures.
func tailDur(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < 10:
		return fmt.Sprintf("%.1fms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0fms", ms)
	}
	return fmt.Sprintf("%.2fs", ms/1000)
}

// tailTable prints rows as a Markdown table.
func tailTable(title string, rows []tailRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n| client | success | p50 | p90 | p99 | p99.9 | max | requests per call |\n|---|--:|--:|--:|--:|--:|--:|--:|\n", title)
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %.2f%% | %s | %s | %s | %s | %s | %.3f |\n", r.arm, 100*r.success,
			tailDur(r.p50), tailDur(r.p90), tailDur(r.p99), tailDur(r.p999), tailDur(r.max), r.requestsPerCall)
	}
	return b.String()
}

// runTailScenario runs every arm of sc, as many at once as there are
// processors, and returns the results in the arms' order.
func runTailScenario(t *testing.T, sc tailScenario) []tailResult {
	results := make([]tailResult, len(tailArms))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, arm := range tailArms {
		if !arm.runs(sc) {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = runTail(t, sc, arm)
		})
	}
	wg.Wait()
	return results
}

// tailPanel is what the picture draws of one scenario.
type tailPanel struct {
	title string
	rows  []tailRow
}

// TestTail runs every arm in every scenario, prints a table for each (and
// for C, one of the calls after the shift), and asserts the orderings that
// hold by construction, each with a wide margin:
//
//   - A: every hedging arm's p99 is under a tenth of no retries' (whose 1%
//     that never answer cost the 2s deadline), and a per-attempt timeout
//     (httpretry over a Base with one) brings httpretry's p99 under half
//     of its defaults' (which wait out every 1.5s answer);
//   - A: httpretry's defaults succeed more often than no retries, by more
//     than the 503s they retry minus the hangs (4 points);
//   - B: every hedging arm's p99 is under half of no retries';
//   - C: after the shift, a fixed 7ms delay hedges every request (the
//     fastest answer now takes 12ms): failsafe-go's NewWithDelay and
//     hedgedhttp send at least 1.8 requests a call, and the quantile
//     delay fewer than either.
func TestTail(t *testing.T) {
	if testing.Short() {
		t.Skip("about 15 seconds")
	}
	scale := 1
	if *tailLarge {
		scale = 10
	}
	var pictured []tailPanel
	rows := map[string]map[string]tailRow{}
	for _, sc := range tailScenarios(scale) {
		results := runTailScenario(t, sc)
		var table, after []tailRow
		rows[sc.name] = map[string]tailRow{}
		for i, arm := range tailArms {
			if !arm.runs(sc) {
				continue
			}
			r := tailRowOf(arm, results[i], nil)
			if seen := results[i].requests; int64(r.requestsPerCall*float64(r.calls)+0.5) != seen {
				t.Errorf("%s, %s: the calls counted %.0f requests, the server %d", sc.name, arm.name, r.requestsPerCall*float64(r.calls), seen)
			}
			table = append(table, r)
			rows[sc.name][arm.name] = r
			if sc.shift {
				a := tailRowOf(arm, results[i], func(c *tailCall) bool { return c.second })
				after = append(after, a)
				if rows["C after"] == nil {
					rows["C after"] = map[string]tailRow{}
				}
				rows["C after"][arm.name] = a
			}
		}
		title := fmt.Sprintf("Scenario %s: %s. %d calls per arm; d = %v, hedges = %d; seed %d.", sc.name, sc.about, sc.calls, sc.delay, sc.hedges, sc.seed)
		if sc.rate > 0 {
			slow := 0
			for _, c := range results[0].calls {
				if c.latency > 50*time.Millisecond {
					slow++
				}
			}
			title += fmt.Sprintf(" Some replica is paused %.1f%% of the time; %.1f%% of the calls without retries met a pause (took over 50ms).",
				100*results[0].paused, 100*float64(slow)/float64(len(results[0].calls)))
		}
		fmt.Println(tailTable(title, table))
		if sc.shift {
			fmt.Println(tailTable(fmt.Sprintf("Scenario %s, the calls that started after the shift (%d).", sc.name, after[0].calls), after))
			pictured = append(pictured, tailPanel{title: sc.picture, rows: after})
		} else {
			pictured = append(pictured, tailPanel{title: sc.picture, rows: table})
		}
	}
	hedging := []string{armFailsafeDelay, armFailsafeQuant, armHedgedHTTP}
	a, b, c := rows["A"], rows["B"], rows["C after"]
	for _, arm := range hedging {
		if a[arm].p99 >= a[armNone].p99/10 {
			t.Errorf("A: %s: p99 %v, want under a tenth of no retries' %v", arm, a[arm].p99, a[armNone].p99)
		}
		if b[arm].p99 >= b[armNone].p99/2 {
			t.Errorf("B: %s: p99 %v, want under half of no retries' %v", arm, b[arm].p99, b[armNone].p99)
		}
	}
	if a[armOursHeader].p99 >= a[armOurs].p99/2 {
		t.Errorf("A: %s: p99 %v, want under half of the defaults' %v", armOursHeader, a[armOursHeader].p99, a[armOurs].p99)
	}
	if a[armOurs].success < a[armNone].success+0.04 {
		t.Errorf("A: httpretry's defaults succeeded %.4f, no retries %.4f: want 4 points more", a[armOurs].success, a[armNone].success)
	}
	for _, arm := range []string{armFailsafeDelay, armHedgedHTTP} {
		if c[arm].requestsPerCall < 1.8 {
			t.Errorf("C after the shift: %s: %.2f requests a call, want at least 1.8 (every request hedged)", arm, c[arm].requestsPerCall)
		}
		if c[armFailsafeQuant].requestsPerCall >= c[arm].requestsPerCall {
			t.Errorf("C after the shift: the quantile delay sent %.2f requests a call, %s %.2f: want fewer", c[armFailsafeQuant].requestsPerCall, arm, c[arm].requestsPerCall)
		}
	}
	// httpretry's slow-dependency fields, each against what it adds to.
	for name, sc := range map[string]map[string]tailRow{"A": a, "C after the shift": c} {
		if sc[armOursHedge].p99 >= sc[armOursTimeout].p99/4 {
			t.Errorf("%s: Hedge{}: p99 %v, want under a quarter of AttemptTimeout alone's %v", name, sc[armOursHedge].p99, sc[armOursTimeout].p99)
		}
		if limit := sc[armFailsafe].requestsPerCall + 0.06; sc[armOursHedge].requestsPerCall > limit {
			t.Errorf("%s: Hedge{}: %.3f requests a call, want at most failsafe-go's retry + timeout's plus 0.06, %.3f", name, sc[armOursHedge].requestsPerCall, limit)
		}
	}
	if a[armOursTimeout].p99 >= a[armOurs].p99/2 || a[armOursTimeout].success < a[armOurs].success {
		t.Errorf("A: AttemptTimeout: p99 %v, success %.4f; want under half the defaults' %v, and no less success than their %.4f", a[armOursTimeout].p99, a[armOursTimeout].success, a[armOurs].p99, a[armOurs].success)
	}
	if b[armOursHedge2].p99 >= b[armNone].p99/4 || b[armOursHedge].p999 >= b[armNone].p999*3/4 {
		t.Errorf("B: Hedge{Max: 2}: p99 %v; Hedge{}: p99.9 %v; want under a quarter of no retries' p99 %v, and under three quarters of its p99.9 %v",
			b[armOursHedge2].p99, b[armOursHedge].p999, b[armNone].p99, b[armNone].p999)
	}
	if *tailLarge {
		caption := fmt.Sprintf("The models of benchmarks/README.md, \"A slow dependency\": %d calls per arm in A and C, %d in B; seeds %d–%d.", 10000*scale, 2000*scale, 2201, 2203)
		if err := os.WriteFile(tailSVGPath, []byte(tailSVG(caption, pictured)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const tailSVGPath = "../docs/tail.svg"

// tailSVG draws, for each panel, each arm's p50, p90, p99, p99.9 and max
// on one log-scale axis of latency, with its success and requests per
// call beside it. The output depends only on its arguments.
func tailSVG(caption string, panels []tailPanel) string {
	const (
		width, left, right = 1080, 320, 130
		top, rowH, headH   = 70, 16, 22
		axisH              = 26
	)
	quantiles := []struct {
		name, colour string
	}{{"p50", "#2ca02c"}, {"p90", "#1f77b4"}, {"p99", "#ff7f0e"}, {"p99.9", "#d62728"}, {"max", "#000000"}}
	height := top + 20
	for _, panel := range panels {
		height += headH + rowH*len(panel.rows) + axisH
	}
	plotW := float64(width - left - right)
	lo, hi := 0.0, math.Log10(3000) // 1ms to 3s
	xOf := func(d time.Duration) float64 {
		ms := math.Max(float64(d)/float64(time.Millisecond), 1)
		return left + (math.Log10(ms)-lo)/(hi-lo)*plotW
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	p(`<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	p(`<text x="20" y="22" font-size="14" font-weight="bold">The latency of a call, per client: p50, p90, p99, p99.9 and max (log scale)</text>` + "\n")
	p(`<text x="20" y="40" fill="#555">%s</text>`+"\n", esc(caption))
	for i, q := range quantiles {
		x := 20 + 80*i
		if q.name == "max" {
			p(`<line x1="%d" x2="%d" y1="51" y2="61" stroke="%s" stroke-width="2"/>`+"\n", x+4, x+4, q.colour)
		} else {
			p(`<circle cx="%d" cy="56" r="4" fill="%s"/>`+"\n", x+4, q.colour)
		}
		p(`<text x="%d" y="60">%s</text>`+"\n", x+14, q.name)
	}
	p(`<text x="%d" y="60" text-anchor="end" fill="#555">success · requests per call</text>`+"\n", width-10)
	y0 := float64(top)
	for _, panel := range panels {
		rows := len(panel.rows)
		p(`<text x="20" y="%.1f" font-weight="bold">%s</text>`+"\n", y0+14, esc(panel.title))
		plotTop, plotBottom := y0+headH, y0+float64(headH+rowH*rows)
		for _, tick := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second, 2 * time.Second} {
			dash := ""
			if tick == 2*time.Second {
				dash = ` stroke-dasharray="4 3"`
			}
			p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"%s/>`+"\n", xOf(tick), xOf(tick), plotTop, plotBottom, dash)
			p(`<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%v</text>`+"\n", xOf(tick), plotBottom+14, tick)
		}
		for i, r := range panel.rows {
			y := plotTop + float64(i*rowH) + rowH/2
			label := r.short
			weight := ""
			if strings.HasPrefix(r.arm, "unherd/backoff ") {
				weight = ` font-weight="bold"`
			}
			p(`<text x="%d" y="%.1f" text-anchor="end"%s>%s</text>`+"\n", left-10, y+4, weight, esc(label))
			p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#999"/>`+"\n", xOf(r.p50), xOf(r.max), y, y)
			for j, d := range []time.Duration{r.p50, r.p90, r.p99, r.p999, r.max} {
				if quantiles[j].name == "max" {
					p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", xOf(d), xOf(d), y-5, y+5, quantiles[j].colour)
				} else {
					p(`<circle cx="%.1f" cy="%.1f" r="4" fill="%s" fill-opacity="0.85"/>`+"\n", xOf(d), y, quantiles[j].colour)
				}
			}
			p(`<text x="%d" y="%.1f" text-anchor="end">%.2f%% · %.3f</text>`+"\n", width-10, y+4, 100*r.success, r.requestsPerCall)
		}
		y0 += float64(headH + rowH*rows + axisH)
	}
	p(`<text x="20" y="%d" fill="#555">Regenerate: cd benchmarks &amp;&amp; go test -run TestTail -v -tail-large. The dashed line is the calls' 2s deadline.</text>`+"\n", height-8)
	b.WriteString("</svg>\n")
	return b.String()
}
