package benchmarks

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/unherd/backoff"
)

// The Retry-After model: N clients call one server that can serve
// Capacity requests a second (a token bucket holding at most Burst). A
// request over capacity gets a 429 carrying Retry-After, and the clients,
// started together, retry until each has one success. What a client does
// with the header is its RAStrategy.
//
// The header takes one of two forms:
//
//   - Date: the server is down for maintenance until Maintenance and tells
//     everyone that date; after it, a 429 names the HTTP-date of now+Delay,
//     in whole seconds as HTTP-dates are.
//   - Seconds: the server is up from the start, and every 429 says
//     "Retry-After: Delay", in whole seconds.
//
// Every message takes |Normal(10ms, 2ms)|, as in the contention model.
type RAConfig struct {
	N           int
	Capacity    float64       // requests served per second
	Burst       float64       // the token bucket's depth
	Date        bool          // the HTTP-date form; else delay-seconds
	Delay       time.Duration // the delay a 429 asks for, whole seconds
	Maintenance time.Duration // Date form: when the maintenance window ends
}

// RAStrategy is what a client does after its failures-th 429, which asked
// for retryAfter: it returns the wait before the next request. New builds
// one client's strategy from that client's own random source.
type RAStrategy struct {
	Name string
	New  func(r *rand.Rand) func(failures int, retryAfter time.Duration) time.Duration
}

// The curve the strategies that back off use: a production default.
var raCurve = backoff.Value{BaseDelay: 100 * time.Millisecond, MaxDelay: 20 * time.Second}

// addJitter is backoff.AddJitter drawn from r instead of the package-level
// source, so that a trial is reproducible: uniform over [d, d+spread), the
// interval AddJitter documents (and its tests check).
func addJitter(r *rand.Rand, d, spread time.Duration) time.Duration {
	if spread <= 0 {
		return d
	}
	return d + time.Duration(r.Int64N(int64(spread)))
}

// obey builds a strategy that obeys Retry-After through Schedule.Override,
// widened by spread(d).
func obey(name string, spread func(d time.Duration) time.Duration) RAStrategy {
	return RAStrategy{Name: name, New: func(r *rand.Rand) func(int, time.Duration) time.Duration {
		s := &backoff.Schedule{Curve: raCurve, Rand: r}
		return func(_ int, d time.Duration) time.Duration {
			s.Override(addJitter(r, d, spread(d)))
			w, _ := s.Next()
			return w
		}
	}}
}

// RAStrategies are the ways a client can treat the header. The first,
// exact obedience, is what the others are measured against.
var RAStrategies = []RAStrategy{
	obey("obey exactly", func(time.Duration) time.Duration { return 0 }),
	obey("+10% of d", func(d time.Duration) time.Duration { return d / 10 }),
	obey("+50% of d", func(d time.Duration) time.Duration { return d / 2 }),
	obey("+100% of d", func(d time.Duration) time.Duration { return d }),
	obey("+1s", func(time.Duration) time.Duration { return time.Second }),
	obey("+5s", func(time.Duration) time.Duration { return 5 * time.Second }),
	obey("+max(50% of d, 1s)", func(d time.Duration) time.Duration { return max(d/2, time.Second) }),
	{Name: "ignore it: full jitter", New: func(r *rand.Rand) func(int, time.Duration) time.Duration {
		s := &backoff.Schedule{Curve: raCurve, Rand: r}
		return func(int, time.Duration) time.Duration { w, _ := s.Next(); return w }
	}},
	{Name: "max(d, full jitter)", New: func(r *rand.Rand) func(int, time.Duration) time.Duration {
		s := &backoff.Schedule{Curve: raCurve, Rand: r}
		return func(_ int, d time.Duration) time.Duration { w, _ := s.Next(); return max(w, d) }
	}},
}

// RAOutcome is what one trial of one strategy measured.
type RAOutcome struct {
	Peak       int           // most requests reaching the server in any 10ms, from the first expiry on
	Rejected   int           // 429s: calls wasted
	Completion time.Duration // when the last client has its success
}

// raEvent kinds
const (
	raArrives = iota // a request reaches the server
	raReturns        // its response reaches the client
)

// SimulateRA runs one trial of one strategy. Client c's network delays and
// draws come from its own streams, as in Simulate, so strategies are paired.
func SimulateRA(cfg RAConfig, st RAStrategy, seed uint64, trial int) RAOutcome {
	out, _ := simulateRA(cfg, st, seed, trial)
	return out
}

// RAArrivals is SimulateRA's trial, returning when each request reached
// the server.
func RAArrivals(cfg RAConfig, st RAStrategy, seed uint64, trial int) []time.Duration {
	_, arrivals := simulateRA(cfg, st, seed, trial)
	return arrivals
}

func simulateRA(cfg RAConfig, st RAStrategy, seed uint64, trial int) (RAOutcome, []time.Duration) {
	type client struct {
		net      *rand.Rand
		wait     func(int, time.Duration) time.Duration
		failures int
	}
	clients := make([]client, cfg.N)
	var q eventQueue
	var seq uint64
	send := func(at time.Duration, c, kind int, ok bool, header time.Duration) {
		seq++
		d := time.Duration(math.Abs(clients[c].net.NormFloat64()*float64(netStddev) + float64(netMean)))
		// version carries the header: the date (Date form) or the delay.
		q.push(event{at: at + d, seq: seq, client: int32(c), kind: eventKind(kind), ok: ok, version: int64(header)})
	}
	for c := range clients {
		clients[c] = client{net: source(seed, trial, c, streamNetwork), wait: st.New(source(seed, trial, c, streamBackoff))}
		send(0, c, raArrives, false, 0)
	}
	var (
		out      RAOutcome
		tokens   = cfg.Burst
		last     time.Duration
		arrivals []time.Duration
		expiry   = time.Duration(math.MaxInt64) // the first moment a Retry-After expires
		done     int
	)
	for done < cfg.N {
		e := q.pop()
		c := int(e.client)
		switch e.kind {
		case raArrives:
			arrivals = append(arrivals, e.at)
			tokens = min(cfg.Burst, tokens+cfg.Capacity*(e.at-last).Seconds())
			last = e.at
			if cfg.Date && e.at < cfg.Maintenance {
				send(e.at, c, raReturns, false, cfg.Maintenance)
				out.Rejected++
				continue
			}
			if tokens >= 1 {
				tokens--
				send(e.at, c, raReturns, true, 0)
				continue
			}
			out.Rejected++
			header := cfg.Delay
			if cfg.Date { // an HTTP-date has whole seconds: the end of the second now+Delay falls in
				header = (e.at + cfg.Delay + time.Second - 1).Truncate(time.Second)
			}
			send(e.at, c, raReturns, false, header)
		case raReturns:
			if e.ok {
				done++
				out.Completion = e.at
				continue
			}
			d := time.Duration(e.version) // delay-seconds
			if cfg.Date {
				d = max(time.Duration(e.version)-e.at, 0) // the date, measured from now, as ParseRetryAfter does
			}
			expiry = min(expiry, e.at+d)
			clients[c].failures++
			wait := clients[c].wait(clients[c].failures, d)
			send(e.at+wait, c, raArrives, false, 0)
		}
	}
	var after []time.Duration
	for _, a := range arrivals {
		if a >= expiry {
			after = append(after, a)
		}
	}
	out.Peak = peak(after, herdWindow)
	return out, arrivals
}

// RASummary is a strategy's outcomes over the trials of one configuration:
// means, and mean paired ratios to the first strategy's (exact obedience)
// with the half-width of their 95% confidence interval.
type RASummary struct {
	Strategy                   string
	Peak, Rejected             float64
	Completion                 time.Duration
	PeakX, RejectedX, TimeX    float64 // × obey exactly's, paired
	PeakCI, RejectedCI, TimeCI float64 // 95% half-widths of those
}

// RunRA simulates every strategy in sts for cfg, trials times, on all
// cores; the result depends only on the arguments.
func RunRA(cfg RAConfig, sts []RAStrategy, trials int, seed uint64) []RASummary {
	results := runTrials(len(sts), trials, func(s, t int) RAOutcome {
		return SimulateRA(cfg, sts[s], seed, t)
	})

	out := make([]RASummary, len(sts))
	for s, st := range sts {
		sum := RASummary{Strategy: st.Name}
		var px, rx, tx []float64
		var completion float64
		for t, o := range results[s] {
			ref := results[0][t]
			sum.Peak += float64(o.Peak)
			sum.Rejected += float64(o.Rejected)
			completion += float64(o.Completion)
			px = append(px, float64(o.Peak)/float64(ref.Peak))
			rx = append(rx, float64(o.Rejected+1)/float64(ref.Rejected+1)) // +1: a strategy may waste none
			tx = append(tx, float64(o.Completion)/float64(ref.Completion))
		}
		sum.Peak /= float64(trials)
		sum.Rejected /= float64(trials)
		sum.Completion = time.Duration(completion / float64(trials))
		sum.PeakX, sum.PeakCI = meanCI(px)
		sum.RejectedX, sum.RejectedCI = meanCI(rx)
		sum.TimeX, sum.TimeCI = meanCI(tx)
		out[s] = sum
	}
	return out
}

// meanCI is the mean of xs and the half-width of its 95% confidence
// interval (normal approximation).
func meanCI(xs []float64) (mean, half float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, math.NaN()
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, 1.96 * math.Sqrt(ss/float64(len(xs)-1)/float64(len(xs)))
}

// String names the configuration in one line.
func (c RAConfig) String() string {
	form := fmt.Sprintf("\"Retry-After: %d\" on every 429", int(c.Delay/time.Second))
	if c.Date {
		form = fmt.Sprintf("one HTTP-date for everyone until maintenance ends at %v, then the date of now+%v", c.Maintenance, c.Delay)
	}
	return fmt.Sprintf("N=%d, capacity %.0f/s (burst %.0f), %s", c.N, c.Capacity, c.Burst, form)
}

// The server of the published Retry-After runs.
const (
	RACapacity = 100 // requests a second
	RABurst    = 10
)

// RAConfigs are the published configurations for each client count: the
// HTTP-date form, and delay-seconds of 1s, 5s and 30s (at 10,000 clients,
// the date form and 5s only).
func RAConfigs(ns []int) []RAConfig {
	var out []RAConfig
	for _, n := range ns {
		base := RAConfig{N: n, Capacity: RACapacity, Burst: RABurst}
		date := base
		date.Date, date.Delay, date.Maintenance = true, time.Second, 5*time.Second
		out = append(out, date)
		delays := []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}
		if n >= 10000 {
			delays = delays[1:2]
		}
		for _, d := range delays {
			c := base
			c.Delay = d
			out = append(out, c)
		}
	}
	return out
}

// The picture: 1,000 clients told one date, over the first minute.
var (
	RAPicture        = RAConfig{N: 1000, Capacity: RACapacity, Burst: RABurst, Date: true, Delay: time.Second, Maintenance: 5 * time.Second}
	RAPictureCaption = "Down for maintenance until 5s, the server names that date to all; then, over capacity, a date 1s ahead"
	RAPictureSpan    = time.Minute
)

// RAPictured are the strategies the picture shows.
func RAPictured() []RAStrategy {
	var out []RAStrategy
	for _, st := range RAStrategies {
		switch st.Name {
		case "obey exactly", "+10% of d", "+max(50% of d, 1s)", "ignore it: full jitter", "max(d, full jitter)":
			out = append(out, st)
		}
	}
	return out
}
