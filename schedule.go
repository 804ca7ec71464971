package backoff

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Schedule hands out the waits of one retry sequence, one [Schedule.Next]
// call per failure, and says when to give up. It is not safe for concurrent
// use: use one per retry sequence, or guard it; the [Value] it wraps is.
//
// The zero Schedule is usable, and waits nothing, forever: used as is, it
// is a tight loop against whatever is failing. Set Curve.BaseDelay to make
// it wait, and MaxRetries, MaxElapsed or Deadline to make it give up; each
// limit left at zero or less is no limit.
//
// Set the exported fields before the first Next; Reset keeps them. Copying
// a Schedule copies its state: copy a template before its first Next to
// hand each sequence its own. Copies share one Rand, and a [rand.Rand] is
// not safe for concurrent use: give each copy that runs in its own
// goroutine its own Rand, or leave Rand nil.
type Schedule struct {
	// Curve gives the waits. With JitterDecorrelated, Schedule runs the real
	// decorrelated loop: each wait is drawn from the one it handed out
	// before, up to 3× it, and Curve.Multiplier is not read.
	Curve Value
	// MaxRetries, when above zero, is how many waits Next hands out before
	// it reports false. Zero or less is no limit.
	MaxRetries int
	// MaxElapsed, when above zero, bounds the sum of the waits: Next reports
	// false rather than hand out a wait that takes the total past it. It
	// counts waiting only, not the time the attempts take; Deadline is the
	// wall clock. Zero or less is no limit.
	MaxElapsed time.Duration
	// Deadline, when set, is the wall-clock time by which the sequence must
	// be over: Next reports false rather than hand out a wait that would end
	// after it, so a loop gives up at once with its last real error instead
	// of sleeping into a deadline it cannot beat. With a context:
	// s.Deadline, _ = ctx.Deadline(). Next reads the clock only when
	// Deadline is set. The attempt after a wait takes time too: set Deadline
	// that much earlier when the attempt needs it to succeed.
	Deadline time.Time
	// Rand, when set, is the only source of randomness, so the whole
	// sequence is reproducible from its seed. Nil uses math/rand/v2's
	// package-level source.
	Rand *rand.Rand

	attempt    int           // waits handed out since Reset
	step       int           // curve steps taken: computed waits only
	elapsed    time.Duration // sum of the waits handed out, saturating
	previous   time.Duration // the last computed wait, for JitterDecorrelated
	override   time.Duration // the next wait, when overridden is set
	overridden bool
	err        error // why Next last reported false: one of the three Err values, or nil
}

// The reasons [Schedule.Next] reports false, as [Schedule.Err] returns them.
// They are package-level values, so a loop compares them with [errors.Is]
// and reporting one allocates nothing.
var (
	// ErrMaxRetries: MaxRetries waits were handed out.
	ErrMaxRetries = errors.New("backoff: no retries left")
	// ErrMaxElapsed: the next wait would take Elapsed past MaxElapsed.
	ErrMaxElapsed = errors.New("backoff: the next wait would pass the limit on waiting")
	// ErrDeadline: the next wait would end after Deadline. It wraps
	// [context.DeadlineExceeded], so errors.Is(err, context.DeadlineExceeded)
	// finds a missed deadline whether a context or a Schedule saw it first.
	ErrDeadline error = deadlineError{}
)

// deadlineError is ErrDeadline's type: a message of its own, and
// context.DeadlineExceeded beneath it.
type deadlineError struct{}

func (deadlineError) Error() string { return "backoff: the next wait would end after the deadline" }
func (deadlineError) Unwrap() error { return context.DeadlineExceeded }

// Timeout reports true, as context.DeadlineExceeded's does, for code that
// asks a net.Error whether it timed out.
func (deadlineError) Timeout() bool { return true }

// Next returns the wait before the next attempt and true, and advances the
// sequence; the first call gives the curve's wait for attempt 1. It returns
// 0, false when the sequence is over: MaxRetries waits were handed out, the
// next wait would take Elapsed past MaxElapsed, or it would end after
// Deadline. A wait that cannot be followed by an attempt is not handed out:
// the caller gives up now rather than sleep first. Once Next reports false
// it keeps reporting 0, false until Reset, and a refused wait is not counted
// in Attempt or Elapsed; [Schedule.Err] says which limit ended it. The wait
// is never negative and never above Curve.MaxDelay, unless set by Override.
func (s *Schedule) Next() (time.Duration, bool) {
	if s.err != nil {
		return 0, false
	}
	if s.MaxRetries > 0 && s.attempt >= s.MaxRetries {
		s.err = ErrMaxRetries
		return 0, false
	}
	d := s.override
	if !s.overridden {
		d = s.draw()
	}
	total := s.elapsed + d // both are ≥ 0, so a wrap shows as a negative sum
	if total < 0 {
		total = maxDuration
	}
	if s.MaxElapsed > 0 && total > s.MaxElapsed {
		s.err = ErrMaxElapsed
		return 0, false
	}
	if !s.Deadline.IsZero() && s.late(d) {
		s.err = ErrDeadline
		return 0, false
	}
	if s.overridden {
		s.overridden = false
	} else {
		s.step = min(s.step+1, math.MaxInt-1)
		s.previous = d
	}
	if s.attempt < math.MaxInt { // saturate: attempt+1 would wrap to math.MinInt
		s.attempt++
	}
	s.elapsed = total
	return d, true
}

// late reports whether a wait of d would end after Deadline, reading the
// clock: only Next calls it, and only with Deadline set.
func (s *Schedule) late(d time.Duration) bool { return d > time.Until(s.Deadline) }

// draw is the curve's next wait: the decorrelated step from the previous
// wait, or the curve's own draw at the next step, from Rand when it is set.
// Without Rand it is Value.Delay's draw, whose shortcut for doubling curves
// it shares (callgrind: 197 instructions a Next with full jitter, against
// 256 through Bounds and uniform).
func (s *Schedule) draw() time.Duration {
	c := &s.Curve
	switch {
	case c.JitterMode == JitterDecorrelated:
		lo, hi := decorrelateRange(c.BaseDelay, c.MaxDelay, s.previous)
		return uniform(s.Rand, lo, hi)
	case s.Rand == nil:
		return delay(c.BaseDelay, c.MaxDelay, c.Multiplier, c.Jitter, c.JitterMode, s.step+1)
	}
	lo, hi := c.Bounds(s.step + 1)
	return uniform(s.Rand, lo, hi)
}

// Override makes the next wait d instead of a computed one: a server's
// Retry-After, a broker's backpressure signal. A d below zero is read as 0.
// MaxRetries, MaxElapsed and Deadline still apply, so with MaxElapsed or
// Deadline set a huge Retry-After ends the sequence instead of holding the
// caller's goroutine. Curve.MaxDelay does not cap it (the server's word is
// not the curve): with neither MaxElapsed nor Deadline set, nothing does,
// and Next hands out d as it is. The curve does not advance: the computed
// wait after it is the one the curve would have given without the
// override, and JitterDecorrelated's previous wait is unchanged. A second
// Override before Next replaces the first.
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

// Err returns why Next last reported false: [ErrMaxRetries],
// [ErrMaxElapsed] or [ErrDeadline]. It is nil while the sequence goes on,
// and again after Reset. When two limits refuse the same wait, MaxRetries
// is reported first, then MaxElapsed, then Deadline. It does not allocate.
func (s *Schedule) Err() error { return s.err }

// Reset starts the sequence over, as after a success: the next wait is the
// curve's first again. It keeps the configuration (Curve, MaxRetries,
// MaxElapsed, Deadline, Rand), drops a pending Override and clears Err.
func (s *Schedule) Reset() {
	s.attempt, s.step, s.elapsed, s.previous = 0, 0, 0, 0
	s.override, s.overridden, s.err = 0, false, nil
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
// Pass the result to [Schedule.Override], widened by [AddJitter]:
// AddJitter(d, max(d/2, time.Second)). Every client told the same date, or
// turned away in the same instant, otherwise returns in the same instant;
// benchmarks/README.md measures what that does to a server.
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
