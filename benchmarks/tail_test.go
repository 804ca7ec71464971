package benchmarks

import (
	"cmp"
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
	"testing"
	"testing/synctest"
	"time"

	"github.com/cristalhq/hedgedhttp"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/failsafe-go/failsafe-go/timeout"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// A slow dependency: the tail of a call's latency, end to end. Real
// http.Clients, each library as its documentation sets it up, against the
// host of tailserver_test.go, in testing/synctest bubbles, so that minutes
// of calls take seconds:
//
//   - the host: 10 replicas, each request to one at random; service 2ms +
//     Exp(mean 3ms), any number at once; each replica pauses for 1s at
//     Poisson times, a mean of 30s apart (a request arriving in a pause
//     starts when it ends; a pause starting during the work adds its
//     length); 1% of requests never send headers, 5% answer 503 after
//     1ms; bodies of 100 bytes;
//   - the callers: 20 client instances, each with its own client (so its
//     own budget and latency estimates, as a service's instances have),
//     calling open loop at Poisson times, 100 calls a second in all; each
//     call has a 2s deadline, and succeeds on a 200 whose body it read
//     whole; a failed call counts at the deadline in the quantiles;
//   - A is the above; B, The Tail at Scale: a call fans out to 100
//     requests at once and ends when all have answered, 10 calls a second
//     in all, no hangs and no 503s (the pauses only); C: A, with every
//     service time and pause length ×4 from the middle of the measured
//     window;
//   - common random numbers: each logical request (a call, or one of a
//     fan-out's 100) draws its replica, fate and service time from a
//     stream of its own, seeded, in the order its copies reach the host,
//     so every arm's first attempt meets the same ones; the pauses and
//     the arrivals come from the seed alone;
//   - 30s of calls to warm up (sent, not measured), then the measured
//     window; the tables give each figure's median over the seeds and
//     their [min–max], and requests per call (per request asked for: a
//     call's ÷ its fan-out).
//
// Every (scenario, arm, seed) runs in a bubble of its own, as many at once
// as there are processors.
//
//	go test -run TestTail -v               # the reference run: 1 seed, 200s; CI asserts its orderings
//	go test -run TestTail -v -tail-large   # 3 seeds, 600s: the published tables, and ../docs/tail.svg
//	go test -run TestTail -v -tail-large -tail-seeds 1 -tail-scenarios B -tail-arms none,httpretry-hedge
//	go test -run TestTailModel -v          # the host and the harness against what they must show

var (
	tailLarge    = flag.Bool("tail-large", false, "run TestTail as published: 3 seeds, 600s measured, and write ../docs/tail.svg")
	tailSeeds    = flag.Int("tail-seeds", 0, "TestTail: run seeds 1 to n (0: 1, or 3 with -tail-large)")
	tailWindow   = flag.Duration("tail-dur", 0, "TestTail: the measured window, in virtual time, after 30s of warm-up (0: 200s, or 600s with -tail-large)")
	tailOnly     = flag.String("tail-scenarios", "A,B,C", "TestTail: the scenarios to run, comma-separated")
	tailArmsOnly = flag.String("tail-arms", "", "TestTail: the arms to run, by key, comma-separated (empty: all)")
)

const (
	tailWarmUp   = 30 * time.Second
	tailDeadline = 2 * time.Second
	tailURL      = "http://host.example/"
	// tailLinger is how long a bubble waits, virtual, after its last call:
	// the goroutines a library leaves (hedgedhttp's workers: 10s) end in
	// it, and so do the copies it sends late.
	tailLinger = 15 * time.Second
)

// tailScenario is one model of the host and its callers.
type tailScenario struct {
	name    string
	about   string // in the tables
	picture string // its panel's title in the picture
	host    tailHost
	rate    float64 // calls a second, all instances together (Poisson)
	fanout  int     // requests a call sends at once
	warm    time.Duration
	dur     time.Duration // the measured window
}

// tailInstances is how many client instances call the host, each with its
// own client, at rate / tailInstances each.
const tailInstances = 20

// tailScenarios are A, B and C, measured over dur after the warm-up.
func tailScenarios(dur time.Duration) []tailScenario {
	a := tailHost{
		replicas: 10, svcMin: 2 * time.Millisecond, svcExp: 3 * time.Millisecond,
		pause: time.Second, gap: 30 * time.Second,
		hang: 0.01, fail: 0.05, failSvc: time.Millisecond, body: 100,
	}
	b := a
	b.hang, b.fail = 0, 0
	c := a
	c.shiftK, c.shiftAt = 4, tailWarmUp+dur/2
	return []tailScenario{{
		name: "A", host: a, rate: 100, fanout: 1, warm: tailWarmUp, dur: dur,
		about:   "10 replicas, service 2ms+Exp(3ms), each pausing 1s every ~30s; 1% of requests hang, 5% answer 503; 20 client instances, 100 calls/s in all, open loop; 2s deadline",
		picture: "A: 10 replicas pausing 1s every ~30s; 1% hang, 5% 503; 100 calls/s over 20 clients",
	}, {
		name: "B", host: b, rate: 10, fanout: 100, warm: tailWarmUp, dur: dur,
		about:   "The Tail at Scale: A's replicas and pauses, no hangs or 503s; a call fans out to 100 requests and ends when all have answered; 10 calls/s in all; requests per call counts per request asked for (a call's ÷ 100)",
		picture: "B, The Tail at Scale: a fan-out to 100 requests, the pauses only; 10 calls/s",
	}, {
		name: "C", host: c, rate: 100, fanout: 1, warm: tailWarmUp, dur: dur,
		about:   fmt.Sprintf("A, with every service time and pause ×4 from %v (the middle of the measured window)", c.shiftAt),
		picture: "C: A with every service time and pause ×4 halfway: the calls that started after the shift",
	}}
}

// tailArm is one client, built as its library documents it.
type tailArm struct {
	key   string // for -tail-arms and the TSV lines
	name  string // in the tables
	short string // in the picture
	// client builds one instance's client on host; each instance has its
	// own, and with it its own budget and estimates.
	client func(host http.RoundTripper) *http.Client
	// hedged marks cristalhq/hedgedhttp: see hedgedInBubble.
	hedged bool
}

// The arms' keys, as the assertions and TestTailModel find them.
const (
	armNone          = "none"
	armOursTimeout   = "httpretry-timeout"
	armOursHedge     = "httpretry-hedge"
	armOursHedgeD    = "httpretry-hedge-d"
	armOursHedge2    = "httpretry-hedge2"
	armOursNoBudget  = "httpretry-hedge-nobudget"
	armFailsafe      = "failsafe-timeout"
	armFailsafeDelay = "failsafe-hedge"
	armFailsafeQuant = "failsafe-hedge-q"
	armHedgedHTTP    = "hedgedhttp"
)

// tailAttemptTimeout bounds each attempt (each copy, when hedged) of the
// failsafe-go and httpretry arms: the same for all, so that they differ
// in what they do past it.
const tailAttemptTimeout = 250 * time.Millisecond

// httpretryClient is httpretry.Transport as its package documents it for a
// slow dependency: AttemptTimeout, hedge (nil: none), waits 10ms×2 up to
// 200ms (full jitter, Do's 5 retries) and budget (nil: the default, one
// per host, which hedges spend too). Its jitter draws from math/rand/v2's
// global source, so its arms are not bit-for-bit repeatable.
func httpretryClient(host http.RoundTripper, hedge *httpretry.Hedge, budget *retry.Budget) *http.Client {
	return &http.Client{Transport: &httpretry.Transport{
		Base:           host,
		AttemptTimeout: tailAttemptTimeout,
		Hedge:          hedge,
		Policy: retry.Policy{
			Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: 10 * time.Millisecond, MaxDelay: 200 * time.Millisecond}},
			Budget:   budget,
		},
	}}
}

// failsafeRetry is failsafehttp's retry policy builder (it retries
// transport errors, 429 and every 5xx but 501, and stops on
// context.Canceled) with 5 retries and WithBackoff(10ms, 200ms), without
// jitter, as failsafe-go's HTTP documentation shows it.
func failsafeRetry() retrypolicy.RetryPolicy[*http.Response] {
	return failsafehttp.NewRetryPolicyBuilder().WithMaxRetries(5).WithBackoff(10*time.Millisecond, 200*time.Millisecond).Build()
}

// failsafeClient composes failsafe-go's policies in the order its
// documentation recommends, retry outermost and the timeout innermost,
// with hedge (nil: none) between: Retry(Hedge(Timeout(request))), so each
// copy a hedge sends has its own timeout and a retry is hedged again. The
// hedge policy keeps its defaults: one hedge, and the other copies
// cancelled on the first result of any kind (a fast 503 included).
func failsafeClient(host http.RoundTripper, hedge hedgepolicy.HedgePolicy[*http.Response]) *http.Client {
	policies := []failsafe.Policy[*http.Response]{failsafeRetry()}
	if hedge != nil {
		policies = append(policies, hedge)
	}
	policies = append(policies, timeout.New[*http.Response](tailAttemptTimeout))
	return &http.Client{Transport: failsafehttp.NewRoundTripper(host, policies...)}
}

// tailArms are the clients of every scenario. The fixed hedge delay, 50ms,
// is what a user of this host would tune: well past its p99 of 16ms
// without pauses, well short of a pause.
var tailArms = []tailArm{
	{key: armNone, name: "no retries (a plain http.Client)", short: "no retries",
		client: func(host http.RoundTripper) *http.Client { return &http.Client{Transport: host} }},
	{key: armOursTimeout, name: "unherd/backoff httpretry, AttemptTimeout 250ms", short: "httpretry, AttemptTimeout 250ms",
		client: func(host http.RoundTripper) *http.Client { return httpretryClient(host, nil, nil) }},
	{key: armOursHedge, name: "unherd/backoff httpretry, AttemptTimeout 250ms, Hedge{}", short: "httpretry, + Hedge{}",
		client: func(host http.RoundTripper) *http.Client { return httpretryClient(host, &httpretry.Hedge{}, nil) }},
	{key: armOursHedgeD, name: "unherd/backoff httpretry, AttemptTimeout 250ms, Hedge{Delay: 50ms}", short: "httpretry, + Hedge{Delay: 50ms}",
		client: func(host http.RoundTripper) *http.Client {
			return httpretryClient(host, &httpretry.Hedge{Delay: 50 * time.Millisecond}, nil)
		}},
	{key: armOursHedge2, name: "unherd/backoff httpretry, AttemptTimeout 250ms, Hedge{Max: 2}", short: "httpretry, + Hedge{Max: 2}",
		client: func(host http.RoundTripper) *http.Client { return httpretryClient(host, &httpretry.Hedge{Max: 2}, nil) }},
	{key: armOursNoBudget, name: "unherd/backoff httpretry, AttemptTimeout 250ms, Hedge{}, Policy.Budget NoBudget()", short: "httpretry, + Hedge{}, NoBudget",
		client: func(host http.RoundTripper) *http.Client {
			return httpretryClient(host, &httpretry.Hedge{}, httpretry.NoBudget())
		}},
	{key: armFailsafe, name: "failsafe-go, retry + timeout.New(250ms)", short: "failsafe-go, retry + timeout 250ms",
		client: func(host http.RoundTripper) *http.Client { return failsafeClient(host, nil) }},
	{key: armFailsafeDelay, name: "failsafe-go, retry + hedgepolicy.NewWithDelay(50ms) + timeout", short: "failsafe-go, + NewWithDelay(50ms)",
		client: func(host http.RoundTripper) *http.Client {
			return failsafeClient(host, hedgepolicy.NewWithDelay[*http.Response](50*time.Millisecond))
		}},
	// The quantile delay with the values failsafe-go's own tests use: the
	// p95 over an age of 30 executions, hedging once 20 have been seen.
	{key: armFailsafeQuant, name: "failsafe-go, retry + hedgepolicy.NewWithDelayQuantile(0.95, 30, 20) + timeout", short: "failsafe-go, + NewWithDelayQuantile(0.95, 30, 20)",
		client: func(host http.RoundTripper) *http.Client {
			return failsafeClient(host, hedgepolicy.NewWithDelayQuantile[*http.Response](0.95, 30, 20))
		}},
	// hedgedhttp hedges and does nothing else: no retry, no timeout; the
	// first response of any status wins.
	{key: armHedgedHTTP, name: "cristalhq/hedgedhttp, NewClient(50ms, 2, client)", short: "hedgedhttp, NewClient(50ms, 2, client)", hedged: true,
		client: func(host http.RoundTripper) *http.Client {
			c, err := hedgedhttp.NewClient(50*time.Millisecond, 2, &http.Client{Transport: host})
			if err != nil {
				panic(err)
			}
			return c
		}},
}

// tailGet is one GET through client: it succeeds on a 200 whose body it
// read whole.
func tailGet(ctx context.Context, client *http.Client) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tailURL, nil)
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	n, err := io.Copy(io.Discard, resp.Body)
	cerr := resp.Body.Close()
	return err == nil && cerr == nil && resp.StatusCode == http.StatusOK && n == resp.ContentLength
}

// tailArrivals are instance inst's call times in [0, until) at rate calls
// a second (Poisson), from the seed alone.
func tailArrivals(seed uint64, inst int, rate float64, until time.Duration) []time.Duration {
	r := rand.New(rand.NewPCG(seed, tailStreamArrivals|uint64(inst)))
	var out []time.Duration
	for at := time.Duration(0); ; {
		at += time.Duration(r.ExpFloat64() / rate * float64(time.Second))
		if at >= until {
			return out
		}
		out = append(out, at)
	}
}

// tailRun is the figures of some measured calls of one run. The quantiles
// are nearest-rank over every call, a failed one counting at the deadline.
type tailRun struct {
	calls                    int
	success                  float64
	p50, p90, p99, p999, max time.Duration
	reqs                     float64         // requests sent per request asked for: a call's ÷ its fan-out
	lat                      []time.Duration // every call's, sorted
}

// tailResult is what one arm did in one scenario with one seed.
type tailResult struct {
	all, after tailRun // the measured calls; of them, those that started at or after the shift (C)
	// paused is the share of the measured window the replicas were
	// paused; hung, failed and slowed the shares of the requests seen
	// that hung, answered 503 and met a pause.
	paused, hung, failed, slowed float64
	// counted is the requests the calls counted, seen those the host
	// saw, warm-up included: every request must belong to a call.
	counted, seen int64
}

// tailOutcome is one call as measured.
type tailOutcome struct {
	call    *tailCall
	latency time.Duration
	ok      bool
}

// runTail runs arm in sc with seed, in a bubble of its own.
func runTail(t *testing.T, sc tailScenario, arm tailArm, seed uint64) tailResult {
	if arm.hedged {
		hedgedMu.Lock()
		defer hedgedMu.Unlock()
	}
	var res tailResult
	synctest.Test(t, func(t *testing.T) {
		if arm.hedged {
			hedgedInBubble()
		}
		until := sc.warm + sc.dur
		srv := newTailServer(sc.host, seed, time.Now(), until+tailDeadline+tailLinger)
		outcomes := make([][]tailOutcome, tailInstances)
		var wg sync.WaitGroup
		for inst := range tailInstances {
			client := arm.client(srv)
			arrivals := tailArrivals(seed, inst, sc.rate/tailInstances, until)
			outcomes[inst] = make([]tailOutcome, len(arrivals))
			wg.Go(func() {
				for k, at := range arrivals {
					time.Sleep(time.Until(srv.t0.Add(at)))
					o := &outcomes[inst][k]
					o.call = &tailCall{measured: at >= sc.warm, after: sc.host.shiftK > 0 && at >= sc.host.shiftAt}
					wg.Go(func() { o.latency, o.ok = tailDo(client, seed, inst, k, sc.fanout, o.call) })
				}
			})
		}
		wg.Wait()
		time.Sleep(tailLinger)
		var measured, after []tailOutcome
		for _, inst := range outcomes {
			for _, o := range inst {
				res.counted += o.call.requests.Load()
				if o.call.measured {
					measured = append(measured, o)
					if o.call.after {
						after = append(after, o)
					}
				}
			}
		}
		res.all, res.after = tailRunOf(measured, sc.fanout), tailRunOf(after, sc.fanout)
		res.seen = srv.seen.Load()
		res.paused = srv.pausedShare(sc.warm, until)
		if res.seen > 0 {
			seen := float64(res.seen)
			res.hung, res.failed, res.slowed = float64(srv.hung.Load())/seen, float64(srv.failed.Load())/seen, float64(srv.slowed.Load())/seen
		}
	})
	return res
}

// tailDo makes call k of instance inst: fanout requests at once, each with
// its own stream, on one context with the deadline. It returns the call's
// latency, until its last body was read and closed, and whether every
// request succeeded.
func tailDo(client *http.Client, seed uint64, inst, k, fanout int, call *tailCall) (time.Duration, bool) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), tailDeadline)
	defer cancel()
	if fanout == 1 {
		ok := tailGet(context.WithValue(ctx, tailStreamKey{}, newTailStream(seed, inst, k, 0, call)), client)
		return time.Since(start), ok
	}
	var wg sync.WaitGroup
	oks := make([]bool, fanout)
	for key := range fanout {
		kctx := context.WithValue(ctx, tailStreamKey{}, newTailStream(seed, inst, k, key, call))
		wg.Go(func() { oks[key] = tailGet(kctx, client) })
	}
	wg.Wait()
	return time.Since(start), !slices.Contains(oks, false)
}

// tailRunOf summarises outcomes, a call of fanout requests each.
func tailRunOf(outcomes []tailOutcome, fanout int) tailRun {
	if len(outcomes) == 0 {
		return tailRun{}
	}
	lat := make([]time.Duration, len(outcomes))
	ok, requests := 0, int64(0)
	for i, o := range outcomes {
		lat[i] = o.latency
		if o.ok {
			ok++
		} else {
			lat[i] = max(lat[i], tailDeadline)
		}
		requests += o.call.requests.Load()
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[max(int(math.Ceil(p*float64(len(lat))))-1, 0)] }
	return tailRun{
		calls: len(lat), success: float64(ok) / float64(len(lat)),
		p50: q(0.5), p90: q(0.9), p99: q(0.99), p999: q(0.999), max: lat[len(lat)-1],
		reqs: float64(requests) / float64(len(lat)*fanout),
		lat:  lat,
	}
}

// tailRow is one arm's line of a table: its runs, one per seed.
type tailRow struct {
	arm  tailArm
	runs []tailRun
}

// tailMedian returns the median over runs of f (for an even count, the
// lower of the two middle values) and the least and greatest.
func tailMedian[T cmp.Ordered](runs []tailRun, f func(tailRun) T) (m, lo, hi T) {
	xs := make([]T, len(runs))
	for i, r := range runs {
		xs[i] = f(r)
	}
	slices.Sort(xs)
	return xs[(len(xs)-1)/2], xs[0], xs[len(xs)-1]
}

// The figures of a run, as the tables, the picture and the assertions
// take them.
var (
	tailSuccess = func(r tailRun) float64 { return r.success }
	tailReqs    = func(r tailRun) float64 { return r.reqs }
	tailP50     = func(r tailRun) time.Duration { return r.p50 }
	tailP90     = func(r tailRun) time.Duration { return r.p90 }
	tailP99     = func(r tailRun) time.Duration { return r.p99 }
	tailP999    = func(r tailRun) time.Duration { return r.p999 }
	tailMax     = func(r tailRun) time.Duration { return r.max }
)

// med is the row's median of f.
func med[T cmp.Ordered](r tailRow, f func(tailRun) T) T {
	m, _, _ := tailMedian(r.runs, f)
	return m
}

// tailSpread prints the median over runs of f, then its range when the
// runs differ in print.
func tailSpread[T cmp.Ordered](runs []tailRun, f func(tailRun) T, format func(T) string) string {
	m, lo, hi := tailMedian(runs, f)
	if l, h := format(lo), format(hi); l != h {
		return format(m) + " [" + l + "–" + h + "]"
	}
	return format(m)
}

// tailDur prints a latency to 2 or 3 significant figures: 9.96ms as
// 10ms, 999.6ms as 1.00s.
func tailDur(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < 9.95:
		return fmt.Sprintf("%.1fms", ms)
	case ms < 999.5:
		return fmt.Sprintf("%.0fms", ms)
	}
	return fmt.Sprintf("%.2fs", ms/1000)
}

// tailTable prints rows as a Markdown table: each figure's median over
// the seeds, and their [min–max] where they differ.
func tailTable(title string, rows []tailRow) string {
	pct := func(x float64) string { return fmt.Sprintf("%.2f%%", 100*x) }
	reqs := func(x float64) string { return fmt.Sprintf("%.3f", x) }
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n| client | success | p50 | p90 | p99 | p99.9 | max | requests per call |\n|---|--:|--:|--:|--:|--:|--:|--:|\n", title)
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.arm.name,
			tailSpread(r.runs, tailSuccess, pct),
			tailSpread(r.runs, tailP50, tailDur), tailSpread(r.runs, tailP90, tailDur), tailSpread(r.runs, tailP99, tailDur),
			tailSpread(r.runs, tailP999, tailDur), tailSpread(r.runs, tailMax, tailDur),
			tailSpread(r.runs, tailReqs, reqs))
	}
	return b.String()
}

// tailTSV prints one line per row: TSV, the scenario, the arm's key, and
// the medians of success, p50, p90, p99, p99.9 and max (ms) and requests
// per call.
func tailTSV(scenario string, rows []tailRow) string {
	msOf := func(f func(tailRun) time.Duration, r tailRow) float64 {
		return float64(med(r, f)) / float64(time.Millisecond)
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "TSV\t%s\t%s\t%.5f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.4f\n", scenario, r.arm.key, med(r, tailSuccess),
			msOf(tailP50, r), msOf(tailP90, r), msOf(tailP99, r), msOf(tailP999, r), msOf(tailMax, r), med(r, tailReqs))
	}
	return b.String()
}

// runTailAll runs every arm in every scenario with seeds 1 to seeds, each
// in its own bubble, as many at once as there are processors; hedgedhttp's
// one after another (see hedgedInBubble), in one queue that starts first,
// and the rest the costliest first. It returns the results by scenario,
// arm and seed.
func runTailAll(t *testing.T, scs []tailScenario, arms []tailArm, seeds int) [][][]tailResult {
	res := make([][][]tailResult, len(scs))
	type job struct {
		cost float64 // requests, about
		run  func()
	}
	var serial []func()
	var jobs []job
	for i, sc := range scs {
		res[i] = make([][]tailResult, len(arms))
		for j, arm := range arms {
			res[i][j] = make([]tailResult, seeds)
			for k := range seeds {
				run := func() { res[i][j][k] = runTail(t, sc, arm, uint64(k+1)) }
				if arm.hedged {
					serial = append(serial, run)
				} else {
					jobs = append(jobs, job{sc.rate * float64(sc.fanout) * (sc.warm + sc.dur).Seconds(), run})
				}
			}
		}
	}
	slices.SortStableFunc(jobs, func(a, b job) int { return cmp.Compare(b.cost, a.cost) })
	queue := make(chan func(), len(jobs)+1)
	queue <- func() {
		for _, run := range serial {
			run()
		}
	}
	for _, j := range jobs {
		queue <- j.run
	}
	close(queue)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for run := range queue {
				run()
			}
		})
	}
	wg.Wait()
	return res
}

// tailSelect returns the scenarios and arms the flags name, and whether
// they are all of them.
func tailSelect(t *testing.T, dur time.Duration) ([]tailScenario, []tailArm, bool) {
	all := tailScenarios(dur)
	var scs []tailScenario
	for _, name := range strings.Split(*tailOnly, ",") {
		i := slices.IndexFunc(all, func(sc tailScenario) bool { return sc.name == strings.TrimSpace(name) })
		if i < 0 {
			t.Fatalf("-tail-scenarios: no scenario %q (have A, B, C)", name)
		}
		scs = append(scs, all[i])
	}
	arms := tailArms
	if *tailArmsOnly != "" {
		arms = nil
		for _, key := range strings.Split(*tailArmsOnly, ",") {
			i := slices.IndexFunc(tailArms, func(a tailArm) bool { return a.key == strings.TrimSpace(key) })
			if i < 0 {
				var keys []string
				for _, a := range tailArms {
					keys = append(keys, a.key)
				}
				t.Fatalf("-tail-arms: no arm %q (have %s)", key, strings.Join(keys, ", "))
			}
			arms = append(arms, tailArms[i])
		}
	}
	return scs, arms, len(scs) == len(all) && len(arms) == len(tailArms)
}

// tailPanel is what the picture draws of one scenario.
type tailPanel struct {
	title string
	rows  []tailRow
}

// tailAssertDur is the shortest measured window TestTail asserts on: its
// margins are those of 200s and more.
const tailAssertDur = 200 * time.Second

// TestTail runs every arm in every scenario, prints a table for each (and
// for C, one of the calls after the shift) and its TSV lines, checks that
// the requests the calls counted are those the host saw, and, when every
// scenario and arm ran over a window of 200s or more, asserts what holds
// by construction and what the project claims, each with a wide margin:
//
//   - A: no retries' p99 is the deadline (its 1% that hang); every arm
//     with a 250ms attempt timeout succeeds at least 99.5%; httpretry's
//     Hedge{} has a p99 under a third of its AttemptTimeout alone's, and
//     at most 1.5 times the better of failsafe-go's hedges';
//   - C: httpretry's Hedge{} has a p99 at most 1.5 times failsafe-go's
//     quantile hedge's (the adaptive delays, which follow the shift);
//   - B: httpretry's Hedge{} has a p99.9 at least 2× below no retries';
//   - A and C: httpretry's Hedge{} sends at most failsafe-go's retry +
//     timeout's requests per call plus 0.08.
func TestTail(t *testing.T) {
	if testing.Short() {
		t.Skip("about 20 seconds on 2 cores")
	}
	seeds, dur := 1, 200*time.Second
	if *tailLarge {
		seeds, dur = 3, 600*time.Second
	}
	if *tailSeeds > 0 {
		seeds = *tailSeeds
	}
	if *tailWindow > 0 {
		dur = *tailWindow
	}
	scs, arms, full := tailSelect(t, dur)
	results := runTailAll(t, scs, arms, seeds)

	rows := map[string]map[string]tailRow{}
	var pictured []tailPanel
	for i, sc := range scs {
		var table, after []tailRow
		for j, arm := range arms {
			var all, aft []tailRun
			for k, r := range results[i][j] {
				if r.counted != r.seen {
					t.Errorf("%s, %s, seed %d: the calls counted %d requests, the host saw %d", sc.name, arm.key, k+1, r.counted, r.seen)
				}
				all, aft = append(all, r.all), append(aft, r.after)
			}
			table = append(table, tailRow{arm, all})
			after = append(after, tailRow{arm, aft})
		}
		first := results[i][0]
		share := func(f func(tailResult) float64) float64 {
			xs := make([]float64, len(first))
			for k, r := range first {
				xs[k] = f(r)
			}
			slices.Sort(xs)
			return 100 * xs[(len(xs)-1)/2]
		}
		title := fmt.Sprintf("Scenario %s: %s. %v warm-up, %v measured, %d calls per seed; seeds 1–%d: medians [min–max]; a failed call counts at the deadline. Replicas paused %.2f%% of the window; of %s's requests, %.2f%% hung, %.2f%% answered 503, %.2f%% met a pause.",
			sc.name, sc.about, sc.warm, sc.dur, table[0].runs[0].calls, seeds,
			share(func(r tailResult) float64 { return r.paused }), arms[0].key,
			share(func(r tailResult) float64 { return r.hung }), share(func(r tailResult) float64 { return r.failed }),
			share(func(r tailResult) float64 { return r.slowed }))
		fmt.Println(tailTable(title, table))
		fmt.Print(tailTSV(sc.name, table))
		rows[sc.name] = map[string]tailRow{}
		for _, r := range table {
			rows[sc.name][r.arm.key] = r
		}
		panel := tailPanel{title: sc.picture, rows: table}
		if sc.host.shiftK > 0 {
			fmt.Println()
			fmt.Println(tailTable(fmt.Sprintf("Scenario %s, the %d calls per seed that started after the shift, at %v.", sc.name, after[0].runs[0].calls, sc.host.shiftAt), after))
			fmt.Print(tailTSV(sc.name+"-after", after))
			panel.rows = after
		}
		fmt.Println()
		pictured = append(pictured, panel)
	}
	if !full || dur < tailAssertDur {
		t.Logf("a subset of the scenarios or arms, or a window under %v: no assertions, and no picture", tailAssertDur)
		return
	}
	a, b, c := rows["A"], rows["B"], rows["C"]
	if p99 := med(a[armNone], tailP99); p99 != tailDeadline {
		t.Errorf("A: no retries: p99 %v, want the deadline %v (1%% of requests hang)", p99, tailDeadline)
	}
	for _, key := range []string{armOursTimeout, armOursHedge, armOursHedgeD, armOursHedge2, armOursNoBudget, armFailsafe, armFailsafeDelay, armFailsafeQuant} {
		if s := med(a[key], tailSuccess); s < 0.995 {
			t.Errorf("A: %s: success %.4f, want at least 0.995 (a 250ms attempt timeout retries every hang)", key, s)
		}
	}
	if hedge, alone := med(a[armOursHedge], tailP99), med(a[armOursTimeout], tailP99); hedge >= alone/3 {
		t.Errorf("A: httpretry Hedge{}: p99 %v, want under a third of AttemptTimeout alone's %v", hedge, alone)
	}
	if hedge, peer := med(a[armOursHedge], tailP99), min(med(a[armFailsafeDelay], tailP99), med(a[armFailsafeQuant], tailP99)); hedge > peer*3/2 {
		t.Errorf("A: httpretry Hedge{}: p99 %v, want at most 1.5 times the better of failsafe-go's hedges', %v", hedge, peer)
	}
	if hedge, peer := med(c[armOursHedge], tailP99), med(c[armFailsafeQuant], tailP99); hedge > peer*3/2 {
		t.Errorf("C: httpretry Hedge{}: p99 %v, want at most 1.5 times failsafe-go's quantile hedge's, %v", hedge, peer)
	}
	if hedge, none := med(b[armOursHedge], tailP999), med(b[armNone], tailP999); hedge > none/2 {
		t.Errorf("B: httpretry Hedge{}: p99.9 %v, want at least 2× below no retries' %v", hedge, none)
	}
	for name, sc := range map[string]map[string]tailRow{"A": a, "C": c} {
		if hedge, limit := med(sc[armOursHedge], tailReqs), med(sc[armFailsafe], tailReqs)+0.08; hedge > limit {
			t.Errorf("%s: httpretry Hedge{}: %.3f requests a call, want at most failsafe-go's retry + timeout's plus 0.08, %.3f", name, hedge, limit)
		}
	}
	if *tailLarge {
		caption := fmt.Sprintf("benchmarks/tail_test.go's model: medians over seeds 1–%d, %v measured after %v of warm-up; in C, the calls that started after the shift.", seeds, dur, tailWarmUp)
		if err := os.WriteFile(tailSVGPath, []byte(tailSVG(caption, pictured)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTailModel checks the host and the harness against what they must
// show by construction, in a few seconds:
//
//   - with no pauses, hangs or 503s, every arm whose hedge delay is fixed
//     (or that has none) has exactly no retries' latencies, call for call
//     once sorted, succeeds every time and sends one request a call:
//     their first attempts meet the same replica and service time (common
//     random numbers), and none takes 50ms;
//   - the host's p50, p90 and p99 are those of 2ms + Exp(3ms), within 5%,
//     and after C's shift its p50 is 4 times that one, within 5%;
//   - its replicas are paused 1 − e^(−1s/30s) of the time, within 10%,
//     and in C, whose pauses last 4s from halfway, the mean of that and
//     1 − e^(−4s/30s).
func TestTailModel(t *testing.T) {
	scs := tailScenarios(200 * time.Second)
	quiet, shifted := scs[0], scs[2]
	for _, sc := range []*tailScenario{&quiet, &shifted} {
		sc.host.gap, sc.host.hang, sc.host.fail = 0, 0, 0
	}
	quiet.warm = 10 * time.Second
	paused, pausedC := scs[0], scs[2] // hardly any calls, a long window
	for _, sc := range []*tailScenario{&paused, &pausedC} {
		sc.rate, sc.warm, sc.dur = 0.02, 0, 20000*time.Second
	}
	pausedC.host.shiftAt = pausedC.dur / 2
	none := tailArms[slices.IndexFunc(tailArms, func(a tailArm) bool { return a.key == armNone })]

	res := make([]tailResult, len(tailArms))
	var shift, pause, pauseC tailResult
	var wg sync.WaitGroup
	for i, arm := range tailArms {
		wg.Go(func() { res[i] = runTail(t, quiet, arm, 1) })
	}
	wg.Go(func() { shift = runTail(t, shifted, none, 1) })
	wg.Go(func() { pause = runTail(t, paused, none, 1) })
	wg.Go(func() { pauseC = runTail(t, pausedC, none, 1) })
	wg.Wait()

	fixed := []string{armNone, armOursTimeout, armOursHedgeD, armFailsafe, armFailsafeDelay, armHedgedHTTP}
	base := res[slices.IndexFunc(tailArms, func(a tailArm) bool { return a.key == armNone })].all
	for i, arm := range tailArms {
		r := res[i].all
		same := slices.Equal(r.lat, base.lat)
		fmt.Printf("quiet %-24s success %.4f p50 %s p90 %s p99 %s p99.9 %s max %s requests per call %.4f; no retries' latencies: %v\n",
			arm.key, r.success, tailDur(r.p50), tailDur(r.p90), tailDur(r.p99), tailDur(r.p999), tailDur(r.max), r.reqs, same)
		if slices.Contains(fixed, arm.key) && (!same || r.reqs != 1 || r.success != 1) {
			t.Errorf("%s, nothing slow: success %.4f, %.4f requests a call, no retries' latencies: %v; want 1, 1 and true", arm.key, r.success, r.reqs, same)
		}
	}
	// 2ms + Exp(3ms) has the quantile 2ms + 3ms·ln(1/(1 − q)).
	want := func(q float64) float64 { return 2 + 3*math.Log(1/(1-q)) }
	for _, c := range []struct {
		what string
		got  time.Duration
		want float64
	}{
		{"p50", base.p50, want(0.5)},
		{"p90", base.p90, want(0.9)},
		{"p99", base.p99, want(0.99)},
		{"p50 after the shift", shift.after.p50, 4 * want(0.5)},
	} {
		got := float64(c.got) / float64(time.Millisecond)
		fmt.Printf("host %s: %.2fms; the model's %.2fms\n", c.what, got, c.want)
		if math.Abs(got-c.want) > 0.05*c.want {
			t.Errorf("host %s = %.2fms, want %.2fms ± 5%%", c.what, got, c.want)
		}
	}
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"A", pause.paused, 1 - math.Exp(-1.0/30)},
		{"C", pauseC.paused, (1 - math.Exp(-1.0/30) + 1 - math.Exp(-4.0/30)) / 2},
	} {
		fmt.Printf("replicas paused in %s over %v: %.3f%%; the model's %.3f%%\n", c.what, paused.dur, 100*c.got, 100*c.want)
		if math.Abs(c.got-c.want) > 0.1*c.want {
			t.Errorf("replicas paused in %s: %.4f of the time, want %.4f ± 10%%", c.what, c.got, c.want)
		}
	}
}

const tailSVGPath = "../docs/tail.svg"

// tailSVG draws, for each panel, each arm's median p50, p90, p99, p99.9
// and max on one log-scale axis of latency, with its success and requests
// per call beside it. The output depends only on its arguments.
func tailSVG(caption string, panels []tailPanel) string {
	const (
		width, left, right = 1080, 320, 130
		top, rowH, headH   = 70, 16, 22
		axisH              = 26
	)
	quantiles := []struct {
		name, colour string
		of           func(tailRun) time.Duration
	}{{"p50", "#2ca02c", tailP50}, {"p90", "#1f77b4", tailP90}, {"p99", "#ff7f0e", tailP99}, {"p99.9", "#d62728", tailP999}, {"max", "#000000", tailMax}}
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
			if tick == tailDeadline {
				dash = ` stroke-dasharray="4 3"`
			}
			p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"%s/>`+"\n", xOf(tick), xOf(tick), plotTop, plotBottom, dash)
			p(`<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%v</text>`+"\n", xOf(tick), plotBottom+14, tick)
		}
		for i, r := range panel.rows {
			y := plotTop + float64(i*rowH) + rowH/2
			weight := ""
			if strings.HasPrefix(r.arm.name, "unherd/backoff ") {
				weight = ` font-weight="bold"`
			}
			p(`<text x="%d" y="%.1f" text-anchor="end"%s>%s</text>`+"\n", left-10, y+4, weight, esc(r.arm.short))
			p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#999"/>`+"\n", xOf(med(r, tailP50)), xOf(med(r, tailMax)), y, y)
			for _, q := range quantiles {
				d := med(r, q.of)
				if q.name == "max" {
					p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", xOf(d), xOf(d), y-5, y+5, q.colour)
				} else {
					p(`<circle cx="%.1f" cy="%.1f" r="4" fill="%s" fill-opacity="0.85"/>`+"\n", xOf(d), y, q.colour)
				}
			}
			p(`<text x="%d" y="%.1f" text-anchor="end">%.2f%% · %.3f</text>`+"\n", width-10, y+4, 100*med(r, tailSuccess), med(r, tailReqs))
		}
		y0 += float64(headH + rowH*rows + axisH)
	}
	p(`<text x="20" y="%d" fill="#555">Regenerate: cd benchmarks &amp;&amp; go test -run TestTail -v -tail-large. The dashed line is the calls' 2s deadline; in B, requests per call is per request asked for.</text>`+"\n", height-8)
	b.WriteString("</svg>\n")
	return b.String()
}
