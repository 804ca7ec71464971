package backoff

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Policies as one line of text: what Value and Schedule write with String
// and MarshalText, and read back with UnmarshalText. The grammar is in the
// doc comments of Value.UnmarshalText and Schedule.UnmarshalText; the
// reader is a hand-written scanner over tokens, so that every error can
// quote what it could not read.

// String returns the policy as one line, for logs, flags and configuration
// files, such as "100ms×2 up to 30s, full jitter": the form [Value.MarshalText]
// writes and [Value.UnmarshalText] reads. It shows the values the curve
// really uses: the normalised multiplier and jitter, "no wait" for a
// BaseDelay of zero or less, "uncapped" for no MaxDelay (zero or less, or
// math.MaxInt64, where the growth stops without one), full jitter for a
// mode this package does not define, and a MaxDelay below BaseDelay as the
// base too ("1s up to 100ms" waits 100ms every time, as "100ms×2 up to
// 100ms" does). The jitter fraction is written only for the mode that
// reads it.
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
// It sets every field, none to a zero that a container could read as its
// own default: "no wait" is a BaseDelay of −1ns, and no ceiling (none
// written, or "uncapped") a MaxDelay of math.MaxInt64. The waits are those
// of a zero BaseDelay or MaxDelay, and a [Schedule] read from the text
// waits the same in a retry.Policy, whose zero fields mean its defaults.
//
// It is strict where a typo would silently change the waits: empty text, an
// unknown word, a duration that does not parse, is not above zero (write
// "no wait" for none, or leave the ceiling out) or is longer than a
// [time.Duration] holds, a ceiling below the base wait, a multiplier that
// is not a number ≥ 1 (+Inf is one), an additive or symmetric fraction
// missing or outside [0, 1], a clause given twice, or text left over is an
// error that quotes the text and the part it could not read, in whole
// tokens as they were written, and shows the form; v is then left
// unchanged. A jitter where the curve should be ("full jitter" alone) is an
// error that says the curve is missing, and a near miss of a word ("ful",
// "jiter", "retires") one that names the word meant. Any bytes are read
// without panicking, UTF-8 or not, in time linear in their length. So that
// an error stays a few lines long, a part of the text longer than 64 bytes
// is quoted up to its last whole token within them, then " …", and a
// longer token by its first and last 32 bytes around "…".
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

// String returns the policy as one line, such as "100ms×2 up to 30s, full
// jitter, 5 retries, 1m0s of waiting": the Curve as [Value.String] writes it,
// then a clause for each limit that is set ("1 retry" in the singular).
// With JitterDecorrelated the multiplier is written though Next does not
// read it (its waits grow from the waits it drew): it is the Curve's, whose
// Delay and Bounds read it, and the text keeps it for a Curve that
// changes mode. It
// is the form MarshalText writes and UnmarshalText reads. Deadline and Rand
// are not policy and are not written, nor is the state of the sequence.
func (s Schedule) String() string { return string(s.appendText(nil)) }

// MarshalText implements [encoding.TextMarshaler]: it returns String's form.
// It never returns an error.
func (s Schedule) MarshalText() ([]byte, error) { return s.appendText(nil), nil }

// UnmarshalText implements [encoding.TextUnmarshaler]: it reads the form
// String writes, so that encoding/json, [flag.TextVar], YAML and TOML
// libraries and environment loaders read a whole retry policy from one
// string:
//
//	schedule = value [", " n " retries"] [", " duration " of waiting"]
//
// where value is the form [Value.UnmarshalText] reads, with its lenient
// spellings; the clauses after the curve (jitter, retries, waiting) come in
// any order, each at most once. The retries clause is a whole number ≥ 1
// and "retries" or "retry", whichever the number ("1 retries" and "5 retry"
// are read too); "5 attempts" is an error that says attempts count the
// first call too, so that 5 attempts are 4 retries. Omitted limits are
// none. "0 retries" is an error: no text says "never retry" (the error
// says so, and what leaving the clause out means to retry.Do). It, a
// waiting limit that is not a duration above zero, and everything
// Value.UnmarshalText rejects are errors that quote the part that could not
// be read, and leave s unchanged.
//
// On success it sets Curve, MaxRetries and MaxElapsed and starts the
// sequence over, as Reset does; Deadline and Rand are left as they were.
func (s *Schedule) UnmarshalText(b []byte) error {
	p, err := parsePolicy(string(b), true)
	if err != nil {
		return err
	}
	s.Curve, s.MaxRetries, s.MaxElapsed = p.curve, p.retries, p.waiting
	s.Reset()
	return nil
}

// appendText appends String's form to b.
func (v Value) appendText(b []byte) []byte {
	if v.BaseDelay <= 0 {
		b = append(b, "no wait"...)
	} else {
		base := v.BaseDelay
		if v.MaxDelay > 0 {
			base = min(base, v.MaxDelay) // the waits are the same, and the text reads back
		}
		b = append(b, base.String()...)
		b = append(b, "×"...)
		b = strconv.AppendFloat(b, NormalMultiplier(v.Multiplier), 'g', -1, 64)
		if v.MaxDelay > 0 && v.MaxDelay < maxDuration {
			b = append(b, " up to "...)
			b = append(b, v.MaxDelay.String()...)
		} else {
			b = append(b, " uncapped"...)
		}
	}
	mode := v.JitterMode
	if int(mode) >= len(modeNames) {
		mode = JitterFull
	}
	switch {
	case mode == JitterNone:
		return append(b, ", no jitter"...)
	case mode.readsJitter():
		b = append(b, ", "+mode.String()+" jitter "...)
		return strconv.AppendFloat(b, NormalJitter(v.Jitter), 'g', -1, 64)
	}
	return append(b, ", "+mode.String()+" jitter"...)
}

// appendText appends String's form to b.
func (s Schedule) appendText(b []byte) []byte {
	b = s.Curve.appendText(b)
	if s.MaxRetries > 0 {
		b = append(b, ", "...)
		b = strconv.AppendInt(b, int64(s.MaxRetries), 10)
		if s.MaxRetries == 1 {
			b = append(b, " retry"...)
		} else {
			b = append(b, " retries"...)
		}
	}
	if s.MaxElapsed > 0 {
		b = append(b, ", "+s.MaxElapsed.String()+" of waiting"...)
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

// parsePolicy reads one line of policy text: a Value's, or with schedule
// set a Schedule's, whose limits may follow. The grammar is in the doc
// comments of Value.UnmarshalText and Schedule.UnmarshalText.
//
// It reads in two passes over the tokens, apart: the productions, strict,
// stop at the first token they cannot read and return a fault, what they
// wanted and where; explain then turns the fault into the error, with the
// hint that directs (the word meant, the curve missing, attempts counted
// as retries).
func parsePolicy(text string, schedule bool) (policy, error) {
	p := &policyParser{text: text, toks: tokenize(text), schedule: schedule}
	if f := p.policy(); f != nil {
		return policy{}, p.explain(f)
	}
	return p.out, nil
}

// policyParser holds the text, its tokens, and what the productions have
// read so far.
type policyParser struct {
	text     string
	toks     []token
	i        int  // the next token
	schedule bool // whether the Schedule limits may follow the Value
	out      policy
}

// A fault is where a production stopped: what it wanted, and the bytes it
// could not read, text[at.pos:at.end] (at.s as read); an empty span is a
// part missing there.
type fault struct {
	want want
	at   token
}

// want is what a production wanted where it stopped.
type want uint8

const (
	wantText       want = iota // any text at all
	wantBase                   // a base wait, or "no wait"
	wantMultiplier             // a number ≥ 1 after ×
	wantTo                     // "to" after "up"
	wantCeiling                // a duration after "up to"
	wantHigher                 // a ceiling at or above the base wait
	wantComma                  // a comma between clauses
	wantClause                 // a clause after a comma
	wantOnce                   // each clause at most once
	wantJitter                 // a jitter's name
	wantJitterWord             // "jitter" after its name
	wantFraction               // a fraction in [0, 1] after "additive jitter" or "symmetric jitter"
	wantRetries                // "retries" after a number
	wantSchedule               // the limits only in a Schedule's text
	wantWhole                  // a whole number of retries
	wantOne                    // at least 1 retry
	wantWaiting                // "waiting" after "of"
	wantLimit                  // a duration before "of waiting"
)

// span returns a token for the bytes from..to, for a fault that quotes
// more than one token, or none (from == to: a part missing there).
func span(from, to int) token { return token{pos: from, end: to} }

// policy reads: curve, then clauses after commas (jitter, retries,
// waiting), in any order, each at most once.
func (p *policyParser) policy() *fault {
	if len(p.toks) == 0 {
		return &fault{wantText, span(0, 0)}
	}
	if f := p.curve(); f != nil {
		return f
	}
	var seen [3]bool // jitter, retries, waiting
	for p.i < len(p.toks) {
		if sep := p.next(); sep.s != "," {
			return &fault{wantComma, span(sep.pos, len(p.text))}
		}
		first, ok := p.peek()
		if !ok {
			return &fault{wantClause, span(len(p.text), len(p.text))}
		}
		clause, f := 0, (*fault)(nil)
		switch second, _ := p.peekAt(1); {
		case isWord(second.s, "of"):
			clause, f = 2, p.waiting()
		case isNumber(first.s) || isWord(second.s, "retries") || isWord(second.s, "retry"):
			clause, f = 1, p.retries()
		default:
			f = p.jitter()
		}
		if f != nil {
			return f
		}
		if seen[clause] {
			return &fault{wantOnce, span(first.pos, p.end())}
		}
		seen[clause] = true
	}
	return nil
}

// curve reads: "no wait" | base ["×" multiplier] [" up to " max | " uncapped"].
func (p *policyParser) curve() *fault {
	v := &p.out.curve
	*v = Value{BaseDelay: -1, MaxDelay: maxDuration, Multiplier: 2} // "no wait", uncapped: no zero field
	t := p.next()
	if w, _ := p.peek(); isWord(t.s, "no") && isWord(w.s, "wait") {
		p.i++
		return nil
	}
	// A duration never holds an x, so "100msx2" is a base and a multiplier.
	base, mult, hasMult := t, token{}, false
	if i := strings.IndexAny(t.s, "xX"); i > 0 {
		base, mult, hasMult = token{t.s[:i], t.pos, t.pos + i}, token{t.s[i+1:], t.pos + i + 1, t.end}, true
	}
	if f := duration(wantBase, base, &v.BaseDelay); f != nil {
		return f
	}
	if n, ok := p.peek(); ok && !hasMult {
		switch {
		case n.s == "×" || n.s == "*":
			p.i++
			mult, hasMult = span(n.end, n.end), true
		case n.s[0] == 'x' || n.s[0] == 'X':
			p.i++
			mult, hasMult = token{n.s[1:], n.pos + 1, n.end}, true
		}
	}
	if hasMult {
		if mult.s == "" {
			mult, _ = p.peek() // none is an empty span: nothing after ×
			p.i++
		}
		m, err := strconv.ParseFloat(mult.s, 64)
		if err != nil || !(m >= 1) {
			return &fault{wantMultiplier, mult}
		}
		v.Multiplier = m
	}
	return p.ceiling()
}

// ceiling reads what may follow the curve's multiplier: " up to " max or
// " uncapped".
func (p *policyParser) ceiling() *fault {
	v := &p.out.curve
	n, ok := p.peek()
	switch {
	case !ok:
		return nil
	case isWord(n.s, "uncapped"):
		p.i++
		return nil
	case !isWord(n.s, "up"):
		return nil
	}
	p.i++
	if to, ok := p.peek(); !ok || !isWord(to.s, "to") {
		end := n.end
		if ok {
			end = to.end // quote the word that stands where "to" should
		}
		return &fault{wantTo, span(n.pos, end)}
	}
	p.i++
	c, _ := p.peek() // none is an empty span: nothing after "up to"
	p.i++
	if f := duration(wantCeiling, c, &v.MaxDelay); f != nil {
		return f
	}
	if v.MaxDelay < v.BaseDelay {
		return &fault{wantHigher, span(n.pos, c.end)} // explain shows both
	}
	return nil
}

// jitter reads: ("full" | "equal" | "decorrelated") " jitter" |
// ("additive" | "symmetric") " jitter " fraction | "no jitter".
func (p *policyParser) jitter() *fault {
	v := &p.out.curve
	name := p.next()
	mode, ok := jitterMode(name.s)
	if !ok {
		return &fault{wantJitter, name}
	}
	if w, ok := p.peek(); !ok || !isWord(w.s, "jitter") {
		end := name.end
		if ok && w.s != "," {
			end = w.end // quote the word that stands where "jitter" should
		}
		return &fault{wantJitterWord, token{name.s, name.pos, end}}
	}
	p.i++
	v.JitterMode, v.Jitter = mode, 0
	if !mode.readsJitter() {
		return nil
	}
	f, ok := p.peek()
	if !ok || f.s == "," {
		return &fault{wantFraction, span(p.end(), p.end())}
	}
	p.i++
	j, err := strconv.ParseFloat(f.s, 64)
	if err != nil || !(j >= 0 && j <= 1) {
		return &fault{wantFraction, f}
	}
	v.Jitter = j
	return nil
}

// retries reads: n " retries", n ≥ 1 ("retry" is read too, whatever n).
func (p *policyParser) retries() *fault {
	t := p.next()
	word := ""
	if w, ok := p.peek(); ok && w.s != "," {
		p.i++
		word = w.s
	}
	clause := span(t.pos, p.end())
	r, err := strconv.Atoi(t.s)
	switch {
	case !isWord(word, "retries") && !isWord(word, "retry"):
		return &fault{wantRetries, clause}
	case !p.schedule:
		return &fault{wantSchedule, clause}
	case err != nil:
		return &fault{wantWhole, clause}
	case r < 1:
		return &fault{wantOne, clause}
	}
	p.out.retries = r
	return nil
}

// waiting reads: duration " of waiting".
func (p *policyParser) waiting() *fault {
	t := p.next()
	p.i++ // "of"
	if w, ok := p.peek(); !ok || !isWord(w.s, "waiting") {
		if ok && w.s != "," {
			p.i++ // quote the word that stands where "waiting" should
		}
		return &fault{wantWaiting, span(t.pos, p.end())}
	}
	p.i++
	if !p.schedule {
		return &fault{wantSchedule, span(t.pos, p.end())}
	}
	return duration(wantLimit, t, &p.out.waiting)
}

// duration reads t, a token or part of one, into d: a duration above
// zero, with its unit in any case. w is what it stands for; d is left as
// it was on a fault.
func duration(w want, t token, d *time.Duration) *fault {
	v, err := time.ParseDuration(strings.ToLower(t.s))
	if err != nil || v <= 0 {
		return &fault{w, t}
	}
	*d = v
	return nil
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
func (p *policyParser) end() int { return p.toks[p.i-1].end }

// explain returns the error for a fault: the text, what could not be read
// and what was wanted there, with a hint where one directs, and the form.
func (p *policyParser) explain(f *fault) error {
	q, c := p.quote(f.at.pos, f.at.end), p.out.curve
	var msg string
	switch w := f.want; {
	case f.at.pos == f.at.end && absent[w] != "":
		msg = absent[w]
	case quoted[w] != "":
		msg = fmt.Sprintf(quoted[w], q)
	case w == wantBase:
		msg = p.curveMissing()
		if msg == "" {
			msg = notDuration(q, f.at.s, `a base wait such as 100ms, or "no wait"`)
		}
	case w == wantCeiling:
		msg = notDuration(q, f.at.s, "a ceiling such as 30s (or leave it out for none)")
	case w == wantLimit:
		msg = notDuration(q, f.at.s, "a limit on the waiting such as 1m0s (or leave the clause out for none)")
	case w == wantHigher:
		msg = fmt.Sprintf(`%q: a ceiling below the base wait makes every wait %v; did you mean "%v up to %v"?`, q, c.MaxDelay, c.MaxDelay, c.BaseDelay)
	case w == wantJitter:
		msg = p.unknownJitter(q, f.at.s)
	case w == wantJitterWord:
		msg = fmt.Sprintf(`%q: want "%s jitter"`, q, strings.ToLower(f.at.s))
	case w == wantFraction && f.at.pos == f.at.end:
		msg = fmt.Sprintf(`%s jitter needs a fraction in [0, 1], such as "%s jitter 0.2"`, c.JitterMode, c.JitterMode)
	case w == wantFraction:
		msg = fmt.Sprintf("%s jitter fraction %q: want a number in [0, 1], such as 0.2", c.JitterMode, q)
	case w == wantRetries:
		msg = p.notRetries(q, p.tokenAt(f.at.pos))
	}
	form := valueForm
	if p.schedule {
		form = scheduleForm
	}
	return fmt.Errorf("backoff: policy %q: %s (the form: %q)", p.quote(0, len(p.text)), msg, form)
}

// absent says what a fault wanted where nothing was, for the wants whose
// message needs no more.
var absent = map[want]string{
	wantText:       "empty",
	wantMultiplier: "nothing after ×: want a multiplier such as 2",
	wantCeiling:    `nothing after "up to": want a ceiling such as 30s`,
	wantClause:     "nothing after the last comma",
}

// quoted says what a fault wanted of the part it quotes (the %q), for the
// wants whose message needs no more.
var quoted = map[want]string{
	wantMultiplier: "multiplier %q: want a number ≥ 1, such as 2 or 1.5",
	wantTo:         `%q: want "up to" and a ceiling such as 30s`,
	wantComma:      "cannot read %q: want a comma before the next clause",
	wantOnce:       "%q: a clause given twice",
	wantSchedule:   "%q: a Schedule's limit, not part of a Value",
	wantWhole:      `%q: want a whole number of retries, such as "5 retries"`,
	// Truthful in every container: left out, a Schedule has no limit, and
	// retry.Do, on a Schedule with no limit at all, its own 5.
	wantOne:     `%q: want at least 1; no text says "never retry" (for a single attempt, call once, without a retry loop), and with the clause left out the text sets no limit on retries (retry.Do then stops after 5, unless another limit is set)`,
	wantWaiting: `%q: want a limit such as "1m0s of waiting"`,
}

// notDuration says why s, quoted as q, is not a duration above zero: it
// does not parse, or is too long for a Duration, or is not above zero.
func notDuration(q, s, want string) string {
	if _, err := time.ParseDuration(strings.ToLower(s)); err != nil && isDuration(s) {
		return fmt.Sprintf("%q is longer than the longest duration, %v: want %s", q, maxDuration, want)
	}
	return fmt.Sprintf("%q is not a duration above zero: want %s", q, want)
}

// isDuration reports whether s is written as a duration is, numbers each
// with a unit: so that when time.ParseDuration refuses it, it is too long.
func isDuration(s string) bool {
	for s != "" {
		i := strings.IndexFunc(s, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
		if i <= 0 || !isDecimal(s[:i]) {
			return false // no number, or no unit after it
		}
		j := strings.IndexAny(s[i:], ".0123456789")
		if j < 0 {
			j = len(s) - i
		}
		if !isUnit(s[i : i+j]) {
			return false
		}
		s = s[i+j:]
	}
	return true
}

// curveMissing is the hint for a first word that is no base wait: a jitter
// or a retries clause where the curve should be ("full jitter", "ful
// jiter", "5 retries", "5 attempts"), naming what is misspelt or counted
// in attempts. It is "" for any other word.
func (p *policyParser) curveMissing() string {
	const missing = `the curve is missing: a policy starts with a base wait such as 100ms (or "no wait"), and the %s it after a comma, as in "100ms, %s"`
	first, next := p.toks[0], token{}
	if len(p.toks) > 1 {
		next = p.toks[1]
	}
	if isNumber(first.s) && isCountWord(next.s) {
		msg := fmt.Sprintf(missing, "retries follow", "5 retries")
		if !isWord(next.s, "retries") && !isWord(next.s, "retry") {
			msg += "; " + p.notRetries(p.quote(first.pos, next.end), 0) // "5 attempts", "5 retires"
		}
		return msg
	}
	name := strings.ToLower(first.s)
	if _, ok := jitterMode(name); !ok {
		if name, ok = nearJitter(name); !ok {
			return ""
		}
	}
	msg := fmt.Sprintf(missing, "jitter follows", name+" jitter")
	sep := "; misspelt: "
	if !isWord(first.s, name) {
		msg += fmt.Sprintf("%s%q for %q", sep, p.quote(first.pos, first.end), name)
		sep = ", "
	}
	if w := strings.ToLower(next.s); near(w, "jitter") {
		msg += fmt.Sprintf("%s%q for \"jitter\"", sep, p.quote(next.pos, next.end))
	}
	return msg
}

// unknownJitter is the error for a word, quoted as q, where a jitter's
// name should be: the name it is a near miss of, or the names there are.
func (p *policyParser) unknownJitter(q, word string) string {
	if name, ok := nearJitter(word); ok {
		return fmt.Sprintf("unknown word %q: did you mean %q? (a jitter is %s)", q, name, jitterNames())
	}
	if p.schedule {
		return fmt.Sprintf(`unknown word %q: want a jitter (%s), "N retries" or "D of waiting"`, q, jitterNames())
	}
	return fmt.Sprintf("unknown word %q: want a jitter (%s)", q, jitterNames())
}

// tokenAt returns the index of the first token that ends after pos: the
// token at pos, or the next one.
func (p *policyParser) tokenAt(pos int) int {
	return sort.Search(len(p.toks), func(i int) bool { return p.toks[i].end > pos })
}

// notRetries is the error for a number, token i, not followed by
// "retries": the clause, quoted as q, counted in attempts, a near miss of
// "retries", or something else.
func (p *policyParser) notRetries(q string, i int) string {
	n, word := p.toks[i], "" // a word, or "," or none: not "retries"
	if i+1 < len(p.toks) {
		word = strings.ToLower(p.toks[i+1].s)
	}
	r, err := strconv.Atoi(n.s)
	const attempts = "%q: the limit counts retries, which leave out the first call: "
	switch {
	case word != "attempts" && word != "attempt" && isCountWord(word):
		return fmt.Sprintf("unknown word %q: did you mean %q?", p.quote(p.toks[i+1].pos, p.toks[i+1].end), p.quote(n.pos, n.end)+" "+retriesWord(r))
	case word != "attempts" && word != "attempt":
		return fmt.Sprintf(`%q: want a number of retries, such as "5 retries"`, q)
	case err == nil && r > 1:
		return fmt.Sprintf(attempts+"%d attempts are \"%d %s\"", q, r, r-1, retriesWord(r-1))
	case err == nil && r == 1:
		return fmt.Sprintf(attempts+"1 attempt is no retry at all", q)
	}
	return fmt.Sprintf(attempts+`write the attempts less one, as "4 retries" for 5 attempts`, q)
}

// isCountWord reports whether w, in any case, is how a count of retries
// would be written, or a near miss of it: "retries", "retires", "attempts".
func isCountWord(w string) bool {
	w = strings.ToLower(w)
	return w == "retries" || w == "retry" || w == "attempts" || w == "attempt" || near(w, "retries") || near(w, "retry")
}

// retriesWord is "retry" for 1 and "retries" for any other count.
func retriesWord(n int) string {
	if n == 1 {
		return "retry"
	}
	return "retries"
}

// jitterMode returns the mode a jitter clause names, in any case: a name
// of modeNames, except JitterNone's "none", whose clause is "no jitter".
func jitterMode(name string) (mode JitterMode, ok bool) {
	if isWord(name, "no") {
		return JitterNone, true
	}
	for m, s := range modeNames {
		if JitterMode(m) != JitterNone && isWord(name, s) {
			return JitterMode(m), true
		}
	}
	return
}

// jitterNames lists the jitters a clause names, from modeNames: "full,
// equal, decorrelated, additive, symmetric or no jitter".
func jitterNames() string {
	var b strings.Builder
	for m, s := range modeNames {
		if JitterMode(m) != JitterNone {
			b.WriteString(s + ", ")
		}
	}
	return strings.TrimSuffix(b.String(), ", ") + " or no jitter"
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

// near reports whether a and b differ, by at most two edits (a letter
// added, dropped or changed) for words of five letters or more and one for
// shorter ones. Equal words are not near.
func near(a, b string) bool {
	limit := 1
	if len(b) >= 5 {
		limit = 2
	}
	return a != b && edits(a, b, limit)
}

// edits reports whether at most n edits turn a into b. A first letter the
// two share is never worth an edit, so each step either matches one or
// spends one; n ≤ 2 bounds the branching. A length that differs by more
// than n is decided at once, so a long word costs no more than a short one.
func edits(a, b string, n int) bool {
	switch {
	case len(a)-len(b) > n || len(b)-len(a) > n: // n < 0 too
		return false
	case a == "" || b == "":
		return true
	case a[0] == b[0]:
		return edits(a[1:], b[1:], n)
	}
	return edits(a[1:], b, n-1) || edits(a, b[1:], n-1) || edits(a[1:], b[1:], n-1)
}

// isWord reports whether s is the word w, in any case.
func isWord(s, w string) bool { return strings.EqualFold(s, w) }

// quoteMost is the most bytes of the text an error quotes in one piece.
const quoteMost = 64

// quote returns text[from:to] for an error to quote: whole, when it is
// at most quoteMost bytes. A longer part is cut after its last whole token
// within quoteMost bytes, and marked " …"; a first token longer than that
// on its own shows its first and last quoteMost/2 bytes around "…", which
// no token holds, so that what is quoted never reads as another token. No
// rune is cut in two; bytes that are not UTF-8 are quoted as they are.
func (p *policyParser) quote(from, to int) string {
	if to-from <= quoteMost {
		return p.text[from:to]
	}
	i := p.tokenAt(from)
	end := to
	if i < len(p.toks) {
		end = min(p.toks[i].end, to)
	}
	if end-from > quoteMost {
		s := p.text[from:end]
		s = s[:runeStart(s, quoteMost/2)] + "…" + s[runeStart(s, len(s)-quoteMost/2):]
		if end < to {
			s += " …"
		}
		return s
	}
	for i+1 < len(p.toks) && p.toks[i+1].end <= min(to, from+quoteMost) {
		i++
	}
	return p.text[from:p.toks[i].end] + " …"
}

// runeStart returns the start of the rune that byte i of s is part of: i
// itself, unless it lies inside a valid UTF-8 encoding of a rune. Bytes that
// are not UTF-8 are each their own rune, so it looks back at most
// utf8.UTFMax−1 bytes, and never before the start of s.
func runeStart(s string, i int) int {
	for j := i; j >= max(i-utf8.UTFMax+1, 0); j-- {
		if utf8.RuneStart(s[j]) {
			if _, n := utf8.DecodeRuneInString(s[j:]); j+n > i {
				return j
			}
			return i
		}
	}
	return i
}

// A token is a word, a number, a duration or one of ",", "×", "*": s as
// the reader reads it, and text[pos:end] as it was written.
type token struct {
	s        string
	pos, end int
}

// tokenize splits text at white space, and around ",", "×" and "*".
func tokenize(text string) []token {
	var toks []token
	start := -1
	flush := func(end int) {
		if start >= 0 {
			toks = append(toks, token{text[start:end], start, end})
			start = -1
		}
	}
	for i, r := range text {
		switch {
		case unicode.IsSpace(r):
			flush(i)
		case r == ',' || r == '×' || r == '*':
			flush(i)
			n := utf8.RuneLen(r)
			toks = append(toks, token{text[i : i+n], i, i + n})
		case start < 0:
			start = i
		}
	}
	flush(len(text))
	return joinUnits(toks)
}

// joinUnits reads numbers each followed by a duration unit as one duration,
// so that "100 ms" and "1 m 30 s" read as "100ms" and "1m30s" do; the
// token keeps the bytes it was written as, to quote them. Each piece is
// copied once: the work is linear in the text.
func joinUnits(toks []token) []token {
	out := toks[:0]
	for i := 0; i < len(toks); i++ {
		j := i // toks[i:j] are number, unit, number, unit…
		for j+1 < len(toks) && isDecimal(toks[j].s) && isUnit(toks[j+1].s) {
			j += 2
		}
		t := toks[i]
		if j > i {
			var b strings.Builder
			for _, piece := range toks[i:j] {
				b.WriteString(piece.s)
			}
			t = token{b.String(), t.pos, toks[j-1].end}
			i = j - 1
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

// isDecimal reports whether s is a number as time.ParseDuration reads one:
// digits, with at most one '.' among them, after at most one sign.
func isDecimal(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	digits, dots := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}

// isNumber reports whether strconv.ParseFloat reads s.
func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}
