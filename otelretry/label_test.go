package otelretry

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzLabel: a row's name or host as an attribute is valid UTF-8, which
// the exporters need, and the mapping is one to one, so rows stay apart;
// a name of valid UTF-8 with no backslash is as it is.
func FuzzLabel(f *testing.F) {
	f.Add("payments", `pay\ments`)
	f.Add("r\xe9plica", `r\xe9plica`)
	f.Fuzz(func(t *testing.T, a, b string) {
		la, lb := label(a), label(b)
		if !utf8.ValidString(la) {
			t.Fatalf("label(%q) = %q, not valid UTF-8", a, la)
		}
		if (la == lb) != (a == b) {
			t.Fatalf("label(%q) = %q, label(%q) = %q: two rows, one label", a, la, b, lb)
		}
		if utf8.ValidString(a) && !strings.Contains(a, `\`) && la != a {
			t.Fatalf("label(%q) = %q, want it as it is", a, la)
		}
	})
}
