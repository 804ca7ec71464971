package backoff

// Tests of policies as text: String, MarshalText and UnmarshalText of
// JitterMode, Value and Schedule (text.go), and the error messages.

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestJitterModeText(t *testing.T) {
	for _, m := range definedModes {
		b, err := m.MarshalText()
		if err != nil || string(b) != m.String() {
			t.Errorf("%v.MarshalText() = %q, %v, want %q, nil", m, b, err, m.String())
		}
		for _, s := range []string{m.String(), strings.ToUpper(m.String()), strings.ToUpper(m.String()[:1]) + m.String()[1:]} {
			var got JitterMode = 200
			if err := got.UnmarshalText([]byte(s)); err != nil || got != m {
				t.Errorf("UnmarshalText(%q) = %v, %v, want %v, nil", s, got, err, m)
			}
		}
	}
	names := map[JitterMode]string{JitterFull: "full", JitterEqual: "equal", JitterDecorrelated: "decorrelated", JitterAdditive: "additive", JitterNone: "none", JitterSymmetric: "symmetric", 6: "unknown", 255: "unknown"}
	for m, want := range names {
		if got := m.String(); got != want {
			t.Errorf("JitterMode(%d).String() = %q, want %q", m, got, want)
		}
	}
	for _, m := range []JitterMode{6, 255} {
		if b, err := m.MarshalText(); err == nil {
			t.Errorf("JitterMode(%d).MarshalText() = %q, nil, want an error", m, b)
		}
	}
	for _, s := range []string{"", "unknown", "ful", "full ", "jitter", "0"} {
		m := JitterEqual
		err := m.UnmarshalText([]byte(s))
		if err == nil || m != JitterEqual || !strings.HasSuffix(err.Error(), `: want one of "full", "equal", "decorrelated", "additive", "none", "symmetric"`) {
			t.Errorf("UnmarshalText(%q) = %v, %v, want JitterEqual unchanged and an error naming the modes", s, m, err)
		}
	}
	// Through encoding/json and flag, the two readers users reach for.
	var cfg struct{ Mode JitterMode }
	if err := json.Unmarshal([]byte(`{"Mode":"Decorrelated"}`), &cfg); err != nil || cfg.Mode != JitterDecorrelated {
		t.Errorf("json.Unmarshal mode = %v, %v, want decorrelated", cfg.Mode, err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var m JitterMode
	fs.TextVar(&m, "jitter", JitterFull, "")
	if err := fs.Parse([]string{"-jitter=none"}); err != nil || m != JitterNone {
		t.Errorf("flag -jitter=none = %v, %v, want none", m, err)
	}
}

func TestValueString(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		v    Value
		want string
	}{
		{Value{BaseDelay: 100 * ms, MaxDelay: 30 * time.Second}, "100ms×2 up to 30s, full jitter"},
		{Value{BaseDelay: 100 * ms, Multiplier: 1.5, JitterMode: JitterEqual}, "100ms×1.5 uncapped, equal jitter"},
		{Value{BaseDelay: time.Second, MaxDelay: time.Minute, Multiplier: math.NaN(), JitterMode: JitterDecorrelated}, "1s×2 up to 1m0s, decorrelated jitter"},
		{Value{BaseDelay: time.Second, MaxDelay: time.Minute, Jitter: 7, JitterMode: JitterAdditive}, "1s×2 up to 1m0s, additive jitter 1"},
		{Value{BaseDelay: time.Second, Multiplier: 1, JitterMode: JitterNone}, "1s×1 uncapped, no jitter"},
		{Value{JitterMode: 9}, "no wait, full jitter"},
		// A ceiling below the base is the base too: the same waits, and
		// text that reads back.
		{Value{BaseDelay: time.Second, MaxDelay: 100 * ms, Multiplier: 3}, "100ms×3 up to 100ms, full jitter"},
		{Value{BaseDelay: time.Second, MaxDelay: -1}, "1s×2 uncapped, full jitter"},
	}
	for _, tt := range tests {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func BenchmarkValueString(b *testing.B) {
	v := benchValue(JitterFull)
	for b.Loop() {
		_ = v.String()
	}
}

func BenchmarkJitterModeText(b *testing.B) {
	var m JitterMode
	text := []byte("Decorrelated")
	for b.Loop() {
		_ = m.UnmarshalText(text)
		_, _ = m.MarshalText()
	}
}

func TestPolicyTextCanonical(t *testing.T) {
	const ms = time.Millisecond
	values := []struct {
		v    Value
		want string
	}{
		{Value{BaseDelay: 100 * ms, MaxDelay: 30 * time.Second}, "100ms×2 up to 30s, full jitter"},
		{Value{BaseDelay: time.Second, MaxDelay: time.Minute, Multiplier: 1.5, JitterMode: JitterDecorrelated}, "1s×1.5 up to 1m0s, decorrelated jitter"},
		{Value{BaseDelay: 5 * time.Second, Multiplier: 1, JitterMode: JitterNone}, "5s×1 uncapped, no jitter"},
		{Value{BaseDelay: time.Second, MaxDelay: time.Minute, Jitter: 0.2, JitterMode: JitterAdditive}, "1s×2 up to 1m0s, additive jitter 0.2"},
		{Value{BaseDelay: time.Second, MaxDelay: 144 * time.Second, Multiplier: 1.6, Jitter: 0.2, JitterMode: JitterSymmetric}, "1s×1.6 up to 2m24s, symmetric jitter 0.2"},
		{Value{BaseDelay: time.Second, Jitter: -3, JitterMode: JitterSymmetric}, "1s×2 uncapped, symmetric jitter 0"},
		{Value{}, "no wait, full jitter"},
		{Value{BaseDelay: -1, MaxDelay: time.Second, Multiplier: 3, JitterMode: JitterEqual}, "no wait, equal jitter"},
		{Value{BaseDelay: 1, MaxDelay: -5, Multiplier: math.Inf(1), Jitter: math.NaN(), JitterMode: JitterAdditive}, "1ns×+Inf uncapped, additive jitter 0"},
		{Value{BaseDelay: math.MaxInt64, Multiplier: 1e300, JitterMode: 200}, "2562047h47m16.854775807s×1e+300 uncapped, full jitter"},
	}
	for _, tt := range values {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.v, got, tt.want)
		}
		if b, err := tt.v.MarshalText(); string(b) != tt.want || err != nil {
			t.Errorf("%#v.MarshalText() = %q, %v, want %q, nil", tt.v, b, err, tt.want)
		}
	}
	curve := Value{BaseDelay: 100 * ms, MaxDelay: 30 * time.Second}
	schedules := []struct {
		s    Schedule
		want string
	}{
		{Schedule{Curve: curve, MaxRetries: 5, MaxElapsed: time.Minute}, "100ms×2 up to 30s, full jitter, 5 retries, 1m0s of waiting"},
		{Schedule{Curve: curve, MaxRetries: 1}, "100ms×2 up to 30s, full jitter, 1 retry"},
		{Schedule{Curve: curve, MaxRetries: -3, MaxElapsed: 90 * time.Second}, "100ms×2 up to 30s, full jitter, 1m30s of waiting"},
		{Schedule{Curve: curve, MaxElapsed: -1, Deadline: time.Unix(1, 0), Rand: rand.New(rand.NewPCG(1, 1))}, "100ms×2 up to 30s, full jitter"},
		{Schedule{}, "no wait, full jitter"},
	}
	for _, tt := range schedules {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("Schedule.String() = %q, want %q", got, tt.want)
		}
		if b, err := tt.s.MarshalText(); string(b) != tt.want || err != nil {
			t.Errorf("Schedule.MarshalText() = %q, %v, want %q, nil", b, err, tt.want)
		}
	}
}

// TestPolicyTextAccepted reads the lenient spellings: each must give the
// canonical policy beside it.
func TestPolicyTextAccepted(t *testing.T) {
	tests := []struct{ in, want string }{
		{"100ms×2 up to 30s, full jitter", "100ms×2 up to 30s, full jitter"},
		{"100MS×2 UP TO 30S, FULL JITTER", "100ms×2 up to 30s, full jitter"},
		{"  100ms  ×  2\tup   to\n30s ,full   jitter  ", "100ms×2 up to 30s, full jitter"},
		{"100ms x 2 up to 30s", "100ms×2 up to 30s, full jitter"},
		{"100msx2 up to 30s", "100ms×2 up to 30s, full jitter"},
		{"100ms X2 up to 30s", "100ms×2 up to 30s, full jitter"},
		{"100ms*2 up to 30s", "100ms×2 up to 30s, full jitter"},
		{"100ms", "100ms×2 uncapped, full jitter"},
		{"100ms up to 30s", "100ms×2 up to 30s, full jitter"},
		{"100ms×1.5", "100ms×1.5 uncapped, full jitter"},
		{"100ms×1.5 uncapped", "100ms×1.5 uncapped, full jitter"},
		{"1m30s×3 up to 1H", "1m30s×3 up to 1h0m0s, full jitter"},
		{"1.5s up to 1M", "1.5s×2 up to 1m0s, full jitter"},
		{"2us×1 up to 500US", "2µs×1 up to 500µs, full jitter"},
		{"1s×1e0 up to 1s", "1s×1 up to 1s, full jitter"},
		{"1s×+Inf up to 1m", "1s×+Inf up to 1m0s, full jitter"},
		{"1s×inf", "1s×+Inf uncapped, full jitter"},
		{"10ms up to 10ms", "10ms×2 up to 10ms, full jitter"}, // a ceiling at the base is a constant wait
		{"100ms, equal jitter", "100ms×2 uncapped, equal jitter"},
		{"100ms, Decorrelated Jitter", "100ms×2 uncapped, decorrelated jitter"},
		{"100ms, no jitter", "100ms×2 uncapped, no jitter"},
		{"100ms, additive jitter 0.25", "100ms×2 uncapped, additive jitter 0.25"},
		{"100ms, additive jitter 0", "100ms×2 uncapped, additive jitter 0"},
		{"100ms, additive jitter 1", "100ms×2 uncapped, additive jitter 1"},
		{"100ms, additive jitter .5", "100ms×2 uncapped, additive jitter 0.5"},
		{"1s x1.6 up to 2m24s, Symmetric Jitter 0.2", "1s×1.6 up to 2m24s, symmetric jitter 0.2"},
		{"500ms×1.5 up to 90s, symmetric jitter 0.5", "500ms×1.5 up to 1m30s, symmetric jitter 0.5"},
		{"no wait", "no wait, full jitter"},
		{"NO WAIT, no jitter", "no wait, no jitter"},
		{"no wait, additive jitter 0.5", "no wait, additive jitter 0.5"},
		{"100 ms", "100ms×2 uncapped, full jitter"},
		{"100 ms x 2 up to 30 s", "100ms×2 up to 30s, full jitter"},
		{"1 m 30 s ×3 up to 1 H", "1m30s×3 up to 1h0m0s, full jitter"},
		{"1.5 s×1.5", "1.5s×1.5 uncapped, full jitter"},
		{"+1 s", "1s×2 uncapped, full jitter"},
		{"500 µs up to 2 ms", "500µs×2 up to 2ms, full jitter"},
	}
	for _, tt := range tests {
		v := Value{BaseDelay: 7, MaxDelay: 9, Multiplier: 5, Jitter: 0.7, JitterMode: JitterEqual}
		if err := v.UnmarshalText([]byte(tt.in)); err != nil || v.String() != tt.want {
			t.Errorf("Value.UnmarshalText(%q) = %q, %v, want %q, nil", tt.in, v, err, tt.want)
		}
		var s Schedule
		if err := s.UnmarshalText([]byte(tt.in)); err != nil || s.String() != tt.want {
			t.Errorf("Schedule.UnmarshalText(%q) = %q, %v, want %q, nil", tt.in, s, err, tt.want)
		}
	}
	schedules := []struct{ in, want string }{
		{"100ms×2 up to 30s, full jitter, 5 retries, 1m0s of waiting", "100ms×2 up to 30s, full jitter, 5 retries, 1m0s of waiting"},
		{"100ms, 1m of waiting, 5 RETRIES, equal jitter", "100ms×2 uncapped, equal jitter, 5 retries, 1m0s of waiting"},
		{"100ms, 1 retry", "100ms×2 uncapped, full jitter, 1 retry"},
		{"100ms, 3 retry", "100ms×2 uncapped, full jitter, 3 retries"},
		{"100ms, 1 retries", "100ms×2 uncapped, full jitter, 1 retry"},
		{"100ms,5 retries,90S of waiting", "100ms×2 uncapped, full jitter, 5 retries, 1m30s of waiting"},
		{"no wait, 2 retries", "no wait, full jitter, 2 retries"},
		{"100ms, +7 retries", "100ms×2 uncapped, full jitter, 7 retries"},
		{"100ms, 5 retry", "100ms×2 uncapped, full jitter, 5 retries"},
		{"100 ms, 1 m 30 s of waiting, 2 retries", "100ms×2 uncapped, full jitter, 2 retries, 1m30s of waiting"},
	}
	for _, tt := range schedules {
		var s Schedule
		if err := s.UnmarshalText([]byte(tt.in)); err != nil || s.String() != tt.want {
			t.Errorf("Schedule.UnmarshalText(%q) = %q, %v, want %q, nil", tt.in, s, err, tt.want)
		}
	}
	// The fields themselves, not only their String.
	var s Schedule
	if err := s.UnmarshalText([]byte("250ms×1.5 up to 1m, additive jitter 0.3, 4 retries, 2m of waiting")); err != nil {
		t.Fatal(err)
	}
	want := Schedule{
		Curve:      Value{BaseDelay: 250 * time.Millisecond, MaxDelay: time.Minute, Multiplier: 1.5, Jitter: 0.3, JitterMode: JitterAdditive},
		MaxRetries: 4,
		MaxElapsed: 2 * time.Minute,
	}
	if s != want {
		t.Errorf("UnmarshalText = %#v, want %#v", s, want)
	}
}

// TestPolicyTextRejected: each input is an error that quotes what could not
// be read, and leaves the receiver as it was, state included.
func TestPolicyTextRejected(t *testing.T) {
	tests := []struct {
		in       string
		contains string
	}{
		{"", "empty"},
		{" \t ", "empty"},
		{"100zz", `"100zz" is not a duration`},
		{"100", `"100" is not a duration`},
		{"0s", `"0s" is not a duration above zero`},
		{"-1s", `"-1s" is not a duration above zero`},
		{"fast", `"fast" is not a duration`},
		{"no", `the curve is missing`},
		{"full jitter", `the curve is missing: a policy starts with a base wait such as 100ms (or "no wait"), and the jitter follows it after a comma, as in "100ms, full jitter"`},
		{"full jiter", `the curve is missing: a policy starts with a base wait such as 100ms (or "no wait"), and the jitter follows it after a comma, as in "100ms, full jitter"; misspelt: "jiter" for "jitter"`},
		{"ful jitter, 3 retries", `as in "100ms, full jitter"; misspelt: "ful" for "full"`},
		{"Equl jittr", `as in "100ms, equal jitter"; misspelt: "Equl" for "equal", "jittr" for "jitter"`},
		{"decorelated", `misspelt: "decorelated" for "decorrelated"`},
		{"no jitter", `as in "100ms, no jitter"`},
		{"symetric jitter 0.2", `as in "100ms, symmetric jitter"; misspelt: "symetric" for "symmetric"`},
		{"100ms, ful jitter", `unknown word "ful": did you mean "full"?`},
		{"100ms, FULLL jitter", `unknown word "FULLL": did you mean "full"?`},
		{"EQUL JITER", `misspelt: "EQUL" for "equal", "JITER" for "jitter"`},
		{"100ms, aditive jitter 0.2", `unknown word "aditive": did you mean "additive"?`},
		{"100 zz", `"100" is not a duration`},
		{"100 ms ms", `cannot read "ms"`},
		{"100ms×0.5", `multiplier "0.5"`},
		{"100ms×0", `multiplier "0"`},
		{"100ms×-2", `multiplier "-2"`},
		{"100ms×NaN", `multiplier "NaN"`},
		{"100ms×two", `multiplier "two"`},
		{"100ms×", "nothing after ×"},
		{"100ms x", "nothing after ×"},
		{"100ms×2 up 30s", `"up 30s"`},
		{"100ms up to", `nothing after "up to"`},
		{"100ms up to 0s", `"0s" is not a duration above zero`},
		{"100ms up to never", `"never" is not a duration`},
		{"100ms up to 30s uncapped", `cannot read "uncapped"`},
		{"100ms×2×3", `cannot read "×3"`},
		{"100ms full jitter", `cannot read "full jitter": want a comma`},
		{"100ms, fulll jitter", `unknown word "fulll": did you mean "full"? (a jitter is full, equal, decorrelated, additive, symmetric or no jitter)`},
		{"100msx0.5", `multiplier "0.5": want a number ≥ 1`},
		{"100ms x0.5", `multiplier "0.5": want a number ≥ 1`},
		{"100ms, 0 attempts", `"0 attempts": the limit counts retries, which leave out the first call: write the attempts less one`},
		{"5 ATTEMPTS", `the curve is missing: a policy starts with a base wait such as 100ms (or "no wait"), and the retries follow it after a comma, as in "100ms, 5 retries"; "5 ATTEMPTS": the limit counts retries, which leave out the first call: 5 attempts are "4 retries"`},
		{"100ms,5 retires", `unknown word "retires": did you mean "5 retries"?`},
		{".s", `".s" is not a duration above zero`},
		{"-1 s", `"-1 s" is not a duration above zero`},
		{"100ms, none jitter", `unknown word "none"`},
		{"100ms, full", `"full": want "full jitter"`},
		{"100ms, full jitters", `"full jitters": want "full jitter"`},
		{"100ms, equal, 5 retries", `"equal": want "equal jitter"`},
		{"100ms, additive jitter", "additive jitter needs a fraction"},
		{"100ms, additive jitter, 3 retries", "additive jitter needs a fraction"},
		{"100ms, additive jitter 1.5", `additive jitter fraction "1.5"`},
		{"100ms, additive jitter -0.1", `additive jitter fraction "-0.1"`},
		{"100ms, additive jitter NaN", `additive jitter fraction "NaN"`},
		{"100ms, symmetric jitter", "symmetric jitter needs a fraction"},
		{"100ms, symmetric jitter 1.01", `symmetric jitter fraction "1.01"`},
		{"100ms, symmetric", `"symmetric": want "symmetric jitter"`},
		{"100ms, full jitter 0.2", `cannot read "0.2"`},
		{"100ms, full jitter, equal jitter", `"equal jitter": a clause given twice`},
		{"100ms, 0 retries", `"0 retries": want at least 1; no text says "never retry" (for a single attempt, call once, without a retry loop), and with the clause left out the text sets no limit on retries (retry.Do then stops after 5, unless another limit is set)`},
		{"100ms, -2 retries", `"-2 retries"`},
		{"100ms, 2.5 retries", `"2.5 retries": want a whole number`},
		{"100ms, 99999999999999999999 retries", `"99999999999999999999 retries"`},
		{"100ms, 5 retries, 6 retries", `"6 retries": a clause given twice`},
		{"100ms, 0s of waiting", `"0s" is not a duration above zero`},
		{"100ms, 1m of", `"1m of": want a limit such as "1m0s of waiting"`},
		{"100ms, 1m of waiting, 2m of waiting", `"2m of waiting": a clause given twice`},
		{"100ms,", "nothing after the last comma"},
		{"100ms, , full jitter", `unknown word ","`},
		{"100ms trailing", `cannot read "trailing"`},
		{"100ms, full jitter extra", `cannot read "extra"`},
		{"no wait×2", `cannot read "×2"`},
		{"no wait up to 1s", `cannot read "up to 1s"`},
		{"x2", `"x2" is not a duration`},
		{"5x2", `"5" is not a duration`},
		{"100ms, 1m of banana", `"1m of banana": want a limit such as "1m0s of waiting"`},
		{"100ms, 1m of waiting of waiting", `cannot read "of waiting"`},
		// A ceiling below the base: every wait would be the ceiling.
		{"1s up to 10ms", `"up to 10ms": a ceiling below the base wait makes every wait 10ms; did you mean "10ms up to 1s"?`},
		{"500us×1 up to 2US", `"up to 2US": a ceiling below the base wait makes every wait 2µs`},
		// Too long for a Duration, said as such.
		{"9999999999h", `"9999999999h" is longer than the longest duration, 2562047h47m16.854775807s`},
		{"1s up to 9999999999h", `"9999999999h" is longer than the longest duration`},
		{"100ms, 2562048h of waiting", `"2562048h" is longer than the longest duration`},
		{"1.2.3s", `"1.2.3s" is not a duration above zero`},
		// The word meant, for a number's clause.
		{"100ms, 5 retires", `unknown word "retires": did you mean "5 retries"?`},
		{"100ms, 5 tries", `unknown word "tries": did you mean "5 retries"?`},
		{"100ms, 1 retyr", `unknown word "retyr": did you mean "1 retry"?`},
		{"100ms, 5 attempts", `"5 attempts": the limit counts retries, which leave out the first call: 5 attempts are "4 retries"`},
		{"100ms, 1 attempt", `"1 attempt": the limit counts retries, which leave out the first call: 1 attempt is no retry at all`},
		{"100ms, 2.5 ATTEMPTS", `"2.5 ATTEMPTS": the limit counts retries, which leave out the first call: write the attempts less one, as "4 retries" for 5 attempts`},
		{"100ms, 5 banana", `"5 banana": want a number of retries, such as "5 retries"`},
		{"100ms, two retries", `"two retries": want a whole number of retries`},
		{"3 retries", `the curve is missing: a policy starts with a base wait such as 100ms (or "no wait"), and the retries follow it after a comma, as in "100ms, 5 retries"`},
		{"5 attempts", `the curve is missing: a policy starts with a base wait such as 100ms (or "no wait"), and the retries follow it after a comma, as in "100ms, 5 retries"; "5 attempts": the limit counts retries, which leave out the first call: 5 attempts are "4 retries"`},
		{"3 retires, full jitter", `the curve is missing: a policy starts with a base wait such as 100ms (or "no wait"), and the retries follow it after a comma, as in "100ms, 5 retries"; unknown word "retires": did you mean "3 retries"?`},
		{"1 retry", `the curve is missing: a policy starts with a base wait such as 100ms (or "no wait"), and the retries follow it after a comma, as in "100ms, 5 retries" (the form`},
		{"5 apples", `"5" is not a duration above zero`},
		{"100ms, 2 attempts", `"2 attempts": the limit counts retries, which leave out the first call: 2 attempts are "1 retry"`},
		{"100ms, 3 attempts", `"3 attempts": the limit counts retries, which leave out the first call: 3 attempts are "2 retries"`},
		{"1h9999999999h", `"1h9999999999h" is longer than the longest duration`},
		{"9999999999H", `"9999999999H" is longer than the longest duration`},
		{"100ms, 5", `"5": want a number of retries`},
		{"100ms, 5, full jitter", `"5": want a number of retries`},
	}
	r := rand.New(rand.NewPCG(1, 2))
	template := Schedule{Curve: Value{BaseDelay: time.Second, JitterMode: JitterEqual}, MaxRetries: 9, MaxElapsed: time.Hour, Deadline: time.Unix(5, 0), Rand: r}
	for _, tt := range tests {
		s := template
		s.Next()
		s.Override(time.Minute)
		before := s
		err := s.UnmarshalText([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.contains) || !strings.HasPrefix(err.Error(), "backoff: ") {
			t.Errorf("Schedule.UnmarshalText(%q) = %v, want an error containing %q", tt.in, err, tt.contains)
		}
		if s != before {
			t.Errorf("Schedule.UnmarshalText(%q) changed the receiver: %#v, want %#v", tt.in, s, before)
		}
		if err != nil && !strings.Contains(err.Error(), scheduleForm) {
			t.Errorf("Schedule.UnmarshalText(%q) = %v, want the form %q shown", tt.in, err, scheduleForm)
		}
		v := template.Curve
		err = v.UnmarshalText([]byte(tt.in))
		if err == nil || !(strings.Contains(err.Error(), tt.contains) || strings.Contains(err.Error(), "a Schedule's limit, not part of a Value")) || v != template.Curve {
			t.Errorf("Value.UnmarshalText(%q) = %v, %v, want an error containing %q and the Value unchanged", tt.in, v, err, tt.contains)
		}
	}
	// An unknown word, near no jitter's name: a Schedule's error names its
	// limits too, a Value's not.
	var sch Schedule
	if err := sch.UnmarshalText([]byte("100ms, banana jitter")); err == nil || !strings.Contains(err.Error(), `"N retries" or "D of waiting"`) {
		t.Errorf("Schedule.UnmarshalText(unknown word) = %v, want the limits named", err)
	}
	var val Value
	if err := val.UnmarshalText([]byte("100ms, banana jitter")); err == nil || strings.Contains(err.Error(), "retries") {
		t.Errorf("Value.UnmarshalText(unknown word) = %v, want no Schedule limits named", err)
	}
	// The limits are a Schedule's, not a Value's.
	for _, in := range []string{"100ms, 5 retries", "100ms, 1m of waiting"} {
		v := template.Curve
		if err := v.UnmarshalText([]byte(in)); err == nil || !strings.Contains(err.Error(), "not part of a Value") || v != template.Curve || !strings.Contains(err.Error(), valueForm) {
			t.Errorf("Value.UnmarshalText(%q) = %v, want an error saying it is a Schedule's limit", in, err)
		}
	}
}

// TestPolicyTextErrorBounded: an error quotes at most quoteMost bytes of
// the text in one piece, never a rune cut in two, so that a megabyte of
// input makes an error of a few lines.
func TestPolicyTextErrorBounded(t *testing.T) {
	z := strings.Repeat("z", 32)
	for _, tt := range []struct{ in, quoted string }{
		{z + z, z + z + `"`},
		{z + "z" + z, z + "…" + z + `"`},
		{z[1:] + "é" + z, z[1:] + "…" + z + `"`},               // é is not cut in two at the head
		{z + z[1:] + "é" + z[2:], z + "…" + "é" + z[2:] + `"`}, // nor at the tail
		{z[3:] + "😀" + z + z[:8], z[3:] + "…" + z + `"`},       // nor a rune of 4 bytes
		{z[2:] + "é\x80" + z + z[:8], z[2:] + "é…" + z + `"`},  // a stray byte after a rune is cut alone
		{z + z + " jitter", z + z + ` …"`},                     // a token of 64 bytes is quoted whole
		{z + z + "z jitter", z + "…" + z + ` …"`},              // a longer one by its ends
		{z + z[4:] + " abc def", z + z[4:] + ` abc …"`},        // whole tokens up to byte 64
	} {
		var v Value
		if err := v.UnmarshalText([]byte(tt.in)); err == nil || !strings.Contains(err.Error(), `policy "`+tt.quoted) {
			t.Errorf("Value.UnmarshalText(%d bytes) = %v, want the text quoted as %q", len(tt.in), err, tt.quoted)
		}
	}
	for _, in := range []string{
		strings.Repeat("x", 1<<20),
		strings.Repeat("\xb5", 1<<20),
		strings.Repeat(" ", 1<<20),
		"100ms, " + strings.Repeat("é", 1<<19) + " jitter",
		"100ms, 5 retries, " + strings.Repeat("9", 1<<20) + "h of waiting",
		"100ms, " + strings.Repeat("5 ", 1<<19) + "retires",
		"1s, full jitter" + strings.Repeat(" \xb5", 1<<19),
		strings.Repeat("\xb5", 1<<20) + " jiter",
	} {
		var s Schedule
		err := s.UnmarshalText([]byte(in))
		if err == nil || len(err.Error()) > 1024 || !utf8.ValidString(err.Error()) || !strings.Contains(err.Error(), "…") {
			t.Errorf("Schedule.UnmarshalText(%d bytes) = %.1100v (%d bytes), want an error of at most 1 KiB, valid UTF-8, with excerpts", len(in), err, len(fmt.Sprint(err)))
		}
	}
}

// TestScheduleUnmarshalTextResets: reading a policy starts the sequence
// over, and keeps Rand and Deadline, which are not policy.
func TestScheduleUnmarshalTextResets(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	deadline := time.Unix(1e9, 0)
	s := Schedule{Curve: Value{BaseDelay: time.Second, JitterMode: JitterNone}, MaxRetries: 1, Deadline: deadline, Rand: r}
	s.Next()
	if _, ok := s.Next(); ok {
		t.Fatal("Next() past MaxRetries = true")
	}
	s.Override(time.Hour)
	if err := s.UnmarshalText([]byte("10ms, no jitter, 3 retries")); err != nil {
		t.Fatal(err)
	}
	if s.Rand != r || s.Deadline != deadline || s.Attempt() != 0 || s.Elapsed() != 0 {
		t.Fatalf("after UnmarshalText: Rand %p, Deadline %v, Attempt %d, Elapsed %v; want %p, %v, 0, 0", s.Rand, s.Deadline, s.Attempt(), s.Elapsed(), r, deadline)
	}
	s.Deadline = time.Time{}
	for i, want := range []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond} {
		if d, ok := s.Next(); d != want || !ok {
			t.Fatalf("Next() #%d = %v, %v, want %v, true (override dropped, curve from the start)", i+1, d, ok, want)
		}
	}
}

// randomValue draws every field from raw bits.
func randomValue(r *rand.Rand) Value {
	v := Value{
		BaseDelay:  time.Duration(r.Uint64()) >> uint(r.IntN(64)),
		MaxDelay:   time.Duration(r.Uint64()) >> uint(r.IntN(64)),
		Multiplier: math.Float64frombits(r.Uint64()),
		Jitter:     math.Float64frombits(r.Uint64()),
		JitterMode: JitterMode(r.Uint32()),
	}
	switch r.IntN(4) {
	case 0:
		v.Multiplier = 1 + r.Float64()*r.Float64()
		v.Jitter = r.Float64()
	case 1:
		v.JitterMode = JitterMode(r.IntN(len(modeNames)))
		v.Multiplier = hostileFloats[r.IntN(len(hostileFloats))]
		v.Jitter = hostileFloats[r.IntN(len(hostileFloats))]
	}
	return v
}

// checkValueRoundTrip checks the law: MarshalText succeeds, UnmarshalText
// reads it, and the result has the same String and Bounds.
func checkValueRoundTrip(t *testing.T, v Value) {
	t.Helper()
	b, err := v.MarshalText()
	if err != nil {
		t.Fatalf("%#v.MarshalText() = %v", v, err)
	}
	var got Value
	if err := got.UnmarshalText(b); err != nil {
		t.Fatalf("UnmarshalText(%q) = %v, want it to read what MarshalText wrote", b, err)
	}
	if got.String() != v.String() {
		t.Fatalf("round trip of %#v: String %q, want %q", v, got, v)
	}
	for _, a := range hostileAttempts {
		if l0, h0 := v.Bounds(a); true {
			if l1, h1 := got.Bounds(a); l0 != l1 || h0 != h1 {
				t.Fatalf("round trip %q: Bounds(%d) = [%d, %d], want [%d, %d] as %#v has", b, a, l1, h1, l0, h0, v)
			}
		}
	}
}

func TestPolicyTextRoundTrip(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(13, 14))
	sampled := sample()
	for _, mode := range allModes {
		for _, b := range hostileDurations {
			for _, c := range hostileDurations {
				for _, m := range hostileFloats {
					if !sampled() {
						continue
					}
					checkValueRoundTrip(t, Value{BaseDelay: b, MaxDelay: c, Multiplier: m, Jitter: m - 1, JitterMode: mode})
				}
			}
		}
	}
	for range 20000 {
		v := randomValue(r)
		checkValueRoundTrip(t, v)
		s := Schedule{Curve: v, MaxRetries: int(r.Uint64()) >> uint(r.IntN(64)), MaxElapsed: time.Duration(r.Uint64()) >> uint(r.IntN(64))}
		checkScheduleRoundTrip(t, s)
	}
}

// checkScheduleRoundTrip checks the law for a Schedule: the same String,
// and the same configuration read from a fresh start.
func checkScheduleRoundTrip(t *testing.T, s Schedule) {
	t.Helper()
	b, err := s.MarshalText()
	if err != nil {
		t.Fatalf("Schedule.MarshalText() = %v", err)
	}
	var got Schedule
	if err := got.UnmarshalText(b); err != nil {
		t.Fatalf("Schedule.UnmarshalText(%q) = %v, want it to read what MarshalText wrote", b, err)
	}
	if got.String() != s.String() || max(got.MaxRetries, 0) != max(s.MaxRetries, 0) || max(got.MaxElapsed, 0) != max(s.MaxElapsed, 0) {
		t.Fatalf("round trip of %q: %q, MaxRetries %d, MaxElapsed %v; want MaxRetries %d, MaxElapsed %v", b, got, got.MaxRetries, got.MaxElapsed, s.MaxRetries, s.MaxElapsed)
	}
	// The same waits, drawn from the same seed, from a fresh start.
	s.Reset()
	s.Rand, got.Rand = rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	for i := range 12 {
		d0, ok0 := s.Next()
		d1, ok1 := got.Next()
		if d0 != d1 || ok0 != ok1 {
			t.Fatalf("round trip of %q: Next() #%d = %v, %v, want %v, %v", b, i+1, d1, ok1, d0, ok0)
		}
	}
}

// TestPolicyTextReaders reads a policy the ways users do: encoding/json, a
// flag, an environment variable.
func TestPolicyTextReaders(t *testing.T) {
	var cfg struct {
		Retry backoff `json:"retry"`
		Curve Value   `json:"curve"`
	}
	in := `{"retry": "100ms x 2 up to 30s, equal jitter, 5 retries", "curve": "1s, no jitter"}`
	if err := json.Unmarshal([]byte(in), &cfg); err != nil {
		t.Fatal(err)
	}
	if got := cfg.Retry.String(); got != "100ms×2 up to 30s, equal jitter, 5 retries" {
		t.Errorf("json: retry = %q", got)
	}
	if cfg.Curve != (Value{BaseDelay: time.Second, MaxDelay: math.MaxInt64, Multiplier: 2, JitterMode: JitterNone}) {
		t.Errorf("json: curve = %#v", cfg.Curve)
	}
	out, err := json.Marshal(cfg)
	if want := `{"retry":"100ms×2 up to 30s, equal jitter, 5 retries","curve":"1s×2 uncapped, no jitter"}`; err != nil || string(out) != want {
		t.Errorf("json.Marshal = %s, %v, want %s", out, err, want)
	}
	if err := json.Unmarshal([]byte(`{"retry": "100ms, fulll jitter"}`), &cfg); err == nil || !strings.Contains(err.Error(), `unknown word "fulll"`) {
		t.Errorf("json with a typo: %v, want the parse error", err)
	}

	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var s Schedule
	fs.TextVar(&s, "retry", Schedule{Curve: Value{BaseDelay: time.Second}, MaxRetries: 3}, "")
	if s.String() != "1s×2 uncapped, full jitter, 3 retries" {
		t.Errorf("flag default = %q", s)
	}
	if err := fs.Parse([]string{"-retry", "50ms up to 1s, decorrelated jitter, 1m of waiting"}); err != nil || s.String() != "50ms×2 up to 1s, decorrelated jitter, 1m0s of waiting" {
		t.Errorf("flag -retry = %q, %v", s, err)
	}
	if err := fs.Parse([]string{"-retry", "50ms, 0 retries"}); err == nil {
		t.Errorf("flag -retry '50ms, 0 retries' = nil error")
	}

	t.Setenv("BACKOFF_TEST_POLICY", "2s×1 up to 2s, no jitter, 2 retries")
	if err := s.UnmarshalText([]byte(os.Getenv("BACKOFF_TEST_POLICY"))); err != nil || s.String() != "2s×1 up to 2s, no jitter, 2 retries" {
		t.Errorf("from the environment: %q, %v", s, err)
	}
}

// identical reports whether a and b hold the same bits in every field, NaN
// included, which == does not.
func identical(a, b Schedule) bool {
	fa, fb := math.Float64bits(a.Curve.Multiplier), math.Float64bits(b.Curve.Multiplier)
	ja, jb := math.Float64bits(a.Curve.Jitter), math.Float64bits(b.Curve.Jitter)
	a.Curve.Multiplier, a.Curve.Jitter, b.Curve.Multiplier, b.Curve.Jitter = 0, 0, 0, 0
	return a == b && fa == fb && ja == jb
}

// backoff names a Schedule field the way a config struct would.
type backoff = Schedule

func FuzzText(f *testing.F) {
	f.Add("100ms×2 up to 30s, full jitter, 5 retries, 1m0s of waiting", int64(100*time.Millisecond), int64(30*time.Second), math.Float64bits(2), math.Float64bits(0.2), uint8(0), 5, int64(time.Minute))
	f.Add("1s x 1.5, additive jitter 0.3", int64(math.MaxInt64), int64(0), math.Float64bits(math.Inf(1)), math.Float64bits(math.NaN()), uint8(3), -1, int64(-1))
	f.Add("no wait, no jitter, 1 retry", int64(-5), int64(1), math.Float64bits(math.Nextafter(1, 2)), math.Float64bits(5e-324), uint8(200), 1, int64(1))
	f.Add("100MS*1E0 UP TO 1H, 3 RETRY", int64(1), int64(math.MaxInt64), uint64(0), uint64(0), uint8(4), math.MaxInt, int64(math.MaxInt64))
	// Text that is not UTF-8: a lone continuation byte, a rune cut short, an
	// invalid byte inside each kind of token.
	f.Add(strings.Repeat("\xb5", 41), int64(0), int64(0), uint64(0), uint64(0), uint8(0), 0, int64(0))
	f.Add("100ms\xe2\x80 up to 1\xffs, \xc0 jitter, 3 \xfe", int64(1), int64(-1), uint64(0), uint64(0), uint8(2), 3, int64(0))
	f.Fuzz(func(t *testing.T, text string, base, ceiling int64, multBits, jitterBits uint64, mode uint8, retries int, elapsed int64) {
		// The law, from arbitrary field values.
		v := Value{BaseDelay: time.Duration(base), MaxDelay: time.Duration(ceiling), Multiplier: math.Float64frombits(multBits), Jitter: math.Float64frombits(jitterBits), JitterMode: JitterMode(mode)}
		checkValueRoundTrip(t, v)
		checkScheduleRoundTrip(t, Schedule{Curve: v, MaxRetries: retries, MaxElapsed: time.Duration(elapsed)})

		// Arbitrary text: no panic; an error leaves the receiver as it was,
		// and what is read writes back to a text that reads the same.
		s := Schedule{Curve: v, MaxRetries: retries}
		before := s
		if err := s.UnmarshalText([]byte(text)); err != nil {
			if !identical(s, before) {
				t.Fatalf("UnmarshalText(%q) = %v and changed the receiver", text, err)
			}
		} else {
			checkScheduleRoundTrip(t, s)
			// Explicit values, never the zeros a container may read as its
			// defaults, and no negative limit.
			if s.MaxRetries < 0 || s.MaxElapsed < 0 || s.Curve.BaseDelay == 0 || s.Curve.MaxDelay <= 0 {
				t.Fatalf("UnmarshalText(%q) = %#v: a zero or negative setting", text, s)
			}
		}
		var w Value
		if err := w.UnmarshalText([]byte(text)); err == nil {
			checkValueRoundTrip(t, w)
		}
	})
}

// TestNear: the near misses a policy's error names, and the words it must
// not mistake for one.
func TestNear(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"jiter", "jitter", true}, {"jitterr", "jitter", true}, {"jtr", "jitter", false},
		{"ful", "full", true}, {"fulll", "full", true}, {"fu", "full", false}, {"fast", "full", false},
		{"full", "full", false}, {"equl", "equal", true}, {"eqaul", "equal", true}, {"eq", "equal", false},
		{"decorelated", "decorrelated", true}, {"symetric", "symmetric", true}, {"", "full", false},
		{"additiv", "additive", true}, {"addition", "additive", true}, {"xyzzy", "equal", false},
	} {
		if got := near(tt.a, tt.b); got != tt.want {
			t.Errorf("near(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
	for _, tt := range []struct {
		a, b string
		n    int
		want bool
	}{
		{"", "", 0, true}, {"a", "", 0, false}, {"a", "", 1, true}, {"", "abc", 2, false}, {"", "abc", 3, true},
		{"kitten", "sitting", 2, false}, {"kitten", "sitting", 3, true}, {"abc", "abc", 0, true},
		{"abcdef", "a", 4, false}, {"abcdef", "a", 5, true}, {"flaw", "lawn", 1, false}, {"flaw", "lawn", 2, true},
		{"ab", "a", 1, true}, {"abc", "ac", 1, true}, {"a", "ab", 1, true}, {"ab", "ba", 1, false}, {"ab", "ba", 2, true},
		{"retires", "retries", 1, false}, {"retires", "retries", 2, true}, {"x", "y", -1, false},
	} {
		if got := edits(tt.a, tt.b, tt.n); got != tt.want {
			t.Errorf("edits(%q, %q, %d) = %v, want %v", tt.a, tt.b, tt.n, got, tt.want)
		}
	}
	for _, tt := range []struct {
		in   string
		want string
	}{
		{"100 ms", "100ms"}, {"1 m 30 s", "1m30s"}, {"1 m 30", "1m 30"}, {"1.5 S x 2", "1.5S x 2"},
		{"100ms 5", "100ms 5"}, {"5 retries", "5 retries"}, {"2 h 3 m 4 s", "2h3m4s"},
		{"1 m x s", "1m x s"}, {"1 m 30", "1m 30"},
	} {
		var parts []string
		for _, tok := range tokenize(tt.in) {
			parts = append(parts, tok.s)
		}
		if got := strings.Join(parts, " "); got != tt.want {
			t.Errorf("tokenize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestJitterFirstNamesOnlyWhatIsMisspelt: the error for a jitter where the
// curve should be says "misspelt" only of words that are.
func TestJitterFirstNamesOnlyWhatIsMisspelt(t *testing.T) {
	for _, in := range []string{"full jitter", "full banana", "equal", "no jitter, 3 retries"} {
		var s Schedule
		err := s.UnmarshalText([]byte(in))
		if err == nil || !strings.Contains(err.Error(), "the curve is missing") || strings.Contains(err.Error(), "misspelt") {
			t.Errorf("UnmarshalText(%q) = %v, want the curve said missing and nothing called misspelt", in, err)
		}
	}
}

// TestPolicyTextNotUTF8 is issue 21's first fault: text that is not UTF-8
// panicked ("index out of range [-1]": the excerpt stepped back from byte
// 40 looking for a rune's start, with no lower bound). Each is an error,
// valid UTF-8 itself, that quotes the bytes it could not read.
func TestPolicyTextNotUTF8(t *testing.T) {
	for _, tt := range []struct{ in, quoted string }{
		{strings.Repeat("\xb5", 41), strings.Repeat(`\xb5`, 20)},
		{strings.Repeat("\xb5", 1000), strings.Repeat(`\xb5`, 20)},
		{"\xff", `"\xff"`},
		{"100ms, \xb5\xb5 jitter", `unknown word "\xb5\xb5"`},
		{"100ms up to 1\xb5s", `"1\xb5s" is not a duration`},
		{"100ms×\xb5" + strings.Repeat("\xb5", 60), `multiplier "\xb5`},
	} {
		var s Schedule
		err := s.UnmarshalText([]byte(tt.in))
		if err == nil || !utf8.ValidString(err.Error()) || !strings.Contains(err.Error(), tt.quoted) {
			t.Errorf("Schedule.UnmarshalText(%q) = %v, want a valid UTF-8 error quoting %s", tt.in, err, tt.quoted)
		}
		var v Value
		if err := v.UnmarshalText([]byte(tt.in)); err == nil || !utf8.ValidString(err.Error()) {
			t.Errorf("Value.UnmarshalText(%q) = %v, want a valid UTF-8 error", tt.in, err)
		}
	}
}

// TestPolicyTextLinear is issue 21's ninth fault: reading was quadratic in
// the length of the text (a megabyte of "1 s " took 14–22 s), because each
// number and unit joined to a duration copied the token so far. It measures
// work without a clock: the bytes a read allocates, for n bytes of text and
// for 2n. Linear work about doubles; the quadratic join quadrupled. The
// shapes take every path through the reader and its errors: joined units,
// one enormous word (near misses are looked for), an enormous number, many
// small tokens that fail at once or at the end, white space, bytes that are
// not UTF-8.
func TestPolicyTextLinear(t *testing.T) {
	const n = 64 << 10
	shapes := []struct {
		name string
		text func(n int) string
	}{
		{"1 s …", func(n int) string { return strings.Repeat("1 s ", n/4) }},
		{"1 m 1 m …", func(n int) string { return "1 m" + strings.Repeat(" 1 m", n/4) + " up to 1s" }},
		{"a word", func(n int) string { return strings.Repeat("x", n) }},
		{"a jitter's word", func(n int) string { return "100ms, " + strings.Repeat("é", n/2) + " jitter" }},
		{"a retries' word", func(n int) string { return "100ms, 5 " + strings.Repeat("r", n) }},
		{"a long duration", func(n int) string { return "100ms, 5 retries, " + strings.Repeat("9", n) + "h of waiting" }},
		{"a long number", func(n int) string { return "1s×" + strings.Repeat("1", n) + "x" }},
		{"commas", func(n int) string { return "100ms" + strings.Repeat(" ,", n/2) }},
		{"trailing words", func(n int) string { return "100ms, no jitter" + strings.Repeat(" up", n/3) }},
		{"white space", func(n int) string { return strings.Repeat(" \t", n/2) }},
		{"not UTF-8", func(n int) string { return strings.Repeat("\xb5", n) }},
	}
	for _, sh := range shapes {
		small, large := readBytes(sh.text(n)), readBytes(sh.text(2*n))
		if large > 3*small+64<<10 {
			t.Errorf("%s: reading %d bytes allocates %d bytes, and %d bytes %d: want about twice, not %.1f×", sh.name, n, small, 2*n, large, float64(large)/float64(small))
		}
	}
}

// readBytes returns the bytes Schedule.UnmarshalText allocates to read text.
func readBytes(text string) uint64 {
	b := []byte(text)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var s Schedule
	_ = s.UnmarshalText(b)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// BenchmarkUnmarshalText reads policy text of growing length: the time per
// byte stays flat when reading is linear.
func BenchmarkUnmarshalText(b *testing.B) {
	for _, n := range []int{1 << 10, 64 << 10, 1 << 20} {
		text := []byte(strings.Repeat("1 s ", n/4))
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				var s Schedule
				_ = s.UnmarshalText(text)
			}
		})
	}
}

// TestPolicyTextQuotesWholeTokens is issue 21's tenth fault: errors cut
// tokens ("1s up to 100 ms" was quoted as "up to 100 m", which reads as
// minutes) and the package's own hints ("(or leave it out f…"). An error
// quotes whole tokens, each as it was written, and every word of its own.
func TestPolicyTextQuotesWholeTokens(t *testing.T) {
	long := "100ms×2 up to 30s, full jitter, 5 retries, 1m0s of waiting, 9 retries"
	for _, tt := range []struct{ in, contains string }{
		{"1s up to 100 ms", `"up to 100 ms": a ceiling below the base wait makes every wait 100ms; did you mean "100ms up to 1s"?`},
		{"1 m 30 s up to 1 m", `"up to 1 m": a ceiling below the base wait makes every wait 1m0s`},
		{"1s, 5 retries, 1 m 30 s of wait", `"1 m 30 s of wait": want a limit`},
		{"1s, 5 retries, 1 m 30 s of waiting, 2 m of waiting", `"2 m of waiting": a clause given twice`},
		{"1s up to never", `"never" is not a duration above zero: want a ceiling such as 30s (or leave it out for none)`},
		{"1s, never of waiting", `"never" is not a duration above zero: want a limit on the waiting such as 1m0s (or leave the clause out for none)`},
		{"1s, equal jitter, 5 attempts", `"5 attempts": the limit counts retries, which leave out the first call: 5 attempts are "4 retries"`},
		// A text too long to quote whole is cut after a whole token.
		{long, `policy "100ms×2 up to 30s, full jitter, 5 retries, 1m0s of waiting, 9 …": "9 retries": a clause given twice`},
		{"1s, full jitter extra words that go on and on, past what an error quotes", `cannot read "extra words that go on and on, past what an error quotes": want a comma`},
		{"1s, full jitter extra words that go on and on and on and on, past what an error quotes", `cannot read "extra words that go on and on and on and on, past what an error …": want a comma`},
	} {
		var s Schedule
		if err := s.UnmarshalText([]byte(tt.in)); err == nil || !strings.Contains(err.Error(), tt.contains) {
			t.Errorf("Schedule.UnmarshalText(%q) = %v, want an error containing %s", tt.in, err, tt.contains)
		}
	}
	// A token too long to quote whole shows its first and last bytes around
	// "…", which no token holds: the part quoted cannot be read as a valid
	// token of its own.
	huge := "1" + strings.Repeat("0", 1<<20) + "ms"
	var s Schedule
	err := s.UnmarshalText([]byte("1s up to " + huge))
	want := `"1` + strings.Repeat("0", 31) + "…" + strings.Repeat("0", 30) + `ms" is longer than the longest duration`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Schedule.UnmarshalText(1s up to 10…0ms) = %v, want an error containing %s", err, want)
	}
}

// TestPolicyTextExplicitValues is the root side of issue 21's eleventh
// fault: the readers set "no wait" as a zero BaseDelay and no ceiling as a
// zero MaxDelay, which retry.Policy reads as its defaults (200ms, 30s), so
// one text waited differently by the type that held it. Every reader sets
// "no wait" as a negative BaseDelay and no ceiling as math.MaxInt64, and
// the writers write those back as the text they came from.
func TestPolicyTextExplicitValues(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Value
	}{
		{"no wait", Value{BaseDelay: -1, MaxDelay: math.MaxInt64, Multiplier: 2}},
		{"no wait, 3 retries", Value{BaseDelay: -1, MaxDelay: math.MaxInt64, Multiplier: 2}},
		{"20s, no jitter, 3 retries", Value{BaseDelay: 20 * time.Second, MaxDelay: math.MaxInt64, Multiplier: 2, JitterMode: JitterNone}},
		{"1s×1.5 uncapped", Value{BaseDelay: time.Second, MaxDelay: math.MaxInt64, Multiplier: 1.5}},
		{"1s up to 1m", Value{BaseDelay: time.Second, MaxDelay: time.Minute, Multiplier: 2}},
	} {
		var s Schedule
		if err := s.UnmarshalText([]byte(tt.in)); err != nil || s.Curve != tt.want {
			t.Errorf("Schedule.UnmarshalText(%q): Curve = %#v, %v, want %#v", tt.in, s.Curve, err, tt.want)
		}
		if !strings.Contains(tt.in, "retries") { // a Value's text
			var v Value
			if err := v.UnmarshalText([]byte(tt.in)); err != nil || v != tt.want {
				t.Errorf("Value.UnmarshalText(%q) = %#v, %v, want %#v", tt.in, v, err, tt.want)
			}
		}
	}
	for _, tt := range []struct {
		v    Value
		want string
	}{
		{Value{BaseDelay: time.Second, MaxDelay: math.MaxInt64}, "1s×2 uncapped, full jitter"},
		{Value{BaseDelay: math.MaxInt64, MaxDelay: math.MaxInt64}, "2562047h47m16.854775807s×2 uncapped, full jitter"},
		{Value{BaseDelay: time.Second, MaxDelay: math.MaxInt64 - 1}, "1s×2 up to 2562047h47m16.854775806s, full jitter"},
		{Value{BaseDelay: -1, MaxDelay: math.MaxInt64}, "no wait, full jitter"},
	} {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// TestPolicyTextQuoteEdges: the part an error quotes starts at its first
// token even right after a comma, and a cut after whole tokens stops at the
// text's last token.
func TestPolicyTextQuoteEdges(t *testing.T) {
	x := strings.Repeat("x", 32)
	clauses := "100ms×2 up to 30s, full jitter, 5 retries, 1m0s of waiting"
	for _, tt := range []struct{ in, contains string }{
		{"100ms," + x + x + "x jitter", `unknown word "` + x + "…" + x + `"`},
		{"1s, full jitter extra words" + strings.Repeat(" ", 80), `cannot read "extra words …"`},
		{clauses + " extra " + strings.Repeat("words ", 20), `cannot read "extra words words words words words words words words words …"`},
	} {
		var s Schedule
		if err := s.UnmarshalText([]byte(tt.in)); err == nil || !strings.Contains(err.Error(), tt.contains) {
			t.Errorf("Schedule.UnmarshalText(%q) = %v, want an error containing %s", tt.in, err, tt.contains)
		}
	}
}
