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
// above, in which each sample
// weighs more than the one before, so that older samples fade. A sample
// weighs e^(1/fadeSamples) times the one before it, and e^(Δt/fadeTime)
// for the time Δt between them: the estimate follows a shift within
// about 1,500 samples or 5 minutes, whichever comes first. A time that was
// cut off before its headers (a copy that timed out, or that lost to a
// hedge after the hedge delay) is counted above every bucket: it is known
// only to be long. Within a bucket the quantile is interpolated linearly.
type latency struct {
	mu     sync.Mutex
	counts [buckets]float32
	above  float32   // past the top bucket, or cut off
	total  float32   // the sum of counts and above
	weight float32   // what the next sample weighs
	last   time.Time // the last sample
	fresh  int       // samples since the quantile was last computed
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
		l.counts, l.above, l.total, l.weight = [buckets]float32{}, 0, 0, 1
		l.delay.Store(0)
	case float64(l.weight)*g > 1e30: // float32 ends at 3e38: scale every weight down together
		l.scale(1e-30)
		fallthrough
	default:
		l.weight *= float32(g)
	}
	if i := bucket(d); cut || i == buckets {
		l.above += l.weight
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
	}
	l.above *= f
	l.total *= f
	l.weight *= f
}

// quantile returns the time that a share of the samples' weight lies
// above, or 0 when there are too few samples to trust: fewer than
// needSamples(share), counted by weight.
func (l *latency) quantile(share float64) time.Duration {
	if float64(l.total/l.weight) < needSamples(share) {
		return 0
	}
	want := float32(share) * l.total
	cum := l.above
	if cum >= want {
		return maxDuration // most of it is past the top: never hedge
	}
	for i := buckets - 1; i >= 0; i-- {
		c := l.counts[i]
		if cum+c < want {
			cum += c
			continue
		}
		lo, hi := bounds(i)
		frac := float64((want - cum) / c) // of the bucket, from its top
		return max(hi-time.Duration(frac*float64(hi-lo)), 1)
	}
	// The buckets, added in this order in float32, fell short of a want of
	// (nearly) the whole total: a share of 1, whose quantile is the least
	// time seen, the low end of the lowest bucket with any weight.
	for i, c := range l.counts {
		if c > 0 {
			lo, _ := bounds(i)
			return max(lo, 1)
		}
	}
	return 1
}

// estimate returns the hedge delay for the host: the quantile, or 0 when
// it has too few samples.
func (l *latency) estimate() time.Duration { return time.Duration(l.delay.Load()) }

// needSamples is how many samples, by weight, a quantile needs before it
// is trusted: ten above it, at least 100 and at most 400 (the weights of
// fadeSamples samples add up to about 500).
func needSamples(share float64) float64 { return min(max(10/share, 100), 400) }

const maxDuration = time.Duration(math.MaxInt64)
