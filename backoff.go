// Package backoff computes how long a failing loop should wait before its
// next attempt: exponential backoff with jitter, as a pure calculator.
//
// It turns an attempt number into a wait, for retry loops, supervisors that
// restart a goroutine, and periodic tickers. It never sleeps, starts no timer
// or goroutine and does no I/O: the caller owns the loop and the timer.
//
// Two invariants hold for every exported function and every input, NaN,
// ±Inf, math.MinInt and math.MaxInt64 included: no wait is ever negative, and
// nothing overflows. Growth is decided in the float domain before any
// conversion to int64, so a curve that would pass the longest
// [time.Duration] saturates instead of wrapping to a negative wait (which
// [time.Sleep] would return from at once, turning a backoff into a tight
// loop). A [Value].MaxDelay is a hard ceiling in every jitter mode. Nothing
// panics and no input is refused: out-of-range inputs are normalised as each
// doc comment says.
//
// [Value] is stateless and safe for concurrent use, as are all the functions;
// a [Schedule] holds the state of one retry sequence and is not. Randomness
// comes from math/rand/v2's package-level source, or from [Schedule].Rand.
package backoff

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// JitterMode chooses how a [Value] randomises each grown wait. The zero
// JitterMode is JitterFull, on purpose: a backoff left at its defaults must
// not synchronise the clients that failed together.
type JitterMode uint8

const (
	// JitterFull draws the wait uniformly from [0, grown]. AWS measured it to
	// do the least total work of the modes; it is the zero value.
	JitterFull JitterMode = iota
	// JitterEqual draws the wait uniformly from [grown/2, grown]: it keeps at
	// least half the curve.
	JitterEqual
	// JitterDecorrelated draws the wait uniformly from
	// [BaseDelay, min(MaxDelay, 3×previous)], as [Decorrelate] does.
	JitterDecorrelated
	// JitterAdditive widens the grown wait by up to a fraction Jitter of
	// itself, as [Widen] does, keeping the whole spread under MaxDelay.
	JitterAdditive
	// JitterNone returns the grown wait exactly: deterministic, for tests.
	JitterNone
	// JitterSymmetric draws the wait uniformly from
	// [g′×(1−Jitter), g′×(1+Jitter)], where g′ is the curve held at
	// MaxDelay/(1+Jitter): the ±RandomizationFactor of cenkalti/backoff and
	// the random(0.8, 1.2) of gRPC's retry policy (gRFC A6), with the
	// ceiling kept hard. To reproduce a peer whose jitter overshoots its cap
	// by the factor, set MaxDelay to cap×(1+Jitter). It comes after
	// JitterNone so that the other modes keep their values.
	JitterSymmetric
)

var modeNames = [...]string{
	JitterFull:         "full",
	JitterEqual:        "equal",
	JitterDecorrelated: "decorrelated",
	JitterAdditive:     "additive",
	JitterNone:         "none",
	JitterSymmetric:    "symmetric",
}

// String returns the mode's name: "full", "equal", "decorrelated",
// "additive", "none" or "symmetric"; "unknown" for a mode this package does
// not define.
func (m JitterMode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "unknown"
}

// MarshalText implements [encoding.TextMarshaler]: the mode's name, as
// String gives it. A mode this package does not define is an error rather
// than "unknown", which could not be read back.
func (m JitterMode) MarshalText() ([]byte, error) {
	if int(m) < len(modeNames) {
		return []byte(modeNames[m]), nil
	}
	return nil, fmt.Errorf("backoff: undefined jitter mode %d", uint8(m))
}

// errModeName names the accepted spellings once, for UnmarshalText.
var errModeName = errors.New(`want one of "full", "equal", "decorrelated", "additive", "none", "symmetric"`)

// UnmarshalText implements [encoding.TextUnmarshaler]: it accepts the six
// names String gives, in any case, and leaves m unchanged with an error
// naming them otherwise. It is what lets [flag.TextVar] and encoding/json
// read a mode.
func (m *JitterMode) UnmarshalText(b []byte) error {
	for i, name := range modeNames {
		if strings.EqualFold(string(b), name) {
			*m = JitterMode(i)
			return nil
		}
	}
	return fmt.Errorf("backoff: unknown jitter mode %q: %w", b, errModeName)
}

// Value describes one backoff curve: a wait that starts at BaseDelay, grows
// by Multiplier per attempt up to MaxDelay, and is randomised by JitterMode.
// The zero Value waits nothing; set BaseDelay to make it wait. A Value is a
// plain comparable struct with no state: safe to copy, to compare and to
// share between goroutines.
type Value struct {
	// BaseDelay is the wait after the first failure. Zero or less waits
	// nothing, in every mode.
	BaseDelay time.Duration
	// MaxDelay is a hard ceiling on every wait, in every mode. Zero or less
	// means none: waits stop growing at math.MaxInt64 ns.
	MaxDelay time.Duration
	// Multiplier is the growth per attempt, normalised by NormalMultiplier:
	// zero (or anything below 1, or NaN) doubles; exactly 1 is a constant
	// wait.
	Multiplier float64
	// Jitter is the fraction JitterAdditive widens by, and JitterSymmetric
	// spreads by either side, normalised by NormalJitter into [0, 1]. The
	// other modes do not read it.
	Jitter float64
	// JitterMode chooses the randomisation. The zero is JitterFull; a mode
	// this package does not define is read as JitterFull.
	JitterMode JitterMode
}

// Delay returns the wait before the retry that follows failure number
// attempt (the first failure is attempt 1; an attempt below 1 is read as
// 1). Let g = Grow(BaseDelay, MaxDelay, Multiplier, attempt). Then
//
//   - JitterFull draws from [0, g];
//   - JitterEqual draws from [g/2, g];
//   - JitterNone returns g;
//   - JitterDecorrelated draws from Decorrelate(BaseDelay, MaxDelay, p),
//     where p, the previous wait, is the curve's own previous step
//     Grow(…, attempt−1), and BaseDelay at attempt 1: a Value has no memory.
//     Use a [Schedule] for the loop that feeds back the waits it drew;
//   - JitterAdditive widens the curve held at MaxDelay/(1+Jitter) instead of
//     MaxDelay, so that at the ceiling the waits still spread over
//     [MaxDelay/(1+Jitter), MaxDelay] instead of collapsing onto MaxDelay.
//     With no MaxDelay the curve is held at math.MaxInt64/(1+Jitter) alike;
//   - JitterSymmetric draws from [g′×(1−Jitter), g′×(1+Jitter)], g′ the
//     curve held at MaxDelay/(1+Jitter) as for JitterAdditive, so that the
//     upper end reaches MaxDelay at the ceiling and never passes it.
//
// Every draw is uniform over whole nanoseconds, both ends included, and lies
// in [Value.Bounds](attempt). No wait is negative or above MaxDelay (or
// math.MaxInt64 without one). Delay is O(1) in attempt, does not allocate,
// and is safe for concurrent use.
func (v Value) Delay(attempt int) time.Duration {
	// The fields go as scalars, so that Delay inlines into its caller and
	// no Value is stored and reloaded on the way: Go keeps a struct in
	// registers only up to four fields, and Value has five.
	return delay(v.BaseDelay, v.MaxDelay, v.Multiplier, v.Jitter, v.JitterMode, attempt)
}

// delay is Value.Delay, and Schedule.Next's draw from the package-level
// source. The defaults (doubling under a ceiling, full jitter or none) are
// its hot path, with Grow's shortcut inlined; everything else goes through
// Bounds, which gives the interval for every mode.
func delay(base, ceiling time.Duration, multiplier, jitter float64, mode JitterMode, attempt int) time.Duration {
	if g, ok := doubled(base, ceiling, multiplier, attempt); ok {
		switch mode {
		case JitterFull:
			// between(0, g), written out: a call here would cost Delay
			// about 7% (callgrind: 131 instructions a call, against 140).
			n := uint64(g) + 1
			x, frac := bits.Mul64(rand.Uint64(), n)
			if frac < n {
				x = reject(n, x, frac)
			}
			return time.Duration(x)
		case JitterNone:
			return g
		}
	}
	lo, hi := Value{base, ceiling, multiplier, jitter, mode}.Bounds(attempt)
	return between(lo, hi)
}

// Bounds returns the closed interval [lo, hi] that Delay(attempt) draws
// from, computed without drawing: lo = hi = g for JitterNone, [0, g] for
// JitterFull, and so on (see [Value.Delay]). 0 ≤ lo ≤ hi ≤ the ceiling.
// Bounds is O(1) in attempt, does not allocate, and is safe for concurrent
// use.
//
// For planning a timeout around Value.Delay, the longest n retries can wait
// is the sum of the his of attempts 1 to n. That sum does not bound a
// [Schedule] with JitterDecorrelated, whose waits grow from the waits it
// drew (up to 3× per wait, to MaxDelay), nor waits set by
// [Schedule.Override]: bound those with Schedule.MaxElapsed or
// Schedule.Deadline.
func (v Value) Bounds(attempt int) (lo, hi time.Duration) {
	switch v.JitterMode {
	case JitterDecorrelated:
		// The curve's previous step stands in for the previous wait; before
		// attempt 2 that is Grow's attempt 0, read as 1: BaseDelay.
		prev := Grow(v.BaseDelay, v.MaxDelay, v.Multiplier, max(attempt, 1)-1)
		return decorrelateRange(v.BaseDelay, v.MaxDelay, prev)
	case JitterAdditive, JitterSymmetric:
		return v.heldRange(attempt)
	}
	g := Grow(v.BaseDelay, v.MaxDelay, v.Multiplier, attempt)
	switch v.JitterMode {
	case JitterNone:
		return g, g
	case JitterEqual:
		return g / 2, g
	}
	return 0, g // JitterFull, and modes this package does not define
}

// heldRange holds the curve at limit/(1+j), and widens it within limit
// (JitterAdditive) or spreads it either side (JitterSymmetric).
func (v Value) heldRange(attempt int) (lo, hi time.Duration) {
	limit := v.MaxDelay
	if limit <= 0 {
		limit = maxDuration
	}
	j := NormalJitter(v.Jitter)
	held := limit
	// float64(limit) may round up to 2^63, and 1+j may round to 1: hold
	// the float below the bound before converting, and at limit after.
	// It stays at least 1ns, which Grow would otherwise read as no ceiling.
	if h := float64(limit) / (1 + j); h < float64(limit) {
		held = max(min(time.Duration(h), limit), 1)
	}
	g := Grow(v.BaseDelay, held, v.Multiplier, attempt)
	if v.JitterMode == JitterSymmetric {
		return symmetricRange(g, j, limit)
	}
	return widenRange(g, j, limit)
}

// String returns the policy as one line, for logs, flags and configuration
// files, such as "100ms×2 up to 30s, full jitter": the form [Value.MarshalText]
// writes and [Value.UnmarshalText] reads. It shows the values the curve
// really uses: the normalised multiplier and jitter, "no wait" for a
// BaseDelay of zero or less, "uncapped" for no MaxDelay, and full jitter for
// a mode this package does not define. The jitter fraction is written only
// for the mode that reads it.
func (v Value) String() string { return string(v.appendText(nil)) }

// MarshalText implements [encoding.TextMarshaler]: it returns String's
// form, so that encoding/json, [flag.TextVar] and YAML or TOML libraries
// write a Value as one line. It never returns an error.
func (v Value) MarshalText() ([]byte, error) { return v.appendText(nil), nil }

// UnmarshalText implements [encoding.TextUnmarshaler]: it reads the form
// String writes, and more lenient spellings of it, so that encoding/json,
// [flag.TextVar], YAML and TOML libraries and environment loaders read a
// whole Value from one string:
//
//	value  = curve [", " jitter]
//	curve  = "no wait" | base ["×" multiplier] [" up to " max | " uncapped"]
//	jitter = ("full" | "equal" | "decorrelated") " jitter"
//	       | ("additive" | "symmetric") " jitter " fraction | "no jitter"
//
// It is lenient where nothing can be mistaken: any case; any white space
// around words, numbers and commas, and between a number and its unit
// ("100 ms", "1 m 30 s"); "x" or "*" for "×"; durations as
// [time.ParseDuration] reads them, with units in any case ("100MS" is
// 100ms, "1M" a minute); numbers as [strconv.ParseFloat] reads them. An
// omitted multiplier is 2, an omitted ceiling is none, an omitted jitter is
// full jitter.
//
// It is strict where a typo would silently change the waits: empty text, an
// unknown word, a duration that does not parse or is not above zero (write
// "no wait" for none, or leave the ceiling out), a multiplier that is not a
// number ≥ 1 (+Inf is one), an additive or symmetric fraction missing or
// outside [0, 1],
// a clause given twice, or text left over is an error that quotes the part
// it could not read and shows the form; v is then left unchanged. A jitter
// where the curve should be ("full jitter" alone) is an error that says the
// curve is missing, and a near miss of a jitter's name ("ful", "jiter") one
// that names the word meant.
//
// Reading what MarshalText wrote gives a Value with the same String and the
// same Bounds at every attempt, for every Value.
func (v *Value) UnmarshalText(b []byte) error {
	p, err := parsePolicy(string(b), false)
	if err != nil {
		return err
	}
	*v = p.curve
	return nil
}

// appendText appends String's form to b.
func (v Value) appendText(b []byte) []byte {
	if v.BaseDelay <= 0 {
		b = append(b, "no wait"...)
	} else {
		b = append(b, v.BaseDelay.String()...)
		b = append(b, "×"...)
		b = strconv.AppendFloat(b, NormalMultiplier(v.Multiplier), 'g', -1, 64)
		if v.MaxDelay > 0 {
			b = append(b, " up to "...)
			b = append(b, v.MaxDelay.String()...)
		} else {
			b = append(b, " uncapped"...)
		}
	}
	switch mode := v.JitterMode; {
	case mode == JitterNone:
		b = append(b, ", no jitter"...)
	case mode.readsJitter():
		b = append(b, ", "...)
		b = append(b, mode.String()...)
		b = append(b, " jitter "...)
		b = strconv.AppendFloat(b, NormalJitter(v.Jitter), 'g', -1, 64)
	default:
		if int(mode) >= len(modeNames) {
			mode = JitterFull
		}
		b = append(b, ", "...)
		b = append(b, mode.String()...)
		b = append(b, " jitter"...)
	}
	return b
}

// readsJitter reports whether the mode reads Value.Jitter.
func (m JitterMode) readsJitter() bool { return m == JitterAdditive || m == JitterSymmetric }

// policy is what one line of policy text sets: a Value, and for a Schedule
// its limits.
type policy struct {
	curve   Value
	retries int
	waiting time.Duration
}

// The examples a parse error shows.
const (
	valueForm    = "100ms×2 up to 30s, full jitter"
	scheduleForm = valueForm + ", 5 retries, 1m0s of waiting"
)

// A token is a word, a number, a duration or one of ",", "×", "*", with
// its byte offset in the text.
type token struct {
	s   string
	pos int
}

// policyParser reads policy text: a hand-written scanner over tokens, so
// that every error can quote what it could not read.
type policyParser struct {
	text     string
	toks     []token
	i        int
	schedule bool // whether the Schedule limits may follow the Value
}

// tokenize splits text at white space, and around ",", "×" and "*".
func tokenize(text string) []token {
	var toks []token
	start := -1
	flush := func(end int) {
		if start >= 0 {
			toks = append(toks, token{text[start:end], start})
			start = -1
		}
	}
	for i, r := range text {
		switch {
		case unicode.IsSpace(r):
			flush(i)
		case r == ',' || r == '×' || r == '*':
			flush(i)
			toks = append(toks, token{text[i : i+utf8.RuneLen(r)], i})
		default:
			if start < 0 {
				start = i
			}
		}
	}
	flush(len(text))
	return joinUnits(toks)
}

// joinUnits reads a number followed by a duration unit as one duration, so
// that "100 ms" and "1 m 30 s" read as "100ms" and "1m30s" do; the token
// keeps the text between, to quote it as written.
func joinUnits(toks []token) []token {
	out := toks[:0]
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if i+1 < len(toks) && isNumber(t.s) && isUnit(toks[i+1].s) {
			t.s += toks[i+1].s // "100" "ms" → "100ms"
			i++
			for i+2 < len(toks) && isNumber(toks[i+1].s) && isUnit(toks[i+2].s) {
				t.s += toks[i+1].s + toks[i+2].s // "1m" "30" "s" → "1m30s"
				i += 2
			}
		}
		out = append(out, t)
	}
	return out
}

// isUnit reports whether s is a unit time.ParseDuration reads, in any case.
func isUnit(s string) bool {
	switch strings.ToLower(s) {
	case "ns", "us", "µs", "μs", "ms", "s", "m", "h":
		return true
	}
	return false
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// parsePolicy reads one line of policy text: a Value's, or with schedule
// set a Schedule's, whose limits may follow. The grammar is in the doc
// comments of Value.UnmarshalText and Schedule.UnmarshalText.
func parsePolicy(text string, schedule bool) (policy, error) {
	p := &policyParser{text: text, toks: tokenize(text), schedule: schedule}
	var out policy
	if len(p.toks) == 0 {
		return out, p.errorf("empty")
	}
	if err := p.curve(&out.curve); err != nil {
		return out, err
	}
	var seen [3]bool // jitter, retries, waiting
	for p.i < len(p.toks) {
		sep := p.next()
		if sep.s != "," {
			return out, p.errorf("cannot read %q: want a comma before the next clause", p.rest(sep))
		}
		first, ok := p.peek()
		if !ok {
			return out, p.errorf("nothing after the last comma")
		}
		clause, err := 0, error(nil)
		switch second, _ := p.peekAt(1); {
		case isWord(second.s, "retries") || isWord(second.s, "retry"):
			clause, err = 1, p.retries(&out.retries)
		case isWord(second.s, "of"):
			clause, err = 2, p.waiting(&out.waiting)
		default:
			err = p.jitter(&out.curve)
		}
		if err != nil {
			return out, err
		}
		if seen[clause] {
			return out, p.errorf("%q: a clause given twice", p.text[first.pos:p.end()])
		}
		seen[clause] = true
	}
	return out, nil
}

// curve reads: "no wait" | base ["×" multiplier] [" up to " max | " uncapped"].
func (p *policyParser) curve(v *Value) error {
	t := p.next()
	if w, _ := p.peek(); isWord(t.s, "no") && isWord(w.s, "wait") {
		p.i++
		return nil
	}
	// A duration never holds an x, so "100msx2" is a base and a multiplier.
	base, mult, hasMult := t.s, "", false
	if i := strings.IndexAny(base, "xX"); i > 0 {
		base, mult, hasMult = base[:i], base[i+1:], true
	}
	d, err := p.duration(base, "a base wait such as 100ms, or \"no wait\"")
	if err != nil {
		if hint := p.jitterFirst(t); hint != nil {
			return hint
		}
		return err
	}
	v.BaseDelay, v.Multiplier = d, 2
	if n, ok := p.peek(); ok && !hasMult {
		switch {
		case n.s == "×" || n.s == "*":
			p.i++
			hasMult = true
		case n.s[0] == 'x' || n.s[0] == 'X':
			p.i++
			mult, hasMult = n.s[1:], true
		}
	}
	if hasMult {
		if mult == "" {
			n, ok := p.peek()
			if !ok {
				return p.errorf("nothing after ×: want a multiplier such as 2")
			}
			p.i++
			mult = n.s
		}
		m, err := strconv.ParseFloat(mult, 64)
		if err != nil || !(m >= 1) {
			return p.errorf("multiplier %q: want a number ≥ 1, such as 2 or 1.5", mult)
		}
		v.Multiplier = m
	}
	n, ok := p.peek()
	switch {
	case !ok:
	case isWord(n.s, "uncapped"):
		p.i++
	case isWord(n.s, "up"):
		p.i++
		if to, ok := p.peek(); !ok || !isWord(to.s, "to") {
			return p.errorf("%q: want \"up to\" and a ceiling such as 30s", p.rest(n))
		}
		p.i++
		c, ok := p.peek()
		if !ok {
			return p.errorf("nothing after \"up to\": want a ceiling such as 30s")
		}
		p.i++
		d, err := p.duration(c.s, "a ceiling such as 30s (or leave it out for none)")
		if err != nil {
			return err
		}
		v.MaxDelay = d
	}
	return nil
}

// jitter reads: ("full" | "equal" | "decorrelated") " jitter" |
// ("additive" | "symmetric") " jitter " fraction | "no jitter".
func (p *policyParser) jitter(v *Value) error {
	name := p.next()
	mode, known := JitterNone, isWord(name.s, "no")
	for m, s := range modeNames {
		if JitterMode(m) != JitterNone && isWord(name.s, s) {
			mode, known = JitterMode(m), true
		}
	}
	if !known {
		if m, ok := nearJitter(name.s); ok {
			return p.errorf("unknown word %q: did you mean %q? (a jitter is full, equal, decorrelated, additive, symmetric or no jitter)", name.s, m)
		}
		return p.errorf("unknown word %q: want a jitter (full, equal, decorrelated, additive, symmetric or no jitter)%s", name.s, p.limitsHint())
	}
	if w, ok := p.peek(); !ok || !isWord(w.s, "jitter") {
		if ok && w.s != "," {
			p.i++ // quote the word that stands where "jitter" should
		}
		return p.errorf("%q: want \"%s jitter\"", p.text[name.pos:p.end()], strings.ToLower(name.s))
	}
	p.i++
	v.JitterMode, v.Jitter = mode, 0
	if !mode.readsJitter() {
		return nil
	}
	f, ok := p.peek()
	if !ok || f.s == "," {
		return p.errorf("%s jitter needs a fraction in [0, 1], such as \"%s jitter 0.2\"", mode, mode)
	}
	p.i++
	j, err := strconv.ParseFloat(f.s, 64)
	if err != nil || !(j >= 0 && j <= 1) {
		return p.errorf("%s jitter fraction %q: want a number in [0, 1], such as 0.2", mode, f.s)
	}
	v.Jitter = j
	return nil
}

// retries reads: n " retries", n ≥ 1.
func (p *policyParser) retries(n *int) error {
	t := p.next()
	p.i++ // "retries"
	clause := p.text[t.pos:p.end()]
	if !p.schedule {
		return p.errorf("%q: retries are a Schedule's limit, not part of a Value", clause)
	}
	r, err := strconv.Atoi(t.s)
	switch {
	case err != nil:
		return p.errorf("%q: want a whole number of retries, such as \"5 retries\"", clause)
	case r < 1:
		return p.errorf("%q: want at least 1 (leave the clause out for no limit)", clause)
	}
	*n = r
	return nil
}

// waiting reads: duration " of waiting".
func (p *policyParser) waiting(d *time.Duration) error {
	t := p.next()
	p.i++ // "of"
	if w, ok := p.peek(); !ok || !isWord(w.s, "waiting") {
		if ok && w.s != "," {
			p.i++ // quote the word that stands where "waiting" should
		}
		return p.errorf("%q: want a limit such as \"1m0s of waiting\"", p.text[t.pos:p.end()])
	}
	p.i++
	if !p.schedule {
		return p.errorf("%q: waiting is a Schedule's limit, not part of a Value", p.text[t.pos:p.end()])
	}
	w, err := p.duration(t.s, "a limit on the waiting such as 1m0s (or leave the clause out for none)")
	if err != nil {
		return err
	}
	*d = w
	return nil
}

// duration reads a duration above zero, with its unit in any case.
func (p *policyParser) duration(s, want string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.ToLower(s))
	if err != nil || d <= 0 {
		err = p.errorf("%q is not a duration above zero: want %s", s, want)
	}
	return d, err
}

func (p *policyParser) next() token {
	t := p.toks[p.i]
	p.i++
	return t
}

func (p *policyParser) peek() (token, bool) { return p.peekAt(0) }

func (p *policyParser) peekAt(k int) (token, bool) {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k], true
	}
	return token{}, false
}

// end is the offset just past the last token read; at least one was.
func (p *policyParser) end() int {
	t := p.toks[p.i-1]
	return t.pos + len(t.s)
}

// rest is the text from t to the end.
func (p *policyParser) rest(t token) string { return p.text[t.pos:] }

func (p *policyParser) limitsHint() string {
	if p.schedule {
		return `, "N retries" or "D of waiting"`
	}
	return ""
}

func (p *policyParser) errorf(format string, args ...any) error {
	form := valueForm
	if p.schedule {
		form = scheduleForm
	}
	return fmt.Errorf("backoff: policy %q: %s (the form: %q)", p.text, fmt.Sprintf(format, args...), form)
}

// jitterFirst is the error for text that starts with a jitter, or a word
// near one, where the curve should be ("full jitter", "ful jiter"): it says
// the curve is missing, and names what is misspelt. It returns nil when the
// first word is not a jitter's.
func (p *policyParser) jitterFirst(first token) error {
	name, exact := strings.ToLower(first.s), true
	if !isJitterName(name) {
		m, ok := nearJitter(first.s)
		if !ok {
			return nil
		}
		name, exact = m, false
	}
	var misspelt []string
	if !exact {
		misspelt = append(misspelt, fmt.Sprintf("%q for %q", first.s, name))
	}
	if w, ok := p.peek(); ok && !isWord(w.s, "jitter") && near(strings.ToLower(w.s), "jitter") {
		misspelt = append(misspelt, fmt.Sprintf("%q for \"jitter\"", w.s))
	}
	msg := fmt.Sprintf("the curve is missing: a policy starts with a base wait such as 100ms (or \"no wait\"), and the jitter follows it after a comma, as in \"100ms, %s jitter\"", name)
	if len(misspelt) > 0 {
		msg += "; misspelt: " + strings.Join(misspelt, ", ")
	}
	return p.errorf("%s", msg)
}

// isJitterName reports whether s (in lower case) names a jitter clause's
// first word.
func isJitterName(s string) bool {
	if s == "no" {
		return true
	}
	for m, name := range modeNames {
		if JitterMode(m) != JitterNone && s == name {
			return true
		}
	}
	return false
}

// nearJitter returns the jitter name s is a near miss of: one or two
// letters added, dropped or changed ("ful", "equl", "decorelated").
func nearJitter(s string) (string, bool) {
	s = strings.ToLower(s)
	for m, name := range modeNames {
		if JitterMode(m) != JitterNone && near(s, name) {
			return name, true
		}
	}
	return "", false
}

// near reports whether a and b differ, by at most two edits for words of
// five letters or more and one for shorter ones. Equal words are not near.
func near(a, b string) bool {
	if a == b {
		return false
	}
	limit := 1
	if len(b) >= 5 {
		limit = 2
	}
	return editDistance(a, b, limit) <= limit
}

// editDistance is the Levenshtein distance between a and b, or limit+1
// once it is sure to be more than limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d > limit || -d > limit {
		return limit + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// isWord reports whether s is the word w, in any case.
func isWord(s, w string) bool { return strings.EqualFold(s, w) }
