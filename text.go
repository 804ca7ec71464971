package backoff

import (
	"fmt"
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
// BaseDelay of zero or less, "uncapped" for no MaxDelay, full jitter for a
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
// It is strict where a typo would silently change the waits: empty text, an
// unknown word, a duration that does not parse, is not above zero (write
// "no wait" for none, or leave the ceiling out) or is longer than a
// [time.Duration] holds, a ceiling below the base wait, a multiplier that
// is not a number ≥ 1 (+Inf is one), an additive or symmetric fraction
// missing or outside [0, 1], a clause given twice, or text left over is an
// error that quotes the part it could not read (its first 40 bytes) and
// shows the form; v is then left unchanged. A jitter where the curve should
// be ("full jitter" alone) is an error that says the curve is missing, and
// a near miss of a word ("ful", "jiter", "retires") one that names the word
// meant.
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
// then a clause for each limit that is set ("1 retry" in the singular). It
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
// none. "0 retries", a waiting limit that is not a duration above zero, and
// everything Value.UnmarshalText rejects are errors that quote the part that
// could not be read, and leave s unchanged.
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
		if v.MaxDelay > 0 {
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

// A token is a word, a number, a duration or one of ",", "×", "*": s as
// the reader reads it, and text[pos:end] as it was written.
type token struct {
	s        string
	pos, end int
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
		if sep := p.next(); sep.s != "," {
			return out, p.errorf("cannot read %q: want a comma before the next clause", p.text[sep.pos:])
		}
		first, ok := p.peek()
		if !ok {
			return out, p.errorf("nothing after the last comma")
		}
		clause, err := 0, error(nil)
		switch second, _ := p.peekAt(1); {
		case isWord(second.s, "of"):
			clause, err = 2, p.waiting(&out.waiting)
		case isNumber(first.s) || isWord(second.s, "retries") || isWord(second.s, "retry"):
			clause, err = 1, p.retries(&out.retries)
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
		if w, ok := p.peek(); ok && isNumber(t.s) && (near(strings.ToLower(w.s), "retries") || isWord(w.s, "retries") || isWord(w.s, "retry") || isWord(w.s, "attempts")) {
			return p.errorf("the curve is missing: a policy starts with a base wait such as 100ms (or \"no wait\"), and the retries follow it after a comma, as in \"100ms, 5 retries\"")
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
	return p.ceiling(v)
}

// ceiling reads what may follow the curve's multiplier: " up to " max or
// " uncapped".
func (p *policyParser) ceiling(v *Value) error {
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
		return p.errorf("%q: want \"up to\" and a ceiling such as 30s", p.text[n.pos:])
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
	if d < v.BaseDelay {
		return p.errorf("%q: a ceiling below the base wait makes every wait %v; did you mean \"%v up to %v\"?", p.text[n.pos:p.end()], d, d, v.BaseDelay)
	}
	v.MaxDelay = d
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
		if p.schedule {
			return p.errorf("unknown word %q: want a jitter (full, equal, decorrelated, additive, symmetric or no jitter), \"N retries\" or \"D of waiting\"", name.s)
		}
		return p.errorf("unknown word %q: want a jitter (full, equal, decorrelated, additive, symmetric or no jitter)", name.s)
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
	t, word := p.next(), ""
	if w, ok := p.peek(); ok && w.s != "," {
		p.i++
		word = strings.ToLower(w.s)
	}
	clause := p.text[t.pos:p.end()]
	r, err := strconv.Atoi(t.s)
	const attempts = "%q: the limit counts retries, which leave out the first call: "
	switch {
	case (word == "attempts" || word == "attempt") && r == 2:
		return p.errorf(attempts+"2 attempts are \"1 retry\"", clause)
	case (word == "attempts" || word == "attempt") && r > 2:
		return p.errorf(attempts+"%d attempts are \"%d retries\"", clause, r, r-1)
	case (word == "attempts" || word == "attempt") && r == 1:
		return p.errorf(attempts+"1 attempt is no retry at all", clause)
	case word == "attempts" || word == "attempt":
		return p.errorf(attempts+"write the attempts less one, as \"4 retries\" for 5 attempts", clause)
	case near(word, "retries") || near(word, "retry"):
		return p.errorf("unknown word %q: did you mean \"%s retries\"?", p.text[p.toks[p.i-1].pos:p.end()], t.s)
	case word != "retries" && word != "retry":
		return p.errorf("%q: want a number of retries, such as \"5 retries\"", clause)
	case !p.schedule:
		return p.errorf("%q: retries are a Schedule's limit, not part of a Value", clause)
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
	switch {
	case err != nil && isDuration(s):
		return 0, p.errorf("%q is longer than the longest duration, %v: want %s", s, maxDuration, want)
	case err != nil || d <= 0:
		return 0, p.errorf("%q is not a duration above zero: want %s", s, want)
	}
	return d, nil
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

// errorf returns the error for the text: what could not be read, and the
// form. The text, and every string argument (each a part of the text), is
// cut to its first 40 bytes, so that a megabyte of input makes an error of
// a line.
func (p *policyParser) errorf(format string, args ...any) error {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = excerpt(s)
		}
	}
	form := valueForm
	if p.schedule {
		form = scheduleForm
	}
	return fmt.Errorf("backoff: policy %q: %s (the form: %q)", excerpt(p.text), fmt.Sprintf(format, args...), form)
}

// excerpt is s cut to its first 40 bytes, never inside a rune, and "…".
func excerpt(s string) string {
	const most = 40
	if len(s) <= most {
		return s
	}
	return s[:runeStart(s, most)] + "…"
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

// jitterFirst is the error for text that starts with a jitter, or a word
// near one, where the curve should be ("full jitter", "ful jiter"): it says
// the curve is missing, and names what is misspelt. It returns nil when the
// first word is not a jitter's.
func (p *policyParser) jitterFirst(first token) error {
	name, ok := strings.ToLower(first.s), true
	if !isWord(name, "no") && !isJitterName(name) {
		if name, ok = nearJitter(first.s); !ok {
			return nil
		}
	}
	format := "the curve is missing: a policy starts with a base wait such as 100ms (or \"no wait\"), and the jitter follows it after a comma, as in \"100ms, %s jitter\""
	args := []any{name}
	sep := "; misspelt: "
	if !isWord(first.s, name) {
		format += sep + "%q for %q"
		args, sep = append(args, first.s, name), ", "
	}
	if w, ok := p.peek(); ok && !isWord(w.s, "jitter") && near(strings.ToLower(w.s), "jitter") {
		format += sep + "%q for \"jitter\""
		args = append(args, w.s)
	}
	return p.errorf(format, args...)
}

// isJitterName reports whether s (in lower case) names a jitter mode other
// than JitterNone, whose clause is "no jitter".
func isJitterName(s string) bool {
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
// spends one; n ≤ 2 bounds the branching.
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
