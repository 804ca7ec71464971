package httpretry

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestBuckets: every duration falls in the bucket whose bounds hold it,
// the buckets tile [0, 2^40ns) without gap or overlap, and are at most an
// eighth of their low end wide.
func TestBuckets(t *testing.T) {
	for i := range buckets {
		lo, hi := bounds(i)
		if i > 0 {
			if _, prevHi := bounds(i - 1); prevHi != lo {
				t.Fatalf("bounds(%d) = [%v, %v), bounds(%d) ends at %v: a gap or an overlap", i, lo, hi, i-1, prevHi)
			}
		}
		if i >= 8 && float64(hi-lo) > float64(lo)/8 {
			t.Errorf("bounds(%d) = [%v, %v): wider than an eighth of its low end", i, lo, hi)
		}
		for _, d := range []time.Duration{lo, (lo + hi) / 2, hi - 1} {
			if got := bucket(d); got != i {
				t.Errorf("bucket(%v) = %d, want %d (bounds [%v, %v))", d, got, i, lo, hi)
			}
		}
	}
	if _, hi := bounds(buckets - 1); hi != 1<<40 {
		t.Errorf("the top bucket ends at %v, want 2^40ns", hi)
	}
	for _, d := range []time.Duration{1 << 40, math.MaxInt64, -1, math.MinInt64} {
		want := buckets
		if d < 0 {
			want = 0
		}
		if got := bucket(d); got != want {
			t.Errorf("bucket(%v) = %d, want %d", d, got, want)
		}
	}
}

// feed adds n samples drawn by draw, one every gap, from t0, and returns
// the time after the last.
func feed(l *latency, n int, draw func() time.Duration, t0 time.Time, gap time.Duration) time.Time {
	for range n {
		l.add(draw(), false, t0, 0.05)
		t0 = t0.Add(gap)
	}
	return t0
}

// exactQuantile is the q quantile of a sample, sorted.
func exactQuantile(xs []time.Duration, q float64) time.Duration {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// TestLatencyQuantile: on stationary distributions (an exponential, a
// uniform, a two-mode mix whose 95th percentile lies in the slow mode,
// which a mean plus deviations gets wrong), the estimate lies within
// 0.85–1.15 of the exact 95th percentile of the same draws, and the share
// of draws above it within 0.03–0.07, inside the contract's 0.7–1.4× and
// a factor of 2; the uniform, whose 95th percentile lies a twentieth of
// its width below its top, is the hardest. Draws are seeded.
func TestLatencyQuantile(t *testing.T) {
	for _, tt := range []struct {
		name string
		draw func(r *rand.Rand) time.Duration
	}{
		{"exponential, mean 10ms", func(r *rand.Rand) time.Duration { return time.Duration(r.ExpFloat64() * 10e6) }},
		{"uniform 2–10ms", func(r *rand.Rand) time.Duration { return 2*time.Millisecond + time.Duration(r.Int64N(8e6)) }},
		{"90% near 5ms, 10% near 200ms", func(r *rand.Rand) time.Duration {
			if r.Float64() < 0.9 {
				return time.Duration(4e6 + r.Int64N(2e6))
			}
			return time.Duration(150e6 + r.Int64N(100e6))
		}},
		{"lognormal, median 20ms", func(r *rand.Rand) time.Duration { return time.Duration(20e6 * math.Exp(r.NormFloat64())) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var l latency
			t0 := feed(&l, 2000, func() time.Duration { return tt.draw(r) }, time.Unix(0, 0), time.Millisecond)
			var recent []time.Duration // the last 500, the window the weights mostly cover
			above := 0
			for range 4000 {
				d := tt.draw(r)
				est := l.estimate()
				if d > est {
					above++
				}
				l.add(d, false, t0, 0.05)
				t0 = t0.Add(time.Millisecond)
				recent = append(recent, d)
			}
			exact := exactQuantile(recent, 0.95)
			est := l.estimate()
			t.Logf("estimate %v, exact %v (×%.3f); %.4f of draws above it", est, exact, float64(est)/float64(exact), float64(above)/4000)
			if ratio := float64(est) / float64(exact); ratio < 0.85 || ratio > 1.15 {
				t.Errorf("estimate %v, exact 95th percentile %v: ratio %.3f, want 0.85–1.15", est, exact, ratio)
			}
			if share := float64(above) / 4000; share < 0.03 || share > 0.07 {
				t.Errorf("%.4f of draws above the estimate, want 0.03–0.07", share)
			}
		})
	}
}

// TestLatencyShift: after the host's latency rises or falls fourfold, the
// estimate follows within 2,000 samples; and with a sample every 10
// seconds, within 5 minutes of them.
func TestLatencyShift(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	exp := func(mean float64) func() time.Duration {
		return func() time.Duration { return time.Duration(r.ExpFloat64() * mean) }
	}
	want := func(mean float64) time.Duration { return time.Duration(-math.Log(0.05) * mean) } // an exponential's 95th percentile
	near := func(got, want time.Duration) bool {
		ratio := float64(got) / float64(want)
		return ratio > 0.8 && ratio < 1.25
	}
	for _, tt := range []struct{ from, to float64 }{{10e6, 40e6}, {40e6, 10e6}} {
		var l latency
		t0 := feed(&l, 3000, exp(tt.from), time.Unix(0, 0), time.Millisecond)
		if !near(l.estimate(), want(tt.from)) {
			t.Fatalf("before the shift: %v, want about %v", l.estimate(), want(tt.from))
		}
		feed(&l, 2000, exp(tt.to), t0, time.Millisecond)
		if !near(l.estimate(), want(tt.to)) {
			t.Errorf("2,000 samples after a shift from %v to %v mean: %v, want about %v", time.Duration(tt.from), time.Duration(tt.to), l.estimate(), want(tt.to))
		}
	}
	// Slowly: 3,000 samples a millisecond apart, then one every 10 seconds
	// for 5 minutes (30 samples), ten times as fast: the old ones have
	// faded below what those weigh.
	var l latency
	t0 := feed(&l, 3000, exp(40e6), time.Unix(0, 0), time.Millisecond)
	for range 30 {
		t0 = t0.Add(10 * time.Second)
		l.add(exp(4e6)(), false, t0, 0.05)
	}
	if got := l.quantile(0.05); got >= want(40e6)/2 {
		t.Errorf("5 minutes after a tenfold fall: %v, want well below the old %v", got, want(40e6))
	}
}

// TestLatencyNeedsSamples: no estimate until the weight of 40 samples (two
// above the 95th percentile), which, recomputed every 8, shows from the
// 48th; and none after a long idle spell.
func TestLatencyNeedsSamples(t *testing.T) {
	var l latency
	t0 := time.Unix(0, 0)
	for i := range 100 {
		if est := l.estimate(); (i < 40 && est != 0) || (i >= 48 && est == 0) {
			t.Fatalf("after %d samples: estimate %v; want none before 40, one from 48", i, est)
		}
		l.add(5*time.Millisecond, false, t0, 0.05)
		t0 = t0.Add(time.Millisecond)
	}
	t0 = t0.Add(time.Hour)
	l.add(5*time.Millisecond, false, t0, 0.05)
	if l.total/l.weight > 2 || l.estimate() != 0 {
		t.Fatalf("after an hour's idle: %v samples by weight, estimate %v; want a fresh start", l.total/l.weight, l.estimate())
	}
	if n := needSamples(0.001); n != 50 {
		t.Errorf("needSamples(0.001) = %v, want the most, 50: what a host sent one request a second has by its 76th", n)
	}
	if n := needSamples(0.5); n != 20 {
		t.Errorf("needSamples(0.5) = %v, want the least, 20", n)
	}
}

// TestLatencyCut: a time cut off before its headers counts as longer than
// it ran, never as longer than everything: a tenth of the times cut off
// at 5ms, among answers at 5ms, leave an estimate of about 5ms (within
// its bucket), where counting them past the top never hedged at all; and
// with every time cut off, no answer is known, and none is hedged.
func TestLatencyCut(t *testing.T) {
	var l latency
	t0 := time.Unix(0, 0)
	for i := range 1000 {
		l.add(5*time.Millisecond, i%10 == 0, t0, 0.05)
		t0 = t0.Add(time.Millisecond)
	}
	if lo, hi := bounds(bucket(5 * time.Millisecond)); l.estimate() < lo || l.estimate() > hi {
		t.Fatalf("a tenth of times cut off at 5ms: estimate %v, want 5ms's bucket [%v, %v]", l.estimate(), lo, hi)
	}
	var all latency
	for range 100 {
		all.add(5*time.Millisecond, true, t0, 0.05)
		t0 = t0.Add(time.Millisecond)
	}
	if got := all.estimate(); got != maxDuration {
		t.Fatalf("every time cut off: estimate %v, want none finite", got)
	}
}

// TestLatencyCensored: the estimate sees through cut-off times, however
// many: times drawn from an exponential (mean 10ms, 95th percentile
// 29.96ms), of which a share is cut off at an independent time (an
// exponential of mean 15ms: most of them before their answer), give an
// estimate within 0.85–1.15 of the exact 95th percentile of the times
// themselves, with 0%, 30%, 60% and 90% of them so cut.
func TestLatencyCensored(t *testing.T) {
	want := time.Duration(-math.Log(0.05) * 10e6)
	for _, share := range []float64{0, 0.3, 0.6, 0.9} {
		r := rand.New(rand.NewPCG(5, uint64(100*share)))
		var l latency
		t0 := time.Unix(0, 0)
		var sum time.Duration
		const n = 20000
		for i := range n {
			d, cut := time.Duration(r.ExpFloat64()*10e6), false
			if r.Float64() < share {
				if c := time.Duration(r.ExpFloat64() * 15e6); c < d {
					d, cut = c, true
				}
			}
			l.add(d, cut, t0, 0.05)
			t0 = t0.Add(time.Millisecond)
			if i >= n/2 {
				sum += l.estimate()
			}
		}
		mean := sum / (n / 2)
		if ratio := float64(mean) / float64(want); ratio < 0.85 || ratio > 1.15 {
			t.Errorf("%.0f%% of times cut off: estimate %v on average, exact %v: ratio %.3f, want 0.85–1.15", 100*share, mean, want, ratio)
		}
	}
}

// TestLatencyHedgedStationary: a host hedged by its own estimate, every
// loser cut off when the winner answers, with copies timed out besides:
// the share of requests hedged stays within 2× ExtraLoad (and above half
// of it), and the delay within 0.7–1.4× of the exact quantile, for an
// exponential host, a host 4% of whose requests hang (cut at an attempt
// timeout of 250ms), and a host whose 2% of requests take 1.5s.
func TestLatencyHedgedStationary(t *testing.T) {
	for _, tt := range []struct {
		name  string
		draw  func(r *rand.Rand) time.Duration // an hour: a hang, cut at the timeout (maxDuration overflowed delay+second)
		exact time.Duration                    // the 95th percentile of the draws
	}{
		{"exponential, mean 10ms", func(r *rand.Rand) time.Duration { return time.Duration(r.ExpFloat64() * 10e6) }, 29957 * time.Microsecond},
		{"2ms+Exp(3ms), 4% hang", func(r *rand.Rand) time.Duration {
			if r.Float64() < 0.04 {
				return time.Hour
			}
			return 2*time.Millisecond + time.Duration(r.ExpFloat64()*3e6)
		}, 2*time.Millisecond + time.Duration(-math.Log(0.01/0.96)*3e6)},
		{"2ms+Exp(3ms), 2% at 1.5s", func(r *rand.Rand) time.Duration {
			if r.Float64() < 0.02 {
				return 1500 * time.Millisecond
			}
			return 2*time.Millisecond + time.Duration(r.ExpFloat64()*3e6)
		}, 2*time.Millisecond + time.Duration(-math.Log(0.03/0.98)*3e6)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 8))
			const timeout = 250 * time.Millisecond
			var l latency
			t0 := time.Unix(0, 0)
			hedged, n := 0, 30000
			var delays time.Duration
			for i := range n {
				first := tt.draw(r)
				delay := l.estimate()
				if delay == 0 || first <= delay { // answered, or timed out, unhedged
					if first > timeout {
						l.add(timeout, true, t0, 0.05)
					} else {
						l.add(first, false, t0, 0.05)
					}
				} else { // hedged at delay: the first to answer wins, the other is cut then
					second := tt.draw(r)
					end := min(first, delay+second, timeout)
					l.add(end, first > end, t0, 0.05)
					l.add(end-delay, delay+second > end, t0, 0.05)
					if i >= n/2 {
						hedged++
					}
				}
				if i >= n/2 {
					delays += delay
				}
				t0 = t0.Add(time.Millisecond)
			}
			share := float64(hedged) / float64(n/2)
			delay := delays / time.Duration(n/2)
			t.Logf("hedged %.4f, delay %v on average, exact %v", share, delay, tt.exact)
			if share < 0.025 || share > 0.1 {
				t.Errorf("%.4f of requests hedged, want within 2× of 0.05", share)
			}
			if ratio := float64(delay) / float64(tt.exact); ratio < 0.7 || ratio > 1.4 {
				t.Errorf("delay %v on average, exact 95th percentile %v: ratio %.3f, want 0.7–1.4", delay, tt.exact, ratio)
			}
		})
	}
}

// TestLatencyScales: the weights stay finite over a long run, at any pace.
func TestLatencyScales(t *testing.T) {
	var l latency
	t0 := time.Unix(0, 0)
	for i := range 200_000 {
		l.add(time.Duration(1+i%10)*time.Millisecond, false, t0, 0.05)
		t0 = t0.Add(time.Duration(i%3) * time.Millisecond)
	}
	if math.IsInf(float64(l.total), 0) || math.IsNaN(float64(l.total)) || l.estimate() < 9*time.Millisecond || l.estimate() > 11*time.Millisecond {
		t.Fatalf("after 200,000 samples: total %v, estimate %v; want finite, about 10ms", l.total, l.estimate())
	}
}

// TestLatencyFades: each sample weighs e^(1/500) times the one before it
// (fadeSamples), and e^(Δt/100s) more for the time Δt between them
// (fadeTime), so that what came 5 minutes before weighs e^-3 of what
// comes now, as the doc says: the numbers, not the constants, so that a
// change of either shows here.
func TestLatencyFades(t *testing.T) {
	var l latency
	t0 := time.Unix(0, 0)
	l.add(time.Millisecond, false, t0, 0.05)
	w0 := float64(l.weight)
	l.add(time.Millisecond, false, t0, 0.05)
	if got, want := float64(l.weight)/w0, math.Exp(1.0/500); math.Abs(got/want-1) > 1e-6 {
		t.Errorf("a sample in the same instant weighs %v times the one before, want e^(1/500) = %v", got, want)
	}
	w1 := float64(l.weight)
	l.add(time.Millisecond, false, t0.Add(5*time.Minute), 0.05)
	if got, want := float64(l.weight)/w1, math.Exp(1.0/500+3); math.Abs(got/want-1) > 1e-6 {
		t.Errorf("a sample 5 minutes later weighs %v times the one before, want e^(1/500 + 3) = %v", got, want)
	}
	w2 := float64(l.weight)
	l.add(time.Millisecond, false, t0.Add(10*time.Minute), 0.05)
	if got, want := float64(l.weight)/w2, math.Exp(1.0/500+3); math.Abs(got/want-1) > 1e-6 {
		t.Errorf("a sample 5 minutes after that weighs %v times the one before, want e^(1/500 + 3) = %v: the time is from the last sample", got, want)
	}
	l.add(time.Millisecond, false, t0.Add(10*time.Minute+time.Hour), 0.05) // an idle hour: a fresh start
	w3 := float64(l.weight)
	l.add(time.Millisecond, false, t0.Add(15*time.Minute+time.Hour), 0.05)
	if got, want := float64(l.weight)/w3, math.Exp(1.0/500+3); math.Abs(got/want-1) > 1e-6 {
		t.Errorf("5 minutes after a fresh start, a sample weighs %v times the one before, want e^(1/500 + 3) = %v", got, want)
	}
}

// TestLatencyIdleForgets: after an idle spell, what came before counts for
// nothing: times all in one bucket put the 95th percentile exactly where
// linear interpolation within it says, whatever was there before.
func TestLatencyIdleForgets(t *testing.T) {
	var l latency
	t0 := time.Unix(0, 0)
	for i := range 1000 {
		l.add(time.Duration(1+i%50)*time.Second, i%4 == 0, t0, 0.05) // slow, and a quarter cut
		t0 = t0.Add(time.Millisecond)
	}
	t0 = t0.Add(time.Hour)
	for range 300 {
		l.add(time.Millisecond, false, t0, 0.05)
	}
	i := bucket(time.Millisecond)
	lo, hi := bounds(i)
	want := hi - time.Duration(0.05*float64(hi-lo))
	if got := l.quantile(0.05); got < want-time.Nanosecond || got > want+time.Nanosecond {
		t.Fatalf("300 times of 1ms after an idle hour: 95th percentile %v, want %v, a twentieth of [%v, %v) below its top", got, want, lo, hi)
	}
}

// TestLatencyRecomputed: the estimate is recomputed every 8 samples
// (recompute), never later, and not on each.
func TestLatencyRecomputed(t *testing.T) {
	var l latency
	var last time.Duration
	t0 := time.Unix(0, 0)
	for i := range 600 {
		l.add(time.Duration(1+i)*100*time.Microsecond, false, t0, 0.05) // each sample moves the quantile
		t0 = t0.Add(time.Millisecond)
		if (i+1)%8 == 0 {
			if got, want := l.estimate(), l.quantile(0.05); got != want {
				t.Fatalf("after %d samples: estimate %v, quantile %v; want it recomputed every 8", i+1, got, want)
			}
			last = l.estimate()
		} else if got := l.estimate(); got != last {
			t.Fatalf("after %d samples: estimate %v, %v after sample %d; want it computed every 8 samples, not on each", i+1, got, last, i/8*8)
		}
	}
	if l.estimate() == 0 {
		t.Fatalf("after 600 samples: no estimate")
	}
}

// TestLatencyAllInstant: a host whose every time to headers is 0 (in
// memory, or in virtual time) has an estimate, the least delay there is,
// 1ns, for an ExtraLoad of 1: never 0, which would say too few samples.
func TestLatencyAllInstant(t *testing.T) {
	var l latency
	t0 := time.Unix(0, 0)
	for range 200 {
		l.add(0, false, t0, 1)
		t0 = t0.Add(time.Millisecond)
	}
	if got := l.estimate(); got != 1 {
		t.Fatalf("200 times of 0, ExtraLoad 1: estimate %v, want 1ns", got)
	}
}

// TestLatencyIdleThreshold: an idle spell resets the estimate once the
// history it follows weighs e^-30 of the next sample (30 fade times,
// counting the sample's own 1/fadeSamples): at that, the history is
// dropped; a second short of it, the history is kept, faded.
func TestLatencyIdleThreshold(t *testing.T) {
	for _, tt := range []struct {
		idle time.Duration
		kept bool
	}{
		{30*fadeTime - fadeTime/fadeSamples - time.Second, true},
		{30*fadeTime - fadeTime/fadeSamples, false}, // 2999.8s: grow is 30 exactly
		{30*fadeTime + time.Second, false},
	} {
		var l latency
		t0 := feed(&l, 300, func() time.Duration { return time.Second }, time.Unix(0, 0), time.Millisecond)
		l.add(time.Millisecond, false, t0.Add(tt.idle-time.Millisecond), 0.05) // feed returns a gap after the last
		if kept := l.counts[bucket(time.Second)] > 0; kept != tt.kept {
			t.Errorf("after an idle %v: the history kept %v, want %v", tt.idle, kept, tt.kept)
		}
		if est := l.estimate(); (est != 0) != tt.kept {
			t.Errorf("after an idle %v: estimate %v; want one only while the history is kept", tt.idle, est)
		}
	}
}

// TestLatencyScalesAcrossIdle: weights stay finite when a long idle spell,
// short of a reset, follows weights grown large by time: the rescale
// judges the weight the next sample will have.
func TestLatencyScalesAcrossIdle(t *testing.T) {
	var l latency
	t0 := time.Unix(0, 0)
	for l.weight < 1e27 { // each 100s after the last: e^1 heavier each
		l.add(time.Millisecond, false, t0, 0.05)
		t0 = t0.Add(fadeTime)
	}
	t0 = t0.Add(28 * fadeTime) // 29 fade times after the last: e^29 more, short of a reset
	l.add(time.Millisecond, false, t0, 0.05)
	if w := float64(l.weight); math.IsInf(w, 0) || math.IsNaN(w) || w > 1e31 || math.IsInf(float64(l.total), 0) {
		t.Fatalf("after samples 100s apart to a weight of 1e27 and an idle 2900s: weight %v, total %v; want finite, at most 1e31", l.weight, l.total)
	}
}

// TestLatencyTopBucket: times in the top bucket, just under 2^40ns (about
// 18 minutes), are estimated there, not below it.
func TestLatencyTopBucket(t *testing.T) {
	var l latency
	lo, hi := bounds(buckets - 1)
	feed(&l, 300, func() time.Duration { return lo + 1 }, time.Unix(0, 0), time.Millisecond)
	if est := l.estimate(); est < lo || est >= hi {
		t.Fatalf("300 times of %v: estimate %v, want it in the top bucket [%v, %v)", lo+1, est, lo, hi)
	}
}

// TestLatencyAllLoad: an ExtraLoad of 1 hedges after the least time seen:
// for times all of 5ms, the low end of 5ms's bucket, not 1ns.
func TestLatencyAllLoad(t *testing.T) {
	var l latency
	t0 := time.Unix(0, 0)
	for range 200 {
		l.add(5*time.Millisecond, false, t0, 1)
		t0 = t0.Add(time.Millisecond)
	}
	if lo, _ := bounds(bucket(5 * time.Millisecond)); l.estimate() != lo {
		t.Fatalf("200 times of 5ms, ExtraLoad 1: estimate %v, want %v", l.estimate(), lo)
	}
}

// TestHedgeShare: ExtraLoad as the doc says: zero or less, or NaN, 0.05;
// above 1, 1; else itself.
func TestHedgeShare(t *testing.T) {
	for _, tt := range []struct{ extra, want float64 }{
		{0, 0.05}, {-1, 0.05}, {math.NaN(), 0.05}, {0.001, 0.001}, {0.1, 0.1}, {1, 1}, {1.5, 1}, {2, 1}, {math.Inf(1), 1},
	} {
		if got := (&Hedge{ExtraLoad: tt.extra}).share(); got != tt.want {
			t.Errorf("ExtraLoad %v: share %v, want %v", tt.extra, got, tt.want)
		}
	}
}

// TestLatencyAllLoadVaried: an ExtraLoad of 1 hedges after the least time
// seen, whatever the times: the weights of the buckets, added from the top
// in float32, can fall short of the total added in time order, and that
// shortfall must not turn the estimate into 1ns. (It did, for 865 of 2,000
// seeds of this draw.) The least time may be the one sample in its bucket,
// weighing 1 after a fresh start, or 0, whose estimate is the floor, 1ns.
func TestLatencyAllLoadVaried(t *testing.T) {
	for _, first := range []time.Duration{-1, 500 * time.Microsecond, 0} { // -1: none of its own
		for seed := range uint64(20) {
			r := rand.New(rand.NewPCG(seed, 7))
			var l latency
			t0 := time.Unix(0, 0)
			least := time.Duration(math.MaxInt64)
			if first >= 0 {
				l.add(time.Second, false, t0, 1)
				t0 = t0.Add(time.Hour) // idle: a fresh start, whose first sample weighs 1
				l.add(first, false, t0, 1)
				least = first
			}
			for range 300 {
				d := time.Duration(1e6 + r.Int64N(50e6))
				least = min(least, d)
				l.add(d, false, t0, 1)
				t0 = t0.Add(time.Duration(r.Int64N(1e9)))
			}
			lo, hi := bounds(bucket(least))
			if q := l.quantile(1); q < max(lo, 1) || q >= max(hi, 2) {
				t.Errorf("seed %d, first %v: ExtraLoad 1, times from 1ms: estimate %v, want it in the least time's (%v) bucket [%v, %v), at least 1ns", seed, first, q, least, lo, hi)
			}
		}
	}
}
