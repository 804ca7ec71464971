package stats

import (
	"encoding/json"
	"maps"
	"math"
	"testing"
	"time"
)

// TestEndPerCall: each End counts once in each histogram, in the bucket
// its number falls in: at a bound in that bound's bucket, just above it in
// the next, past the last bound in the last; the sums are the numbers';
// and a call at once, striped, counts in bucket 0 of each and in its
// class.
func TestEndPerCall(t *testing.T) {
	var r Row
	for _, e := range []End{
		{Outcome: SucceededAtOnce, Attempts: 1, Class: Class2xx},            // the happy path
		{Outcome: SucceededAtOnce, Attempts: 1, Hedges: 1, Class: Class2xx}, // a hedge won
		{Outcome: SucceededAfterRetries, Attempts: 2, Retries: 1, Delay: time.Second, Class: Class3xx},
		{Outcome: SucceededAfterRetries, Attempts: 6, Retries: 5, Delay: time.Second + 1, Hedges: 7, Class: Class4xx},
		{Outcome: FailedAfterRetries, Attempts: 4, Retries: 4, Delay: 61 * time.Second, Cause: MaxRetries, Class: Class5xx},
		{Outcome: FailedWithoutRetry, Attempts: 1, Delay: -time.Second, Cause: NotRetryable, Class: NoResponse},
		{Outcome: FailedAfterRetries, Attempts: 1, Retries: 1, Delay: time.Millisecond, Cause: Context},
	} {
		r.End(e)
	}
	c := r.counts()
	if want := (Status{S2xx: 2, S3xx: 1, S4xx: 1, S5xx: 1, NoResponse: 1}); c.Status != want {
		t.Errorf("Status %+v, want %+v (a call of retry's own, NotHTTP, in none)", c.Status, want)
	}
	if want := (PerCall{Counts: [6]uint64{3, 2, 0, 0, 1, 1}, Sum: 1 + 5 + 4 + 1}); c.RetriesPerCall != want {
		t.Errorf("RetriesPerCall %+v, want %+v", c.RetriesPerCall, want)
	}
	if want := (PerCall{Counts: [6]uint64{5, 1, 0, 0, 0, 1}, Sum: 1 + 7}); c.HedgesPerCall != want {
		t.Errorf("HedgesPerCall %+v, want %+v", c.HedgesPerCall, want)
	}
	// 0 (3 calls: two at once and a negative time, read as 0), 1ms (at its
	// bound), 1s (at its bound), 1s+1ns (the next), 61s (past the last).
	if want := (Delays{Counts: [16]uint64{0: 3, 1: 1, 9: 1, 10: 1, 15: 1}, Sum: 63*time.Second + time.Millisecond + 1}); c.RetryDelay != want {
		t.Errorf("RetryDelay %+v, want %+v", c.RetryDelay, want)
	}
	if c.Calls() != 7 || c.SucceededAtOnce != 2 || c.Attempts != 1+1+2+6+4+1+1 {
		t.Errorf("%d calls, %d at once, %d attempts; want 7, 2, 16", c.Calls(), c.SucceededAtOnce, c.Attempts)
	}
	if n := stripesOf(&r); sum(n[:]) != 1 {
		t.Errorf("the stripes hold %d calls, want the one at once without a hedge", sum(n[:]))
	}
}

func sum(n []uint64) (s uint64) {
	for _, v := range n {
		s += v
	}
	return s
}

// TestAnswer: an Answer says the class and the hedges it was made with,
// at most 31 of them, and costs no allocation as an error.
func TestAnswer(t *testing.T) {
	for c := NotHTTP; c < classes; c++ {
		for _, h := range []int{0, 1, 30, 31, 32, 1000} {
			a := AnswerOf(c, h)
			if a.Class() != c || a.Hedges() != min(h, 31) {
				t.Fatalf("AnswerOf(%d, %d) says class %d, %d hedges", c, h, a.Class(), a.Hedges())
			}
		}
	}
	var err error
	if n := testing.AllocsPerRun(100, func() { err = AnswerOf(Class5xx, 31) }); n != 0 || err == nil {
		t.Fatalf("an Answer as an error: %v allocations", n)
	}
	for code, want := range map[int]int{101: Class2xx, 200: Class2xx, 299: Class2xx, 300: Class3xx, 399: Class3xx,
		400: Class4xx, 499: Class4xx, 500: Class5xx, 599: Class5xx, 999: Class5xx} {
		if got := ClassOf(code); got != want {
			t.Errorf("ClassOf(%d) = %d, want %d", code, got, want)
		}
	}
}

// TestEndJSON: the per-call counts in the table's JSON, under their keys,
// for a name and for its hosts.
func TestEndJSON(t *testing.T) {
	var tb Table
	tb.Row("n", "h", nil).End(End{Outcome: SucceededAfterRetries, Attempts: 2, Retries: 1, Delay: 3 * time.Millisecond, Hedges: 2, Class: Class4xx})
	tb.Row("n", "", nil).End(End{Outcome: SucceededAtOnce, Attempts: 1})
	var got map[string]struct {
		Status         map[string]uint64 `json:"status"`
		RetriesPerCall struct {
			Counts []uint64 `json:"counts"`
			Sum    uint64   `json:"sum"`
		} `json:"retries_per_call"`
		HedgesPerCall struct {
			Counts []uint64 `json:"counts"`
		} `json:"hedges_per_call"`
		RetryDelay struct {
			Counts []uint64 `json:"counts"`
			Sum    int64    `json:"sum_ns"`
		} `json:"retry_delay"`
		Hosts map[string]json.RawMessage `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(tb.String()), &got); err != nil {
		t.Fatal(err)
	}
	n := got["n"]
	if want := map[string]uint64{"2xx": 0, "3xx": 0, "4xx": 1, "5xx": 0, "no_response": 0}; !maps.Equal(n.Status, want) {
		t.Errorf("status %v, want %v", n.Status, want)
	}
	if c := n.RetriesPerCall.Counts; len(c) != 6 || c[0] != 1 || c[1] != 1 || n.RetriesPerCall.Sum != 1 {
		t.Errorf("retries_per_call %+v, want counts [1 1 0 0 0 0], sum 1", n.RetriesPerCall)
	}
	if c := n.HedgesPerCall.Counts; len(c) != 6 || c[0] != 1 || c[2] != 1 {
		t.Errorf("hedges_per_call %v, want [1 0 1 0 0 0]", c)
	}
	if c := n.RetryDelay.Counts; len(c) != len(DelayBounds)+1 || c[0] != 1 || c[2] != 1 || n.RetryDelay.Sum != 3e6 {
		t.Errorf("retry_delay %+v, want 1 at 0 and 1 at most 5ms, sum 3ms", n.RetryDelay)
	}
	if _, ok := n.Hosts["h"]; !ok || !json.Valid(n.Hosts["h"]) {
		t.Errorf("the host's row: %s", n.Hosts["h"])
	}
	if !math.IsNaN(tb.Of("n").Tokens) {
		t.Error("a row with no Budget has Tokens")
	}
}
