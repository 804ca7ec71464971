package benchmarks

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	cenkalti "github.com/cenkalti/backoff/v7"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	retryablehttp "github.com/hashicorp/go-retryablehttp"

	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// The storm: retries that keep a dependency down after the cause is gone.
// Real clients, each library as its README sets it up, against one
// in-memory server, in a testing/synctest bubble, so that minutes of load
// take seconds:
//
//   - the server has Workers workers serving Capacity requests a second in
//     all, and a FIFO queue of Queue requests; it answers 503 at once when
//     the queue is full, and serves what is queued even after its caller
//     has given up (the work is not abandoned with the call);
//   - Instances client instances make Load calls a second in all, open
//     loop (Poisson: a call does not wait for the one before);
//   - every attempt has a timeout (the Base's, as http.Transport's
//     ResponseHeaderTimeout is), and every call a deadline (its context);
//   - from DropAt for DropFor, capacity falls to Depth of itself (0: none).
//
//	go test -run TestStorm -v                  # the reference run, asserting the orderings
//	go test -run TestStormSweep -v -sweep      # every regime, and docs/storm.svg; minutes

// StormConfig is one regime.
type StormConfig struct {
	Instances       int           // client instances, sharing the load
	Load            float64       // calls a second, all instances together
	Capacity        float64       // requests the server serves a second, at full capacity
	Workers         int           // the server's workers
	Queue           int           // its queue's bound
	AttemptTimeout  time.Duration // each attempt's
	CallDeadline    time.Duration // each call's
	DropAt, DropFor time.Duration // the outage
	Depth           float64       // capacity during it, × Capacity
	Run             time.Duration // calls arrive until then
}

// stormReference is the regime of the issue that asked for the budget: 10
// instances, 0.8 of capacity, a queue of 1,000, 1s attempts, 10s calls,
// capacity gone from 20s to 30s.
var stormReference = StormConfig{
	Instances: 10, Load: 80, Capacity: 100, Workers: 10, Queue: 1000,
	AttemptTimeout: time.Second, CallDeadline: 10 * time.Second,
	DropAt: 20 * time.Second, DropFor: 10 * time.Second, Depth: 0,
	Run: 150 * time.Second,
}

func (c StormConfig) String() string {
	return fmt.Sprintf("%d instances, %.0f calls/s against %.0f/s (%d workers, queue %d), attempts %v, calls %v, capacity ×%g from %v for %v",
		c.Instances, c.Load, c.Capacity, c.Workers, c.Queue, c.AttemptTimeout, c.CallDeadline, c.Depth, c.DropAt, c.DropFor)
}

// stormServer is the dependency: workers taking jobs from a bounded FIFO
// queue, each taking Workers/Capacity seconds (1/Depth as long during the
// drop; with no capacity at all, a worker waits for the drop to end).
type stormServer struct {
	cfg   StormConfig
	t0    time.Time
	queue chan *stormJob
	wg    sync.WaitGroup
}

type stormJob struct{ done chan struct{} }

func newStormServer(cfg StormConfig) *stormServer {
	s := &stormServer{cfg: cfg, t0: time.Now(), queue: make(chan *stormJob, cfg.Queue)}
	service := time.Duration(float64(cfg.Workers) / cfg.Capacity * float64(time.Second))
	for range cfg.Workers {
		s.wg.Go(func() {
			for job := range s.queue {
				at := time.Since(s.t0)
				d := service
				if at >= cfg.DropAt && at < cfg.DropAt+cfg.DropFor {
					if cfg.Depth <= 0 {
						time.Sleep(cfg.DropAt + cfg.DropFor - at) // no capacity: wait it out
					} else {
						d = time.Duration(float64(service) / cfg.Depth)
					}
				}
				time.Sleep(d)
				close(job.done) // served, whether its caller still waits or not
			}
		})
	}
	return s
}

func (s *stormServer) close() {
	close(s.queue)
	s.wg.Wait()
}

// stormConn is a client's connection to the server: an http.RoundTripper
// that queues the request, or gets a 503 at once when the queue is full,
// and waits for it to be served, for AttemptTimeout at most, or until the
// request's context ends. It counts the attempts of each call.
type stormConn struct{ srv *stormServer }

var errStormTimeout = errors.New("net/http: timeout awaiting response headers")

type stormCallKey struct{}

// stormCall is what one call did.
type stormCall struct {
	at       time.Duration // when it arrived
	attempts int
	ok       bool
}

func (c stormConn) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	if call, _ := req.Context().Value(stormCallKey{}).(*stormCall); call != nil {
		call.attempts++
	}
	job := &stormJob{done: make(chan struct{})}
	status := http.StatusOK
	select {
	case c.srv.queue <- job:
		timer := time.NewTimer(c.srv.cfg.AttemptTimeout)
		defer timer.Stop()
		select {
		case <-job.done:
		case <-timer.C:
			return nil, errStormTimeout
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	default:
		status = http.StatusServiceUnavailable
	}
	return &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// stormArm is one library, as its README sets it up: call makes one call
// through the client instance that new built on conn.
type stormArm struct {
	name     string
	budgeted bool // it bounds its retries by more than each call's limits
	new      func(conn http.RoundTripper) func(ctx context.Context) bool
}

// get is one GET through client; it succeeds on a 200.
func get200(ctx context.Context, client *http.Client) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://dependency.example/v1/thing", nil)
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

var stormArms = []stormArm{
	{"no retries", false, func(conn http.RoundTripper) func(context.Context) bool {
		client := &http.Client{Transport: conn}
		return func(ctx context.Context) bool { return get200(ctx, client) }
	}},
	{"hashicorp/go-retryablehttp, defaults", false, func(conn http.RoundTripper) func(context.Context) bool {
		c := retryablehttp.NewClient()
		c.HTTPClient = &http.Client{Transport: conn}
		c.Logger = nil
		client := c.StandardClient()
		return func(ctx context.Context) bool { return get200(ctx, client) }
	}},
	{"cenkalti/backoff v7 Retry, WithMaxTries(5)", false, func(conn http.RoundTripper) func(context.Context) bool {
		client := &http.Client{Transport: conn}
		return func(ctx context.Context) bool {
			_, err := cenkalti.Retry(ctx, func() (bool, error) {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://dependency.example/v1/thing", nil)
				resp, err := client.Do(req)
				if err != nil {
					return false, err
				}
				defer resp.Body.Close()
				switch {
				case resp.StatusCode >= 500:
					return false, fmt.Errorf("server error: %s", resp.Status)
				case resp.StatusCode >= 400:
					return false, cenkalti.Permanent(fmt.Errorf("client error: %s", resp.Status))
				}
				return true, nil
			}, cenkalti.WithMaxTries(5))
			return err == nil
		}
	}},
	{"failsafe-go failsafehttp, retry policy", false, func(conn http.RoundTripper) func(context.Context) bool {
		client := &http.Client{Transport: failsafehttp.NewRoundTripper(conn, failsafehttp.NewRetryPolicyBuilder().Build())}
		return func(ctx context.Context) bool { return get200(ctx, client) }
	}},
	{"failsafe-go failsafehttp, retry policy WithBudget", true, func(conn http.RoundTripper) func(context.Context) bool {
		policy := failsafehttp.NewRetryPolicyBuilder().WithBudget(budget.New()).Build()
		client := &http.Client{Transport: failsafehttp.NewRoundTripper(conn, policy)}
		return func(ctx context.Context) bool { return get200(ctx, client) }
	}},
	{"unherd/backoff httpretry, NoBudget", false, func(conn http.RoundTripper) func(context.Context) bool {
		client := &http.Client{Transport: &httpretry.Transport{Base: conn, Policy: retry.Policy{Budget: httpretry.NoBudget()}}}
		return func(ctx context.Context) bool { return get200(ctx, client) }
	}},
	{"unherd/backoff httpretry, Budget{PerSecond: 10}", true, func(conn http.RoundTripper) func(context.Context) bool {
		client := &http.Client{Transport: &httpretry.Transport{Base: conn, Policy: retry.Policy{Budget: &retry.Budget{PerSecond: 10}}}}
		return func(ctx context.Context) bool { return get200(ctx, client) }
	}},
	{"unherd/backoff httpretry, Budget{Burst: 1}", true, func(conn http.RoundTripper) func(context.Context) bool {
		client := &http.Client{Transport: &httpretry.Transport{Base: conn, Policy: retry.Policy{Budget: &retry.Budget{Burst: 1}}}}
		return func(ctx context.Context) bool { return get200(ctx, client) }
	}},
	{"unherd/backoff httpretry, defaults", true, func(conn http.RoundTripper) func(context.Context) bool {
		client := &http.Client{Transport: &httpretry.Transport{Base: conn}}
		return func(ctx context.Context) bool { return get200(ctx, client) }
	}},
	// Hedges have an allowance of their own, and stop while the host's
	// budget has no retry left: in a storm, where the retries are gone,
	// hedging stops by itself. The fixed delay is half a request's service
	// time here: every request is slow enough to be hedged, as far as the
	// allowance goes.
	{"unherd/backoff httpretry, Hedge{}", true, func(conn http.RoundTripper) func(context.Context) bool {
		client := &http.Client{Transport: &httpretry.Transport{Base: conn, Hedge: &httpretry.Hedge{}}}
		return func(ctx context.Context) bool { return get200(ctx, client) }
	}},
	{"unherd/backoff httpretry, Hedge{Delay: 50ms}", true, func(conn http.RoundTripper) func(context.Context) bool {
		client := &http.Client{Transport: &httpretry.Transport{Base: conn, Hedge: &httpretry.Hedge{Delay: 50 * time.Millisecond}}}
		return func(ctx context.Context) bool { return get200(ctx, client) }
	}},
}

// stormResult is what one arm did in one regime.
type stormResult struct {
	calls []stormCall
	cfg   StormConfig
}

// runStorm runs one arm in one regime: calls arrive at each instance as a
// Poisson process drawn from seed, until cfg.Run; then the last calls end.
func runStorm(t *testing.T, cfg StormConfig, arm stormArm, seed uint64) stormResult {
	var res stormResult
	synctest.Test(t, func(t *testing.T) {
		srv := newStormServer(cfg)
		var (
			mu    sync.Mutex
			calls []stormCall
			wg    sync.WaitGroup
		)
		for i := range cfg.Instances {
			call := arm.new(stormConn{srv})
			arrivals := rand.New(rand.NewPCG(seed, uint64(i)))
			rate := cfg.Load / float64(cfg.Instances)
			wg.Go(func() {
				for {
					time.Sleep(time.Duration(arrivals.ExpFloat64() / rate * float64(time.Second)))
					at := time.Since(srv.t0)
					if at >= cfg.Run {
						return
					}
					wg.Go(func() {
						c := &stormCall{at: at}
						ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), stormCallKey{}, c), cfg.CallDeadline)
						c.ok = call(ctx)
						cancel()
						mu.Lock()
						calls = append(calls, *c)
						mu.Unlock()
					})
				}
			})
		}
		wg.Wait()
		srv.close()
		res = stormResult{calls: calls, cfg: cfg}
	})
	return res
}

// second buckets the calls by the second they arrived in: how many, and
// how many succeeded.
func (r stormResult) seconds() (calls, ok []int) {
	n := int(r.cfg.Run / time.Second)
	calls, ok = make([]int, n), make([]int, n)
	for _, c := range r.calls {
		if s := int(c.at / time.Second); s < n {
			calls[s]++
			if c.ok {
				ok[s]++
			}
		}
	}
	return calls, ok
}

// attempts is the mean attempts per call among the calls that arrived in
// [from, to).
func (r stormResult) attempts(from, to time.Duration) float64 {
	var n, a int
	for _, c := range r.calls {
		if c.at >= from && c.at < to {
			n++
			a += c.attempts
		}
	}
	return float64(a) / float64(max(n, 1))
}

// goodput is the share of the calls that arrived in [from, to) that
// succeeded.
func (r stormResult) goodput(from, to time.Duration) float64 {
	var n, ok int
	for _, c := range r.calls {
		if c.at >= from && c.at < to {
			n++
			if c.ok {
				ok++
			}
		}
	}
	return float64(ok) / float64(max(n, 1))
}

// recovery is the time from the end of the drop until 95% of calls
// succeed, second by second, for 5 seconds straight; false for never.
func (r stormResult) recovery() (time.Duration, bool) {
	calls, ok := r.seconds()
	end := int((r.cfg.DropAt + r.cfg.DropFor) / time.Second)
	run := 0
	for s := end; s < len(calls); s++ {
		if calls[s] > 0 && float64(ok[s]) >= 0.95*float64(calls[s]) {
			if run++; run == 5 {
				return time.Duration(s-4-end) * time.Second, true
			}
		} else {
			run = 0
		}
	}
	return 0, false
}

// stormRow is one arm's line of a table.
type stormRow struct {
	arm           string
	during, after float64 // attempts per call
	goodput       float64 // last 30s
	recovered     time.Duration
	recovers      bool
	timeline      []float64 // success share, second by second
}

func (r stormResult) row(arm string) stormRow {
	drop := r.cfg.DropAt + r.cfg.DropFor
	rec, ok := r.recovery()
	calls, succeeded := r.seconds()
	timeline := make([]float64, len(calls))
	for s := range calls {
		timeline[s] = float64(succeeded[s]) / float64(max(calls[s], 1))
	}
	return stormRow{
		arm:       arm,
		during:    r.attempts(r.cfg.DropAt, drop),
		after:     r.attempts(drop, r.cfg.Run),
		goodput:   r.goodput(r.cfg.Run-30*time.Second, r.cfg.Run),
		recovered: rec, recovers: ok,
		timeline: timeline,
	}
}

func (r stormRow) recoveredString() string {
	if !r.recovers {
		return "never"
	}
	return fmt.Sprint(r.recovered)
}

// stormTable prints the rows as a Markdown table.
func stormTable(cfg StormConfig, seed uint64, rows []stormRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s; seed %d.\n\n", cfg, seed)
	b.WriteString("| client | attempts per call, during the drop | after it | goodput, last 30s | back to 95% after the drop |\n|---|--:|--:|--:|--:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.2f | %s |\n", r.arm, r.during, r.after, r.goodput, r.recoveredString())
	}
	return b.String()
}

// stormTarget is when the default must be back, against no retries: within
// ratio× its time, or its time plus 10s, whichever is later.
func stormTarget(noRetries time.Duration, ratio float64) time.Duration {
	return max(time.Duration(ratio*float64(noRetries)), noRetries+10*time.Second)
}

const stormSeed = 22

// TestStorm is the reference run, seeded, every arm, and asserts what
// benchmarks/README.md says of it: no retries recovers; every arm without a
// budget stays down (the storm sustains itself); httpretry's default
// recovers within 1.3× the time of no retries; and its goodput over the
// last 30 seconds is no less than no retries'.
func TestStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("about 30 seconds")
	}
	rows := map[string]stormRow{}
	var table []stormRow
	for _, arm := range stormArms {
		r := runStorm(t, stormReference, arm, stormSeed).row(arm.name)
		rows[arm.name] = r
		table = append(table, r)
	}
	fmt.Println(stormTable(stormReference, stormSeed, table))
	none := rows["no retries"]
	if !none.recovers {
		t.Fatalf("no retries never recovered: the regime is not the reference's")
	}
	for _, arm := range stormArms[1:] {
		if r := rows[arm.name]; !arm.budgeted && (r.recovers || r.goodput > 0.5) {
			t.Errorf("%s: recovered after %v, goodput %.2f: want it to stay down, as the storm holds it", arm.name, r.recovered, r.goodput)
		}
	}
	for _, name := range []string{"unherd/backoff httpretry, defaults", "unherd/backoff httpretry, Hedge{}", "unherd/backoff httpretry, Hedge{Delay: 50ms}"} {
		ours := rows[name]
		if !ours.recovers || ours.recovered > time.Duration(1.3*float64(none.recovered)) || ours.goodput < none.goodput-0.01 {
			t.Errorf("%s: back after %v (ok %v), goodput %.2f; want back within 1.3× no retries' %v, goodput at least its %.2f", name, ours.recovered, ours.recovers, ours.goodput, none.recovered, none.goodput)
		}
	}
}

var sweep = flag.Bool("sweep", false, "run the long sweeps: TestStormSweep (every regime, and docs/storm.svg), TestStormRuns, TestBudgetHealthySweep")

// stormRegimes are the regimes of the sweep: the reference, then each
// setting varied alone, for 10 instances and for 100.
func stormRegimes() []StormConfig {
	var out []StormConfig
	for _, instances := range []int{10, 100} {
		ref := stormReference
		ref.Instances = instances
		vary := func(f func(c *StormConfig)) {
			c := ref
			f(&c)
			out = append(out, c)
		}
		vary(func(*StormConfig) {})
		vary(func(c *StormConfig) { c.Queue = 100 })
		vary(func(c *StormConfig) { c.Queue = 3000 })
		vary(func(c *StormConfig) { c.Depth = 0.5 })
		vary(func(c *StormConfig) { c.Depth = 0.7 })
		vary(func(c *StormConfig) { c.DropFor = 2 * time.Second })
		vary(func(c *StormConfig) { c.DropFor = 30 * time.Second })
		vary(func(c *StormConfig) { c.Load = 50 })
		vary(func(c *StormConfig) { c.Load, c.Run = 95, 400*time.Second }) // the queue drains at 5/s: longer
		vary(func(c *StormConfig) { c.AttemptTimeout = 500 * time.Millisecond })
		vary(func(c *StormConfig) { c.AttemptTimeout = 3 * time.Second })
	}
	return out
}

// TestStormSweep runs every arm in every regime, prints a table for each
// with whether httpretry's default met its target (where some arm without
// a budget never recovered: back within 1.5× no retries' time or no
// retries' time plus 10s, whichever is later), and writes docs/storm.svg
// from the reference run. It takes minutes; run it with -sweep.
func TestStormSweep(t *testing.T) {
	if !*sweep {
		t.Skip("minutes: run with -sweep")
	}
	var summary strings.Builder
	summary.WriteString("| instances | regime | no retries back after | httpretry's default | its target | with Hedge{} | with Hedge{Delay: 50ms} | Budget{Burst: 1} | arms without a budget that stay down |\n|--:|---|--:|--:|--:|--:|--:|--:|--:|\n")
	missed := 0
	for i, cfg := range stormRegimes() {
		var rows []stormRow
		for _, arm := range stormArms {
			rows = append(rows, runStorm(t, cfg, arm, stormSeed).row(arm.name))
		}
		fmt.Print(stormTable(cfg, stormSeed, rows))
		fmt.Println(stormVerdict(rows))
		if i == 0 {
			if err := os.WriteFile(stormSVGPath, []byte(stormSVG(cfg, stormSeed, rows)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		byName := map[string]stormRow{}
		down, unbudgeted := 0, 0
		for j, r := range rows {
			byName[r.arm] = r
			if j > 0 && !stormArms[j].budgeted {
				unbudgeted++
				if !r.recovers {
					down++
				}
			}
		}
		none := byName["no retries"]
		target := "–"
		mark := func(name string) string {
			r := byName[name]
			if none.recovers && down > 0 && (!r.recovers || r.recovered > stormTarget(none.recovered, 1.5)) {
				missed++
				return r.recoveredString() + " (missed)"
			}
			return r.recoveredString()
		}
		if none.recovers {
			target = fmt.Sprint(stormTarget(none.recovered, 1.5))
		}
		fmt.Fprintf(&summary, "| %d | %s | %s | %s | %s | %s | %s | %s | %d of %d |\n", cfg.Instances, cfg.regime(), none.recoveredString(),
			mark("unherd/backoff httpretry, defaults"), target, mark("unherd/backoff httpretry, Hedge{}"), mark("unherd/backoff httpretry, Hedge{Delay: 50ms}"),
			byName["unherd/backoff httpretry, Budget{Burst: 1}"].recoveredString(), down, unbudgeted)
	}
	fmt.Println(summary.String())
	fmt.Printf("httpretry's default, Hedge{} and Hedge{Delay: 50ms}, in the regimes a storm holds: %d targets missed.\n", missed)
}

// stormRatioArms are httpretry with a Budget of each of healthyRatios for
// each client instance: what raising Ratio costs in the storm.
func stormRatioArms() []stormArm {
	var arms []stormArm
	for _, r := range healthyRatios {
		arms = append(arms, stormArm{fmt.Sprintf("unherd/backoff httpretry, Budget{Ratio: %g}", r), true, func(conn http.RoundTripper) func(context.Context) bool {
			client := &http.Client{Transport: &httpretry.Transport{Base: conn, Policy: retry.Policy{Budget: &retry.Budget{Ratio: r}}}}
			return func(ctx context.Context) bool { return get200(ctx, client) }
		}})
	}
	return arms
}

// stormRuns is how many times TestStormRuns runs each cell.
const stormRuns = 5

// stormCell is one arm in one regime, run stormRuns times from stormSeed.
type stormCell struct {
	back          []time.Duration // sorted; never is math.MaxInt64
	during, after []float64       // sorted
}

func runStormCell(t *testing.T, cfg StormConfig, arm stormArm) stormCell {
	var c stormCell
	for range stormRuns {
		r := runStorm(t, cfg, arm, stormSeed).row(arm.name)
		d := time.Duration(math.MaxInt64)
		if r.recovers {
			d = r.recovered
		}
		c.back, c.during, c.after = append(c.back, d), append(c.during, r.during), append(c.after, r.after)
	}
	slices.Sort(c.back)
	slices.Sort(c.during)
	slices.Sort(c.after)
	return c
}

func showBack(d time.Duration) string {
	if d == math.MaxInt64 {
		return "never"
	}
	return fmt.Sprint(d)
}

// median is the median time back, with the range over the runs when
// they differ: "41s" or "42s (41s–44s)".
func (c stormCell) median() string {
	lo, mid, hi := c.back[0], c.back[len(c.back)/2], c.back[len(c.back)-1]
	if lo == hi {
		return showBack(mid)
	}
	return fmt.Sprintf("%s (%s–%s)", showBack(mid), showBack(lo), showBack(hi))
}

// TestStormRuns runs each cell stormRuns times from the same seed: the
// arrivals are the same every run, and what changes is the jitter, drawn
// from math/rand/v2's package-level source, which cannot be seeded
// (httpretry's, cenkalti's, failsafe-go's). It prints two tables, each
// cell the median time back with the range over the runs where they
// differ: every arm, and Budget{Ratio: r} for each of healthyRatios, in
// the reference regime with 10 instances and with 100; then every regime
// of the sweep for the arms that recover, the Ratios among them. So it
// measures both how much a sweep cell moves from run to run and what
// raising Ratio costs in the storm. Minutes; run it with -sweep.
func TestStormRuns(t *testing.T) {
	if !*sweep {
		t.Skip("minutes: run with -sweep")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The reference regime, each cell run %d times from seed %d: the median, and the range when the runs differ.\n\n", stormRuns, stormSeed)
	b.WriteString("| client | 10 instances: back to 95% after the drop | attempts per call, during the drop | after it | 100 instances: back after | attempts, during | after |\n|---|--:|--:|--:|--:|--:|--:|\n")
	for _, arm := range append(slices.Clone(stormArms), stormRatioArms()...) {
		fmt.Fprintf(&b, "| %s |", arm.name)
		for _, instances := range []int{10, 100} {
			cfg := stormReference
			cfg.Instances = instances
			c := runStormCell(t, cfg, arm)
			fmt.Fprintf(&b, " %s | %.2f | %.2f |", c.median(), c.during[stormRuns/2], c.after[stormRuns/2])
		}
		b.WriteString("\n")
	}
	fmt.Println(b.String())

	byName := map[string]stormArm{}
	for _, arm := range append(slices.Clone(stormArms), stormRatioArms()...) {
		byName[strings.TrimPrefix(arm.name, "unherd/backoff httpretry, ")] = arm
	}
	cols := []string{"no retries", "defaults", "Hedge{}", "Hedge{Delay: 50ms}", "Budget{Ratio: 0.5}", "Budget{Ratio: 1}", "Budget{Burst: 1}"}
	b.Reset()
	fmt.Fprintf(&b, "Every regime, time back to 95%% after the drop, each cell run %d times from seed %d: the median, and the range when the runs differ.\n\n", stormRuns, stormSeed)
	b.WriteString("| instances | regime | " + strings.Join(cols, " | ") + " |\n|--:|---|" + strings.Repeat("--:|", len(cols)) + "\n")
	for _, cfg := range stormRegimes() {
		fmt.Fprintf(&b, "| %d | %s |", cfg.Instances, cfg.regime())
		for _, col := range cols {
			fmt.Fprintf(&b, " %s |", runStormCell(t, cfg, byName[col]).median())
		}
		b.WriteString("\n")
	}
	fmt.Println(b.String())
}

// regime names what sets c apart from the reference.
func (c StormConfig) regime() string {
	ref := stormReference
	var parts []string
	if c.Queue != ref.Queue {
		parts = append(parts, fmt.Sprintf("queue %d", c.Queue))
	}
	if c.Depth != ref.Depth {
		parts = append(parts, fmt.Sprintf("capacity ×%g in the drop", c.Depth))
	}
	if c.DropFor != ref.DropFor {
		parts = append(parts, fmt.Sprintf("a drop of %v", c.DropFor))
	}
	if c.Load != ref.Load {
		parts = append(parts, fmt.Sprintf("%.0f calls/s", c.Load))
	}
	if c.AttemptTimeout != ref.AttemptTimeout {
		parts = append(parts, fmt.Sprintf("attempts %v", c.AttemptTimeout))
	}
	if len(parts) == 0 {
		return "the reference"
	}
	return strings.Join(parts, ", ")
}

// stormVerdict says whether the storm held an arm without a budget (but
// no retries), and whether httpretry's default met its target.
func stormVerdict(rows []stormRow) string {
	byName := map[string]stormRow{}
	stormHeld := false
	for i, r := range rows {
		byName[r.arm] = r
		if i > 0 && !stormArms[i].budgeted && !r.recovers {
			stormHeld = true
		}
	}
	none, ours := byName["no retries"], byName["unherd/backoff httpretry, defaults"]
	switch {
	case !none.recovers:
		return "No retries is not back before the run ends: the drop outlasts it.\n"
	case !stormHeld:
		return fmt.Sprintf("No storm: every arm without a budget is back. httpretry's default after %s; no retries after %v.\n", ours.recoveredString(), none.recovered)
	case ours.recovers && ours.recovered <= stormTarget(none.recovered, 1.5):
		return fmt.Sprintf("A storm holds an arm without a budget. httpretry's default is back after %v: within its target, %v (no retries: %v).\n", ours.recovered, stormTarget(none.recovered, 1.5), none.recovered)
	}
	return fmt.Sprintf("A storm holds an arm without a budget. httpretry's default is back after %s: MISSES its target, %v (no retries: %v).\n", ours.recoveredString(), stormTarget(none.recovered, 1.5), none.recovered)
}

const stormSVGPath = "../docs/storm.svg"

// stormSVG draws each arm's goodput, second by second: the share of the
// calls arriving in that second that succeeded.
func stormSVG(cfg StormConfig, seed uint64, rows []stormRow) string {
	const (
		width, height    = 1080, 420
		left, right, top = 60, 370, 50
		bottom           = 40
		dropColour       = "#f3d6d6"
	)
	// No retries dashed black, the peers warm, ours blue, the default thick.
	colours := []string{"#000000", "#ff7f0e", "#d62728", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#9ecae1", "#1f77b4"}
	plotW, plotH := float64(width-left-right), float64(height-top-bottom)
	xOf := func(s float64) float64 { return left + s*plotW/cfg.Run.Seconds() }
	yOf := func(g float64) float64 { return top + (1-g)*plotH }
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	p(`<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	p(`<text x="20" y="22" font-size="14" font-weight="bold">Goodput: the share of each second's calls that succeeded</text>` + "\n")
	p(`<text x="20" y="40" fill="#555">%s; seed %d.</text>`+"\n", esc(cfg.String()), seed)
	p(`<rect x="%.1f" y="%d" width="%.1f" height="%.1f" fill="%s"/>`+"\n", xOf(cfg.DropAt.Seconds()), top, xOf((cfg.DropAt+cfg.DropFor).Seconds())-xOf(cfg.DropAt.Seconds()), plotH, dropColour)
	for _, g := range []float64{0, 0.5, 0.95, 1} {
		p(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, width-right, yOf(g), yOf(g))
		p(`<text x="%d" y="%.1f" text-anchor="end" fill="#555">%g</text>`+"\n", left-6, yOf(g)+4, g)
	}
	for s := 0.0; s <= cfg.Run.Seconds(); s += 10 {
		p(`<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%gs</text>`+"\n", xOf(s), height-bottom+16, s)
	}
	for i, r := range rows {
		colour := colours[i%len(colours)]
		var pts []string
		for s, g := range r.timeline {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(float64(s)+0.5), yOf(g)))
		}
		style := `stroke-width="1.5"`
		switch r.arm {
		case "no retries":
			style = `stroke-width="1.5" stroke-dasharray="6 3"`
		case "unherd/backoff httpretry, defaults":
			style = `stroke-width="3"`
		}
		p(`<polyline fill="none" stroke="%s" %s points="%s"/>`+"\n", colour, style, strings.Join(pts, " "))
		y := top + 14*i + 8
		p(`<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", width-right+12, width-right+32, y, y, colour)
		p(`<text x="%d" y="%d">%s: %s</text>`+"\n", width-right+38, y+4, esc(strings.TrimPrefix(r.arm, "unherd/backoff ")), r.recoveredString())
	}
	p(`<text x="20" y="%d" fill="#555">The shaded band is the drop. Regenerate: cd benchmarks &amp;&amp; go test -run TestStormSweep -v -sweep.</text>`+"\n", height-8)
	b.WriteString("</svg>\n")
	return b.String()
}

// countRefusals is a slog.Handler that counts the records of calls the
// budget ended: "giving up" with ErrBudget as the cause.
type countRefusals struct {
	mu sync.Mutex
	n  int
}

func (c *countRefusals) Enabled(context.Context, slog.Level) bool { return true }
func (c *countRefusals) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *countRefusals) WithGroup(string) slog.Handler            { return c }
func (c *countRefusals) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "cause" && a.Value.Any() == retry.ErrBudget {
			c.mu.Lock()
			c.n++
			c.mu.Unlock()
		}
		return true
	})
	return nil
}

// flakyConn is a dependency with no overload: each attempt fails with a
// 503 at probability p, decided by the call and the attempt, so that every
// arm meets the same failures; it answers after 10ms.
type flakyConn struct {
	p    float64
	seed uint64
}

type flakyKey struct{}

func (f flakyConn) RoundTrip(req *http.Request) (*http.Response, error) {
	call := req.Context().Value(flakyKey{}).(*stormCall)
	call.attempts++
	r := rand.New(rand.NewPCG(f.seed, uint64(call.at)<<8|uint64(call.attempts)))
	status := http.StatusOK
	if r.Float64() < f.p {
		status = http.StatusServiceUnavailable
	}
	time.Sleep(10 * time.Millisecond)
	return &http.Response{StatusCode: status, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// healthyRatios are the Budget.Ratio values the healthy curve
// (TestBudgetHealthySweep) and the storm's cost of them (TestStormRuns)
// are measured for, beside the default, 0.2.
var healthyRatios = []float64{0.5, 1}

// healthyArm is one client setup of the healthy curve: budget gives each
// client instance its Budget.
type healthyArm struct {
	name   string
	budget func() *retry.Budget
}

func healthyArms() []healthyArm {
	arms := []healthyArm{{"the default budget", func() *retry.Budget { return &retry.Budget{} }}}
	for _, r := range healthyRatios {
		arms = append(arms, healthyArm{fmt.Sprintf("`Budget{Ratio: %g}`", r), func() *retry.Budget { return &retry.Budget{Ratio: r} }})
	}
	return append(arms, healthyArm{"`NoBudget`", func() *retry.Budget { return httpretry.NoBudget() }})
}

const healthyInstances, healthyRate, healthyCalls = 10, 80.0, 12000

// runHealthy sends healthyCalls calls from healthyInstances clients at
// healthyRate a second in all (Poisson, seeded) to a dependency with no
// overload whose attempts fail at probability p (flakyConn), each through
// httpretry with the default Policy and its client's Budget from budget,
// and counts the calls that succeeded and those the budget ended.
//
// Everything is drawn from seeds: the arrivals, each attempt's fate, and
// each call's jitter, from a Schedule.Rand of its own (a *rand.Rand is not
// safe for concurrent use, so each call has its own Transport; they share
// their client's Budget, as one Transport's calls to one host share the
// Budget it keeps for that host: the zero Budget is that one). So every
// arm meets the same failures, and a run repeats to the call.
func runHealthy(t *testing.T, p float64, budget func() *retry.Budget) (ok int, refused int) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		refusals := &countRefusals{}
		logger := slog.New(refusals)
		t0 := time.Now()
		for i := range healthyInstances {
			conn := flakyConn{p: p, seed: stormSeed}
			b := budget()
			arrivals := rand.New(rand.NewPCG(stormSeed, uint64(i)))
			wg.Go(func() {
				for range healthyCalls / healthyInstances {
					time.Sleep(time.Duration(arrivals.ExpFloat64() / (healthyRate / healthyInstances) * float64(time.Second)))
					c := &stormCall{at: time.Since(t0)<<4 | time.Duration(i)} // a key per call, the same for every arm
					policy := retry.Policy{Budget: b, Logger: logger}
					policy.Schedule.Rand = rand.New(rand.NewPCG(stormSeed, uint64(c.at)))
					client := &http.Client{Transport: &httpretry.Transport{Base: conn, Policy: policy}}
					wg.Go(func() {
						ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), flakyKey{}, c), 10*time.Second)
						defer cancel()
						if get200(ctx, client) {
							mu.Lock()
							ok++
							mu.Unlock()
						}
					})
				}
			})
		}
		wg.Wait()
		refused = refusals.n
	})
	return ok, refused
}

// TestBudgetHealthy is the other side of the trade: a dependency with no
// overload, 12,000 calls from 10 clients at 80 a second, every draw seeded.
// When 5%, 10% or 20% of attempts fail at random, as many calls succeed
// with the default budget as with NoBudget (within 0.1 percentage point),
// and at 30% within 1 point: a retry that succeeds is given back, so a
// call costs only the retries that failed, f²/(1−f) of one on average
// (0.13 at 30%), and earns 0.2. At 40% it costs 0.27, more than a call
// earns, and the default falls well short: it still bounds a dependency
// that fails that much. TestBudgetHealthySweep draws the whole curve.
func TestBudgetHealthy(t *testing.T) {
	defaultBudget := func() *retry.Budget { return &retry.Budget{} }
	noBudget := func() *retry.Budget { return httpretry.NoBudget() }
	for _, tt := range []struct{ fail, within float64 }{{0.05, 0.001}, {0.10, 0.001}, {0.20, 0.001}, {0.30, 0.01}} {
		okDefault, refused := runHealthy(t, tt.fail, defaultBudget)
		okNone, _ := runHealthy(t, tt.fail, noBudget)
		fmt.Printf("%.0f%% of attempts failing, %d calls: the default budget: %d succeeded, %d retries refused; NoBudget: %d succeeded\n",
			100*tt.fail, healthyCalls, okDefault, refused, okNone)
		if float64(okNone-okDefault) > tt.within*healthyCalls {
			t.Errorf("%.0f%% failing, the default budget: %d succeeded, %d refused; NoBudget: %d; want the same within %.1f point", 100*tt.fail, okDefault, refused, okNone, 100*tt.within)
		}
	}
	okDefault, refused := runHealthy(t, 0.4, defaultBudget)
	okNone, _ := runHealthy(t, 0.4, noBudget)
	fmt.Printf("40%% of attempts failing: the default budget: %d succeeded, %d refused; NoBudget: %d succeeded\n", okDefault, refused, okNone)
	if okDefault > okNone-healthyCalls/20 {
		t.Errorf("40%% failing, the default budget: %d succeeded, %d refused; NoBudget: %d; want the default 5 points short or more", okDefault, refused, okNone)
	}
}

// TestBudgetHealthySweep draws the healthy curve: the share of calls that
// succeed, and the calls the budget ended, as the failing share of
// attempts grows from 5% to 50%, for the default budget, NoBudget and a
// Budget with each of healthyRatios. Every draw is seeded (runHealthy), so
// it prints the same table every run. Seconds; run it with -sweep.
func TestBudgetHealthySweep(t *testing.T) {
	if !*sweep {
		t.Skip("run with -sweep")
	}
	arms := healthyArms()
	var b strings.Builder
	b.WriteString("| attempts failing |")
	for _, arm := range arms {
		fmt.Fprintf(&b, " %s |", arm.name)
	}
	b.WriteString("\n|--:|" + strings.Repeat("--:|", len(arms)) + "\n")
	for _, p := range []float64{0.05, 0.10, 0.15, 0.20, 0.30, 0.40, 0.50} {
		fmt.Fprintf(&b, "| %g%% |", 100*p)
		for _, arm := range arms {
			ok, refused := runHealthy(t, p, arm.budget)
			if arm.name == "`NoBudget`" {
				fmt.Fprintf(&b, " %.1f%% |", 100*float64(ok)/healthyCalls)
			} else {
				fmt.Fprintf(&b, " %.1f%% (%d) |", 100*float64(ok)/healthyCalls, refused)
			}
		}
		b.WriteString("\n")
	}
	fmt.Printf("%d calls from %d clients at %.0f a second, each attempt failing at random; httpretry's default Policy (5 retries), a Budget for each client; seed %d. Each cell: the calls that succeeded (the calls the budget ended).\n\n%s",
		healthyCalls, healthyInstances, healthyRate, stormSeed, b.String())
}
