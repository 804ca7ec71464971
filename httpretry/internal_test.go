package httpretry

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/unherd/backoff/retry"
)

// TestTerminates runs every loop in the package, in real time, and crashes
// the test binary if they have not all returned within 30 seconds (they
// take microseconds), so that an endless loop fails at once. Internal tests
// run before the others.
func TestTerminates(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, err := range []error{
			errors.New(`unsupported protocol scheme "ftp"`), fmt.Errorf("a: %w", fmt.Errorf("b: %w", io.EOF)),
			&tls.CertificateVerificationError{Err: io.EOF}, nil,
		} {
			DefaultRetryable(nil, err)
			drain(retry.Event{Err: err})
		}
		se := &statusError{resp: &http.Response{StatusCode: 503, Body: http.NoBody}}
		drain(retry.Event{Err: retry.After(1, fmt.Errorf("x: %w", se))})
		for _, d := range []time.Duration{0, time.Hour, 1<<63 - 1} {
			widen(d, nil)
			widen(d, newRand())
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		panic("TestTerminates: httpretry's loops did not return within 30s: a loop that does not end")
	}
}

// TestRequestHandlerDerived: a logger derived from the request's, with With
// or WithGroup, still names the method and the URL.
func TestRequestHandlerDerived(t *testing.T) {
	var buf bytes.Buffer
	req, _ := http.NewRequest(http.MethodDelete, "http://bob:pw@api.example/x", nil)
	l := slog.New(&requestHandler{slog.NewTextHandler(&buf, nil), req})
	l.With("k", "v").WithGroup("g").Info("hello", "n", 1)
	if got := buf.String(); !strings.Contains(got, "k=v") || !strings.Contains(got, "g.n=1") ||
		!strings.Contains(got, "g.method=DELETE") || !strings.Contains(got, "g.url=http://bob:xxxxx@api.example/x") {
		t.Fatalf("derived logger wrote %q", got)
	}
}

// TestWidenRange: the interval of the seeded draw, exactly, and that the
// unseeded AddJitter draws from the same one.
func TestWidenRange(t *testing.T) {
	for _, tt := range []struct{ d, lo, hi time.Duration }{
		{0, 0, time.Second - 1},
		{time.Second, time.Second, 2*time.Second - 1},
		{2 * time.Second, 2 * time.Second, 3*time.Second - 1},
		{10 * time.Second, 10 * time.Second, 15*time.Second - 1},
		{time.Hour, time.Hour, 90*time.Minute - 1},
		{1<<63 - 1 - 10, 1<<63 - 1 - 10, 1<<63 - 1},
		{1<<63 - 1, 1<<63 - 1, 1<<63 - 1},
	} {
		if lo, hi := widenRange(tt.d); lo != tt.lo || hi != tt.hi {
			t.Errorf("widenRange(%v) = [%v, %v], want [%v, %v]", tt.d, lo, hi, tt.lo, tt.hi)
		}
	}
	// Both draws reach across the interval: the largest of many is near
	// its top, the smallest near its bottom.
	for _, r := range []*rand.Rand{nil, newRand()} {
		d := 10 * time.Second
		lo, hi := d+time.Hour, time.Duration(0)
		for range 500 {
			w := widen(d, r)
			lo, hi = min(lo, w), max(hi, w)
		}
		if lo > d+100*time.Millisecond || hi < 15*time.Second-100*time.Millisecond {
			t.Errorf("widen(10s) over 500 draws (seeded %v): [%v, %v], want it to span [10s, 15s)", r != nil, lo, hi)
		}
	}
}

// TestWiden: the spread of a server's wait, with and without a seeded source,
// at the bottom, the middle and the top of the range.
func TestWiden(t *testing.T) {
	for _, d := range []time.Duration{0, time.Second, 10 * time.Second, time.Hour, 1<<62 + 1<<61, 1<<63 - 2, 1<<63 - 1} {
		spread := max(d/2, time.Second)
		for range 200 {
			for _, w := range []time.Duration{widen(d, nil), widen(d, newRand())} {
				if w < d || (w-d >= spread && w != 1<<63-1) || w < 0 {
					t.Fatalf("widen(%v) = %v, want in [d, d+%v) and never past math.MaxInt64", d, w, spread)
				}
			}
		}
	}
	// Near math.MaxInt64, the extra is drawn from what is left, not piled
	// on the bound.
	top := time.Duration(1<<63 - 1 - 10)
	seen := map[time.Duration]bool{}
	r := newRand()
	for range 1000 {
		seen[widen(top, r)] = true
	}
	if len(seen) != 11 {
		t.Fatalf("widen(MaxInt64−10) drew %d distinct waits, want all 11 of [d, MaxInt64]", len(seen))
	}
}

func newRand() *rand.Rand { return rand.New(rand.NewPCG(3, 4)) }
