package benchmarks

import (
	"os"
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
