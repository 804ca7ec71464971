// Package benchmarks holds what measures github.com/unherd/backoff against
// its peers and against the contention model of the AWS Architecture Blog
// post "Exponential Backoff And Jitter" (Brooker, 2015). It is a module of
// its own so that the package itself keeps no dependencies.
package benchmarks

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/unherd/backoff"
)

// The model's constants, as the post describes them.
const (
	HerdBase    = 5 * time.Millisecond // backoff base
	HerdCap     = 2 * time.Second      // backoff cap
	netMean     = 10 * time.Millisecond
	netStddev   = 2 * time.Millisecond
	herdWindow  = 10 * time.Millisecond // the span the herd peak counts writes in
	herdRetries = 3                     // herd peaks are reported for retries 1…3
)

// A Strategy is what a client does after its failures-th failed write: it
// returns the wait before the next try. New builds one client's strategy
// from that client's own random source.
type Strategy struct {
	Name string
	New  func(r *rand.Rand) func(failures int) time.Duration
}

// AdditiveJitter is the Jitter fraction the simulation gives JitterAdditive
// and JitterSymmetric.
const AdditiveJitter = 0.5

// scheduleStrategy runs one of our modes through Schedule.Next, the real
// loop (for JitterDecorrelated, each wait drawn from the one before), with
// the model's base and the given cap.
func scheduleStrategy(mode backoff.JitterMode, cap time.Duration) Strategy {
	return Strategy{
		Name: mode.String(),
		New: func(r *rand.Rand) func(int) time.Duration {
			s := &backoff.Schedule{
				Curve: backoff.Value{BaseDelay: HerdBase, MaxDelay: cap, Jitter: AdditiveJitter, JitterMode: mode},
				Rand:  r,
			}
			return func(int) time.Duration { d, _ := s.Next(); return d }
		},
	}
}

// StrategiesCapped are our modes with the given cap and, for reference, no
// backoff at all.
func StrategiesCapped(cap time.Duration) []Strategy {
	return []Strategy{
		{Name: "no backoff", New: func(*rand.Rand) func(int) time.Duration {
			return func(int) time.Duration { return 0 }
		}},
		scheduleStrategy(backoff.JitterNone, cap),
		scheduleStrategy(backoff.JitterFull, cap),
		scheduleStrategy(backoff.JitterEqual, cap),
		scheduleStrategy(backoff.JitterDecorrelated, cap),
		scheduleStrategy(backoff.JitterAdditive, cap),
		scheduleStrategy(backoff.JitterSymmetric, cap),
	}
}

// Strategies are StrategiesCapped at the model's cap, HerdCap.
var Strategies = StrategiesCapped(HerdCap)

// Outcome is what one trial of one strategy measured.
type Outcome struct {
	Work       int           // conditional writes that reached the server
	Completion time.Duration // when the last client received its success
	Herd       [herdRetries]int
}

type eventKind uint8

const (
	readArrives  eventKind = iota // a read request reaches the server
	readReturns                   // its reply, carrying the version, reaches the client
	writeArrives                  // a conditional write reaches the server
	writeReturns                  // its reply reaches the client
)

type event struct {
	at      time.Duration
	seq     uint64 // ties break by scheduling order: deterministic
	client  int32
	kind    eventKind
	ok      bool
	version int64
}

// eventQueue is a binary min-heap of events by (at, seq).
type eventQueue []event

func (q eventQueue) less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].seq < q[j].seq)
}

func (q *eventQueue) push(e event) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *eventQueue) pop() event {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h.less(l, m) {
			m = l
		}
		if r < len(h) && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

// streams of randomness, so that every strategy sees the same numbers
const (
	streamNetwork = iota
	streamBackoff
)

func source(seed uint64, trial, client, stream int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(trial)<<32|uint64(client)<<2|uint64(stream)))
}

// Simulate runs one trial: n clients, each updating one shared row once with
// optimistic concurrency, from t = 0. Client c's network delays come from its
// own stream, drawn in the order of its messages, and its backoff from
// another: two strategies in the same trial see the same random numbers.
func Simulate(s Strategy, n int, seed uint64, trial int) Outcome {
	type client struct {
		net      *rand.Rand
		wait     func(failures int) time.Duration
		failures int
	}
	clients := make([]client, n)
	var q eventQueue
	var seq uint64
	send := func(at time.Duration, c int, kind eventKind, ok bool, version int64) {
		seq++
		// |Normal(10ms, 2ms)|, one draw per message.
		d := time.Duration(math.Abs(clients[c].net.NormFloat64()*float64(netStddev) + float64(netMean)))
		q.push(event{at: at + d, seq: seq, client: int32(c), kind: kind, ok: ok, version: version})
	}
	for c := range clients {
		clients[c] = client{net: source(seed, trial, c, streamNetwork), wait: s.New(source(seed, trial, c, streamBackoff))}
		send(0, c, readArrives, false, 0)
	}
	var (
		out     Outcome
		version int64
		writes  [herdRetries][]time.Duration // arrival times of retry-k writes
		done    int
	)
	for done < n {
		e := q.pop()
		c := int(e.client)
		switch e.kind {
		case readArrives:
			send(e.at, c, readReturns, false, version)
		case readReturns:
			send(e.at, c, writeArrives, false, e.version)
		case writeArrives:
			out.Work++
			if k := clients[c].failures; k >= 1 && k <= herdRetries {
				writes[k-1] = append(writes[k-1], e.at)
			}
			ok := e.version == version
			if ok {
				version++
			}
			send(e.at, c, writeReturns, ok, 0)
		case writeReturns:
			if e.ok {
				done++
				out.Completion = e.at
				continue
			}
			clients[c].failures++
			wait := clients[c].wait(clients[c].failures)
			send(e.at+wait, c, readArrives, false, 0)
		}
	}
	for k := range writes {
		out.Herd[k] = peak(writes[k], herdWindow)
	}
	return out
}

// peak is the most of times that fall within any span of width w.
func peak(times []time.Duration, w time.Duration) int {
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	best, lo := 0, 0
	for hi := range times {
		for times[hi]-times[lo] >= w {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// Summary is the mean of a strategy's outcomes over the trials at one n.
type Summary struct {
	Strategy   string
	N          int
	Work       float64
	Completion time.Duration
	Herd       [herdRetries]float64
	// WorkVsFull and TimeVsFull are the mean paired ratios of this
	// strategy's work and completion to full jitter's in the same trial.
	WorkVsFull, TimeVsFull float64
}

// Run simulates every strategy for every n, trials times each, on all
// cores; the result depends only on the arguments.
func Run(ns []int, trials int, seed uint64) [][]Summary {
	return RunStrategies(Strategies, ns, trials, seed)
}

// RunStrategies is Run over the given strategies, which must include full
// jitter's (the paired ratios are to it).
func RunStrategies(strategies []Strategy, ns []int, trials int, seed uint64) [][]Summary {
	out := make([][]Summary, len(ns))
	for i, n := range ns {
		results := runTrials(len(strategies), trials, func(s, t int) Outcome {
			return Simulate(strategies[s], n, seed, t)
		})

		full := -1
		for s, st := range strategies {
			if st.Name == backoff.JitterFull.String() {
				full = s
			}
		}
		for s, st := range strategies {
			sum := Summary{Strategy: st.Name, N: n}
			var completion float64
			for t, o := range results[s] {
				sum.Work += float64(o.Work)
				completion += float64(o.Completion)
				for k := range o.Herd {
					sum.Herd[k] += float64(o.Herd[k])
				}
				f := results[full][t]
				sum.WorkVsFull += float64(o.Work) / float64(f.Work)
				sum.TimeVsFull += float64(o.Completion) / float64(f.Completion)
			}
			tf := float64(trials)
			sum.Work /= tf
			sum.Completion = time.Duration(completion / tf)
			for k := range sum.Herd {
				sum.Herd[k] /= tf
			}
			sum.WorkVsFull /= tf
			sum.TimeVsFull /= tf
			out[i] = append(out[i], sum)
		}
	}
	return out
}

// runTrials returns sim(s, t) for every strategy s < strategies and trial
// t < trials, as [strategy][trial], running the trials on all cores. Each
// result lands at its own index, so the output does not depend on the
// order the workers finish in.
func runTrials[T any](strategies, trials int, sim func(s, t int) T) [][]T {
	results := make([][]T, strategies)
	for s := range results {
		results[s] = make([]T, trials)
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range next {
				for s := range strategies {
					results[s][t] = sim(s, t)
				}
			}
		}()
	}
	for t := range trials {
		next <- t
	}
	close(next)
	wg.Wait()
	return results
}

// HerdTrials is how many trials the published contention tables average.
const HerdTrials = 400

// SuccessTime is how long one success holds the contended row: the two
// message delays from a client's read reaching the server to its write
// reaching it. A cap of N × SuccessTime lets N clients spread over about
// the time the row needs to serve them all.
const SuccessTime = 2 * netMean

// SweepCaps are the caps CapTable runs.
var SweepCaps = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 60 * time.Second}

// capped runs full and equal jitter (and the other jittered modes when all
// is set) with the given cap at n clients.
func capped(n int, cap time.Duration, all bool, trials int, seed uint64) map[string]Summary {
	var sts []Strategy
	for _, st := range StrategiesCapped(cap) {
		switch st.Name {
		case "full", "equal":
			sts = append(sts, st)
		case "decorrelated", "additive":
			if all {
				sts = append(sts, st)
			}
		}
	}
	return byName(RunStrategies(sts, []int{n}, trials, seed)[0])
}

// CapTable runs full and equal jitter at n clients for every cap, and
// formats their work and completion as Markdown.
func CapTable(n int, caps []time.Duration, trials int, seed uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Work and completion against the cap: N=%d, base %v, %d trials per cap, seed %d; × full's, paired.\n\n", n, HerdBase, trials, seed)
	b.WriteString("| cap | full: work | full: last success (ms) | equal: work | × full's | equal: last success (ms) | × full's |\n|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, cap := range caps {
		m := capped(n, cap, false, trials, seed)
		f, e := m["full"], m["equal"]
		fmt.Fprintf(&b, "| %v | %.0f | %s | %.0f | %.2f | %s | %.2f |\n", cap, f.Work, ms(f.Completion), e.Work, e.WorkVsFull, ms(e.Completion), e.TimeVsFull)
	}
	return b.String()
}

// GrowingCapTable runs the jittered modes at each n, with the model's
// fixed cap and with a cap of n × per, and formats each mode's work and
// completion as multiples of full jitter's, paired.
func GrowingCapTable(ns []int, per time.Duration, trials int, seed uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "A cap that grows with N (N × %v) against the fixed %v: base %v, additive jitter %v, %d trials, seed %d; × full's, paired.\n\n", per, HerdCap, HerdBase, AdditiveJitter, trials, seed)
	b.WriteString("| N | cap | full: work | equal: work × | additive: work × | decorrelated: work × | full: last success (ms) | equal: time × | decorrelated: time × |\n|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, n := range ns {
		caps := []time.Duration{HerdCap}
		if grown := time.Duration(n) * per; grown != HerdCap {
			caps = append(caps, grown)
		}
		for _, cap := range caps {
			m := capped(n, cap, true, trials, seed)
			f := m["full"]
			fmt.Fprintf(&b, "| %d | %v | %.0f | %.2f | %.2f | %.2f | %s | %.2f | %.2f |\n", n, cap, f.Work, m["equal"].WorkVsFull, m["additive"].WorkVsFull, m["decorrelated"].WorkVsFull, ms(f.Completion), m["equal"].TimeVsFull, m["decorrelated"].TimeVsFull)
		}
	}
	return b.String()
}

// byName indexes a row of summaries by strategy.
func byName(row []Summary) map[string]Summary {
	m := make(map[string]Summary)
	for _, s := range row {
		m[s.Strategy] = s
	}
	return m
}
