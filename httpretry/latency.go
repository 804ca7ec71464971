package httpretry

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// latency estimates a high quantile of one host's times to headers, in
// bounded memory: a histogram on a log scale, eight buckets an octave from
// 8ns to 2^40ns (about 18 minutes), with one a nanosecond below, and one
// above, in which each sample weighs more than the one before, so that
// older samples fade. A sample weighs e^(1/fadeSamples) times the one
// before it, and e^(Δt/fadeTime) for the time Δt between them: the
// estimate follows a shift within about 1,500 samples or 5 minutes,
// whichever comes first.
//
// A time that was cut off before its headers (a copy that timed out, or
// lost to another) is known only to be longer than the time it ran: it is
// counted as that, censored, and the quantile is the Kaplan–Meier
// estimator's over the buckets, which gives each cut-off time's weight to
// the times seen beyond it, in proportion. So copies cut off make the
// estimate neither shorter nor longer than the host is, however many
// there are; hedging, which cuts the losers, does not switch itself off.
// Within a bucket the survival is interpolated linearly.
type latency struct {
	mu     sync.Mutex
	counts [buckets + 1]float32 // times to headers, by bucket; the last, past the top
	cut    [buckets + 1]float32 // times cut off, by bucket
	total  float32              // the sum of counts and cut
	weight float32              // what the next sample weighs
	last   time.Time            // the last sample
	fresh  int                  // samples since the quantile was last computed
	delay  atomic.Int64
}

const (
	buckets     = 8 * 38 // 0–7ns one a nanosecond, then eight an octave to 2^40ns
	fadeSamples = 500
	fadeTime    = 100 * time.Second // e^-3: 5% left after 5 minutes
	recompute   = 8                 // samples between computations of the quantile
)

// bucket returns the bucket d falls in, or buckets when it is past the
// top: the octave from bits.Len64, and the three bits after the leading
// one.
func bucket(d time.Duration) int {
	if d < 8 {
		return int(max(d, 0))
	}
	o := bits.Len64(uint64(d)) - 1 // 2^o ≤ d < 2^(o+1)
	i := 8*(o-2) + int(d>>(o-3))&7
	return min(i, buckets)
}

// bounds returns the interval [lo, hi) of bucket i.
func bounds(i int) (lo, hi time.Duration) {
	if i < 8 {
		return time.Duration(i), time.Duration(i + 1)
	}
	o := i/8 + 2
	w := time.Duration(1) << (o - 3)
	lo = time.Duration(1)<<o + time.Duration(i%8)*w
	return lo, lo + w
}

// add counts one time to headers, seen at now; cut says it was cut off
// before them and lasted at least d.
func (l *latency) add(d time.Duration, cut bool, now time.Time, share float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.weight == 0 {
		l.weight, l.last = 1, now
	}
	grow := 1.0 / fadeSamples
	if dt := now.Sub(l.last); dt > 0 {
		grow += float64(dt) / float64(fadeTime)
		l.last = now
	}
	switch g := math.Exp(grow); {
	case grow >= 30: // an idle spell: what came before weighs less than 1e-13 of what follows
		l.counts, l.cut, l.total, l.weight = [buckets + 1]float32{}, [buckets + 1]float32{}, 0, 1
		l.delay.Store(0)
	case float64(l.weight)*g > 1e30: // float32 ends at 3e38: scale every weight down together
		l.scale(1e-30)
		fallthrough
	default:
		l.weight *= float32(g)
	}
	if i := bucket(d); cut {
		l.cut[i] += l.weight
	} else {
		l.counts[i] += l.weight
	}
	l.total += l.weight
	if l.fresh++; l.fresh >= recompute {
		l.fresh = 0
		l.delay.Store(int64(l.quantile(share)))
	}
}

func (l *latency) scale(f float32) {
	for i := range l.counts {
		l.counts[i] *= f
		l.cut[i] *= f
	}
	l.total *= f
	l.weight *= f
}

// quantile returns the hedge delay for share: the time that share of the
// host's times to headers lies above, by the Kaplan–Meier estimate of
// their distribution; or, at a knee, the time 1.5 × share lies above,
// when that is less than half as long: a delay twice as long that hedges
// no fewer than two thirds as many is not worth its wait, and where the
// times run flat at about share (a host whose few slow requests are very
// slow), the quantile swings between the knee and the far end of the
// flat with every few samples. When more than share of the weight lies
// beyond every time an answer took (cut off, all of it: it is not known
// how long it would have taken), it returns the knee of that floor, the
// time 1.5 × the floor lies above: waiting longer would hedge no fewer
// than two thirds as many. It returns 0 when there are too few samples to
// trust: fewer than needSamples(share), counted by weight.
func (l *latency) quantile(share float64) time.Duration {
	if float64(l.total/l.weight) < needSamples(share) {
		return 0
	}
	q, floor := l.above(share)
	if floor > share { // no crossing: the knee of the floor
		if floor >= 1 {
			return maxDuration // no answer at all: never hedge
		}
		q, _ = l.above(min(kneeShare*floor, 1))
		return q
	}
	if knee, _ := l.above(min(kneeShare*share, 1)); q > 2*knee {
		return knee
	}
	return q
}

// kneeShare is how much more than ExtraLoad (or the floor) a delay at a
// knee may hedge.
const kneeShare = 1.5

// above returns the time that share of the weight lies above, by the
// Kaplan–Meier estimate, and the survival it reached: share or less,
// or, when more than share lies beyond the longest time an answer took,
// the survival past it, the floor (with maxDuration: 1 when no answer
// was seen).
func (l *latency) above(share float64) (time.Duration, float64) {
	risk, surv := float64(l.total), 1.0
	for i := range l.counts {
		if risk <= 0 {
			break
		}
		if d := float64(l.counts[i]); d > 0 {
			next := surv * max(1-d/risk, 0)
			if next <= share {
				if i == buckets {
					return maxDuration, next
				}
				lo, hi := bounds(i)
				frac := (surv - share) / (surv - next) // of the bucket, from its bottom
				return max(lo+time.Duration(frac*float64(hi-lo)), 1), next
			}
			surv = next
		}
		risk -= float64(l.counts[i] + l.cut[i])
	}
	return maxDuration, surv
}

// estimate returns the hedge delay for the host: the quantile, or 0 when
// it has too few samples.
func (l *latency) estimate() time.Duration { return time.Duration(l.delay.Load()) }

// needSamples is how many samples, by weight, a quantile needs before it
// is trusted: two above it, at least 20 and at most 50 (40 for the
// default share), so that a host sent one request a second is hedged
// from about its 55th request (its 76th at 50, for a share under 0.04):
// the weights fade, and at that pace add up to 59 by the 100th, and to
// 84 at most, so that a bound of 100 was never met.
func needSamples(share float64) float64 { return min(max(2/share, 20), 50) }

const maxDuration = time.Duration(math.MaxInt64)
