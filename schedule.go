package backoff

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"
	"time"
)

// Schedule hands out the waits of one retry sequence, one [Schedule.Next]
// call per failure, and says when to give up. The zero Schedule is usable:
// it waits nothing, forever. A Schedule is not safe for concurrent use: use
// one per retry sequence, or guard it; the [Value] it wraps is.
//
// Set the exported fields before the first Next; Reset keeps them.
type Schedule struct {
	// Curve gives the waits. With JitterDecorrelated, Schedule runs the real
	// decorrelated loop: each wait is drawn from the one it handed out before.
	Curve Value
	// MaxRetries, when above zero, is how many waits Next hands out before
	// it reports false.
	MaxRetries int
	// MaxElapsed, when above zero, bounds the sum of the waits: Next reports
	// false rather than hand out a wait that takes the total past it.
	MaxElapsed time.Duration
	// Rand, when set, is the only source of randomness, so the whole
	// sequence is reproducible from its seed. Nil uses math/rand/v2's
	// package-level source.
	Rand *rand.Rand

	attempt             int           // waits handed out since Reset
	step                int           // curve steps taken: computed waits only
	elapsed             time.Duration // sum of the waits handed out, saturating
	previous            time.Duration // the last computed wait, for JitterDecorrelated
	override            time.Duration // the next wait, when overridden is set
	overridden, stopped bool
}

// Next returns the wait before the next attempt and true, and advances the
// sequence; the first call gives the curve's wait for attempt 1. It returns
// 0, false when the sequence is over: MaxRetries waits were handed out, or
// the next wait would take Elapsed past MaxElapsed (the caller gives up now
// rather than sleep before an attempt that could not follow). Once it
// reports false it keeps reporting false until Reset. The wait is never
// negative and never above Curve.MaxDelay, unless set by Override.
func (s *Schedule) Next() (time.Duration, bool) {
	if s.stopped || (s.MaxRetries > 0 && s.attempt >= s.MaxRetries) {
		s.stopped = true
		return 0, false
	}
	var d time.Duration
	switch {
	case s.overridden:
		d = s.override
	case s.Rand == nil && s.Curve.JitterMode != JitterDecorrelated:
		v := &s.Curve
		if g, ok := doubled(v.BaseDelay, v.MaxDelay, v.Multiplier, s.step+1); ok && v.JitterMode == JitterFull {
			n := uint64(g) + 1 // Delay's hot path, by hand: between(0, g)
			x, frac := bits.Mul64(rand.Uint64(), n)
			if frac < n {
				x = reject(n, x, frac)
			}
			d = time.Duration(x)
		} else {
			d = v.Delay(s.step + 1)
		}
	default:
		d = s.draw()
	}
	total := maxDuration
	if d <= maxDuration-s.elapsed {
		total = s.elapsed + d
	}
	if s.MaxElapsed > 0 && total > s.MaxElapsed {
		s.stopped = true
		return 0, false
	}
	if s.overridden {
		s.overridden = false
	} else {
		s.step = min(s.step+1, math.MaxInt-1)
		s.previous = d
	}
	s.attempt = min(s.attempt+1, math.MaxInt)
	s.elapsed = total
	return d, true
}

// draw is the curve's next wait from s.Rand, or the decorrelated step from
// the previous wait; Next's common case calls Delay instead.
func (s *Schedule) draw() time.Duration {
	v := &s.Curve
	if v.JitterMode == JitterDecorrelated {
		lo, hi := decorrelateRange(v.BaseDelay, v.MaxDelay, s.previous)
		return uniform(s.Rand, lo, hi)
	}
	lo, hi := v.Bounds(s.step + 1)
	return uniform(s.Rand, lo, hi)
}

// Override makes the next wait d instead of a computed one: a server's
// Retry-After, a broker's backpressure signal. A d below zero is read as 0.
// MaxRetries and MaxElapsed still apply, so a huge Retry-After ends the
// sequence instead of holding the caller's goroutine. The curve does not
// advance: the computed wait after it is the one the curve would have given
// without the override, and JitterDecorrelated's previous wait is unchanged.
// A second Override before Next replaces the first.
func (s *Schedule) Override(d time.Duration) {
	s.override = max(d, 0)
	s.overridden = true
}

// Attempt returns how many waits Next has handed out since the last Reset,
// overridden ones included.
func (s *Schedule) Attempt() int { return s.attempt }

// Elapsed returns the sum of the waits Next has handed out since the last
// Reset, saturating at math.MaxInt64 instead of wrapping.
func (s *Schedule) Elapsed() time.Duration { return s.elapsed }

// Reset starts the sequence over, as after a success: the next wait is the
// curve's first again. It keeps the configuration (Curve, MaxRetries,
// MaxElapsed, Rand) and drops a pending Override.
func (s *Schedule) Reset() {
	s.attempt, s.step, s.elapsed, s.previous = 0, 0, 0, 0
	s.override, s.overridden, s.stopped = 0, false, false
}

// The HTTP-date forms of RFC 9110 §5.6.7, as net/http's TimeFormat,
// time.RFC850 and time.ANSIC spell them, with the zone fixed to GMT.
const (
	imfFixdate = "Mon, 02 Jan 2006 15:04:05 GMT"
	rfc850Date = "Monday, 02-Jan-06 15:04:05 GMT"
	asctime    = "Mon Jan _2 15:04:05 2006"
)

// ParseRetryAfter reads the value of an HTTP Retry-After header (RFC 9110
// §10.2.3) and returns the wait it asks for and true. The value is either
// delay-seconds, one or more ASCII digits (a number of seconds too large
// for a Duration gives math.MaxInt64 instead of wrapping), or an HTTP-date
// (IMF-fixdate, or the obsolete RFC 850 and asctime forms), measured from
// now; a date at or before now gives 0, true. Surrounding whitespace is
// ignored. Anything else (empty, a sign, a fraction, junk) gives 0, false.
//
// Pass the result to [Schedule.Override], perhaps widened by [AddJitter] so
// that every client told the same date does not return at the same instant.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	if d, ok := parseSeconds(value); ok {
		return d, true
	}
	if strings.IndexByte(value, '.') >= 0 {
		return 0, false // time.Parse would accept fractional seconds
	}
	// The comma tells the three forms apart, so one parse is tried, and a
	// failed one (which allocates its error) is never tried first.
	layout := asctime // "Sun Nov  6 08:49:37 1994"
	switch strings.IndexByte(value, ',') {
	case -1:
	case 3:
		layout = imfFixdate // "Sun, 06 Nov 1994 08:49:37 GMT"
	default:
		layout = rfc850Date // "Sunday, 06-Nov-94 08:49:37 GMT"
	}
	t, err := time.Parse(layout, value)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// parseSeconds reads 1*DIGIT as seconds, saturating at math.MaxInt64 ns.
func parseSeconds(s string) (time.Duration, bool) {
	const maxSeconds = uint64(maxDuration / time.Second)
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n <= maxSeconds {
			n = n*10 + uint64(c-'0')
		}
	}
	if n > maxSeconds {
		return maxDuration, true
	}
	return time.Duration(n) * time.Second, true
}
