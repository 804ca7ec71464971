package benchmarks

import (
	"os"
	"strings"
	"testing"
	"time"
)

// The command the README names, and the picture it commits.
const (
	herdSeed   = 2015
	herdTrials = HerdTrials
	svgPath    = "../docs/jitter.svg"
)

// TestHerdOrdering runs a reduced simulation and checks the outcome the AWS
// post published, so that a change which breaks how the modes spread a
// herd fails here: no jitter is by far the worst of the backoffs in work and
// time; full jitter saves over half the work of no jitter at 100 clients
// and does no more work than equal jitter; equal jitter takes clearly longer
// than full; full and decorrelated finish first.
func TestHerdOrdering(t *testing.T) {
	for _, row := range Run([]int{25, 100}, 100, herdSeed) {
		m := byName(row)
		n := row[0].N
		none, full, equal, dec, add := m["none"], m["full"], m["equal"], m["decorrelated"], m["additive"]
		t.Logf("N=%d work: none %.0f full %.0f equal %.0f decorrelated %.0f additive %.0f", n, none.Work, full.Work, equal.Work, dec.Work, add.Work)
		t.Logf("N=%d completion: none %v full %v equal %v decorrelated %v additive %v", n, none.Completion, full.Completion, equal.Completion, dec.Completion, add.Completion)
		for _, s := range []Summary{full, equal, dec, add} {
			if none.Work < 1.3*s.Work || none.Completion < 2*s.Completion {
				t.Errorf("N=%d: no jitter (work %.0f, %v) is not by far worse than %s (work %.0f, %v)", n, none.Work, none.Completion, s.Strategy, s.Work, s.Completion)
			}
		}
		if full.Work > equal.Work {
			t.Errorf("N=%d: full jitter does more work (%.0f) than equal (%.0f)", n, full.Work, equal.Work)
		}
		if float64(equal.Completion) < 1.15*float64(full.Completion) {
			t.Errorf("N=%d: equal jitter (%v) does not take clearly longer than full (%v)", n, equal.Completion, full.Completion)
		}
		fastest := max(full.Completion, dec.Completion)
		for _, s := range []Summary{equal, add, none} {
			if s.Completion <= fastest {
				t.Errorf("N=%d: %s (%v) finishes before full (%v) or decorrelated (%v)", n, s.Strategy, s.Completion, full.Completion, dec.Completion)
			}
		}
		// Symmetric jitter waits the curve on average, full jitter half of
		// it: less work, a later last success.
		if sym := m["symmetric"]; sym.Work >= full.Work || sym.Completion <= full.Completion {
			t.Errorf("N=%d: symmetric jitter (work %.0f, %v) does not trade work for time against full (work %.0f, %v)", n, sym.Work, sym.Completion, full.Work, full.Completion)
		}
		if n == 100 && full.Work > none.Work/2 {
			t.Errorf("N=100: full jitter's work %.0f is not under half of no jitter's %.0f", full.Work, none.Work)
		}
	}
}

// TestSimulateDeterministic: the same seed gives the same outcome.
func TestSimulateDeterministic(t *testing.T) {
	for _, s := range Strategies {
		a, b := Simulate(s, 30, 7, 3), Simulate(s, 30, 7, 3)
		if a != b {
			t.Errorf("%s: two runs of one trial differ: %+v, %+v", s.Name, a, b)
		}
		if a.Work < 30 || a.Completion <= 0 {
			t.Errorf("%s: %+v: want at least one write per client and a positive completion", s.Name, a)
		}
	}
}

func TestPeak(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		times []time.Duration
		want  int
	}{
		{nil, 0},
		{[]time.Duration{5 * ms}, 1},
		{[]time.Duration{0, 9 * ms, 10 * ms, 19 * ms}, 2},
		{[]time.Duration{30 * ms, 1 * ms, 2 * ms, 3 * ms, 50 * ms}, 3},
	}
	for _, tt := range tests {
		if got := peak(append([]time.Duration(nil), tt.times...), 10*ms); got != tt.want {
			t.Errorf("peak(%v, 10ms) = %d, want %d", tt.times, got, tt.want)
		}
	}
}

// TestSVGUpToDate fails when the committed picture is not what the command
// produces now, so that picture and code cannot drift. Regenerate with
// `go run ./cmd/herd`.
func TestSVGUpToDate(t *testing.T) {
	want := SVG(herdSeed, herdTrials, Run([]int{100}, herdTrials, herdSeed)[0])
	got, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatalf("%v: regenerate it with `go run ./cmd/herd`", err)
	}
	if string(got) != want {
		t.Fatalf("%s is stale: regenerate it with `go run ./cmd/herd`", svgPath)
	}
}

func raByName(sums []RASummary) map[string]RASummary {
	m := make(map[string]RASummary)
	for _, s := range sums {
		m[s.Strategy] = s
	}
	return m
}

// TestRetryAfterOrdering runs a reduced Retry-After simulation and checks
// what benchmarks/README.md and the README publish, so that a change which
// breaks it fails here: obeying exactly brings the whole herd back in one
// 10ms and wastes more calls than obeying with any spread; the recommended spread, half of d and at
// least 1s, cuts the peak tenfold and at least halves the 429s and the time
// to the last success; taking the larger of the header and the curve does
// not spread the first return; ignoring the header wastes more calls than
// the recommended spread.
func TestRetryAfterOrdering(t *testing.T) {
	for _, cfg := range []RAConfig{
		{N: 100, Capacity: RACapacity, Burst: RABurst, Date: true, Delay: time.Second, Maintenance: 5 * time.Second},
		{N: 1000, Capacity: RACapacity, Burst: RABurst, Delay: time.Second},
		{N: 1000, Capacity: RACapacity, Burst: RABurst, Delay: 5 * time.Second},
	} {
		m := raByName(RunRA(cfg, RAStrategies, 10, herdSeed))
		exact, rec, maxd, ignore := m["obey exactly"], m["+max(50% of d, 1s)"], m["max(d, full jitter)"], m["ignore it: full jitter"]
		t.Logf("%v: exact peak %.1f 429s %.0f last %v; recommended peak %.1f 429s %.0f last %v", cfg, exact.Peak, exact.Rejected, exact.Completion, rec.Peak, rec.Rejected, rec.Completion)
		if exact.Peak < 0.7*float64(cfg.N) {
			t.Errorf("%v: obeying exactly peaks at %.1f in 10ms, want most of the %d clients at once", cfg, exact.Peak, cfg.N)
		}
		for _, s := range m {
			if strings.HasPrefix(s.Strategy, "+") && s.Rejected >= exact.Rejected {
				t.Errorf("%v: obeying with %s wastes %.0f calls, no fewer than obeying exactly (%.0f)", cfg, s.Strategy, s.Rejected, exact.Rejected)
			}
		}
		if rec.PeakX > 0.1 || rec.RejectedX > 0.5 || rec.TimeX > 0.5 {
			t.Errorf("%v: the recommended spread: peak ×%.2f, 429s ×%.2f, last success ×%.2f of obeying exactly, want ×0.1, ×0.5 and ×0.5 at most", cfg, rec.PeakX, rec.RejectedX, rec.TimeX)
		}
		if maxd.Peak != exact.Peak {
			t.Errorf("%v: max(d, full jitter) peaks at %.1f, want obeying exactly's %.1f: it does not spread the first return", cfg, maxd.Peak, exact.Peak)
		}
		if ignore.Rejected <= rec.Rejected {
			t.Errorf("%v: ignoring the header wastes %.0f calls, no more than the recommended spread's %.0f", cfg, ignore.Rejected, rec.Rejected)
		}
	}
}

// TestSimulateRADeterministic: the same seed gives the same outcome, and
// every client succeeds once.
func TestSimulateRADeterministic(t *testing.T) {
	cfg := RAConfig{N: 50, Capacity: 20, Burst: 2, Date: true, Delay: time.Second, Maintenance: 2 * time.Second}
	for _, st := range RAStrategies {
		a, b := SimulateRA(cfg, st, 7, 3), SimulateRA(cfg, st, 7, 3)
		if a != b {
			t.Errorf("%s: two runs of one trial differ: %+v, %+v", st.Name, a, b)
		}
		if a.Completion < cfg.Maintenance || a.Rejected < cfg.N {
			t.Errorf("%s: %+v: want every client turned away during maintenance, and done after it", st.Name, a)
		}
	}
	// Arrivals: one success per client, and every 429 was a request too.
	arrivals := RAArrivals(cfg, RAStrategies[0], 7, 3)
	if o := SimulateRA(cfg, RAStrategies[0], 7, 3); len(arrivals) != cfg.N+o.Rejected {
		t.Errorf("%d arrivals, want %d successes + %d 429s", len(arrivals), cfg.N, o.Rejected)
	}
}

// TestRetryAfterSVGUpToDate fails when the committed picture is not what
// `go run ./cmd/herd -retry-after` writes now.
func TestRetryAfterSVGUpToDate(t *testing.T) {
	want := RASVG(RAPicture, RAPictureCaption, RAPictured(), herdSeed, RAPictureSpan)
	got, err := os.ReadFile("../docs/retry-after.svg")
	if err != nil {
		t.Fatalf("%v: regenerate it with `go run ./cmd/herd -retry-after`", err)
	}
	if string(got) != want {
		t.Fatal("../docs/retry-after.svg is stale: regenerate it with `go run ./cmd/herd -retry-after`")
	}
}

// TestCapOrdering checks what the scale tables publish, on a reduced run at
// N = 1,000: with the model's 2s cap, equal jitter does less work than full
// jitter (the published ordering turns over at scale); with a cap of
// N × SuccessTime the two do the same work within 3%, and full jitter's is
// at least a fifth less than with 2s; full jitter lets the last client
// through before equal jitter with either cap.
func TestCapOrdering(t *testing.T) {
	const n, trials = 1000, 8
	small := capped(n, HerdCap, false, trials, herdSeed)
	grown := capped(n, n*SuccessTime, false, trials, herdSeed)
	t.Logf("cap %v: full work %.0f, equal ×%.2f; cap %v: full work %.0f, equal ×%.2f", HerdCap, small["full"].Work, small["equal"].WorkVsFull, n*SuccessTime, grown["full"].Work, grown["equal"].WorkVsFull)
	if small["equal"].WorkVsFull >= 0.95 {
		t.Errorf("cap %v: equal jitter's work is ×%.2f of full's, want clearly less at N=%d", HerdCap, small["equal"].WorkVsFull, n)
	}
	if x := grown["equal"].WorkVsFull; x < 0.97 || x > 1.03 {
		t.Errorf("cap %v: equal jitter's work is ×%.2f of full's, want within 3%%", n*SuccessTime, x)
	}
	if grown["full"].Work > 0.8*small["full"].Work {
		t.Errorf("full jitter's work: %.0f with cap %v, %.0f with %v; want a fifth less with the larger cap", grown["full"].Work, n*SuccessTime, small["full"].Work, HerdCap)
	}
	for _, m := range []map[string]Summary{small, grown} {
		if m["equal"].TimeVsFull <= 1 {
			t.Errorf("equal jitter's last success is ×%.2f of full's, want later", m["equal"].TimeVsFull)
		}
	}
}
