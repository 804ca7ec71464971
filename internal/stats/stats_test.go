package stats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// Each test makes a Table of its own: Default is the process's, and retry's
// and httpretry's tests count in it.

// gauge is a Budget as a Row sees one: its Tokens, read live. A pointer
// to it is what a Row is given, so that giving it allocates nothing.
type gauge float64

func (g *gauge) Tokens() float64 { return float64(*g) }

// same reports whether two Counts are equal, Tokens alike when both are
// NaN (which == never finds equal).
//
// The per-call counts (Status and the histograms) are compared only when
// b has some: the tests written before them check the rest, and
// TestEndPerCall checks them.
func same(a, b Counts) bool {
	if b.Status == (Status{}) && b.RetriesPerCall == (PerCall{}) && b.HedgesPerCall == (PerCall{}) && b.RetryDelay == (Delays{}) {
		a.Status, a.RetriesPerCall, a.HedgesPerCall, a.RetryDelay = Status{}, PerCall{}, PerCall{}, Delays{}
	}
	if math.IsNaN(a.Tokens) != math.IsNaN(b.Tokens) {
		return false
	}
	if math.IsNaN(a.Tokens) {
		a.Tokens, b.Tokens = 0, 0
	}
	return a == b
}

// counts is what Each says of name and host in t, and whether it has the row.
func counts(t *Table, name, host string) (c Counts, ok bool) {
	t.Each(func(n, h string, row Counts) {
		if n == name && h == host {
			c, ok = row, true
		}
	})
	return c, ok
}

// TestCalls: Calls is the four outcomes added together.
func TestCalls(t *testing.T) {
	c := Counts{SucceededAtOnce: 1, SucceededAfterRetries: 20, FailedWithoutRetry: 300, FailedAfterRetries: 4000,
		Attempts: 50000, Retries: 60000, GaveUp: GaveUp{MaxRetries: 70000}, Hedges: 80000}
	if got := c.Calls(); got != 4321 {
		t.Fatalf("Calls() of 1, 20, 300 and 4000 calls by outcome = %d, want 4321 (and nothing else counted)", got)
	}
	if got := (Counts{}).Calls(); got != 0 {
		t.Fatalf("Calls() of no calls = %d", got)
	}
}

// full is a Counts with every count set, each to a number of its own
// times k, so that a count added to another's place, or left out, shows.
func full(k uint64, tokens float64) Counts {
	return Counts{
		SucceededAtOnce: 1 * k, SucceededAfterRetries: 2 * k, FailedWithoutRetry: 3 * k, FailedAfterRetries: 4 * k,
		Attempts: 5 * k, Retries: 6 * k, Waited: time.Duration(7 * k), Took: time.Duration(8 * k),
		GaveUp: GaveUp{MaxRetries: 9 * k, MaxElapsed: 10 * k, Deadline: 11 * k, Budget: 12 * k, Context: 13 * k, NotRetryable: 14 * k},
		Hedges: 15 * k, HedgesWon: 16 * k, AttemptTimeouts: 17 * k,
		Tokens: tokens,
	}
}

// TestAdd: add adds every count, and Tokens as a name's total holds them:
// the sum of the gauges there are, NaN while there is none.
func TestAdd(t *testing.T) {
	c := Counts{Tokens: math.NaN()}
	c.add(full(1, 2))
	c.add(full(100, 3))
	if want := full(101, 5); !same(c, want) {
		t.Fatalf("add of every count, 1 and 100 times:\n%+v\nwant\n%+v", c, want)
	}
	nan := math.NaN()
	for _, tc := range []struct{ tokens []float64 }{
		{[]float64{}},
		{[]float64{nan}},
		{[]float64{nan, nan}},
		{[]float64{2}},
		{[]float64{nan, 2}},
		{[]float64{2, nan}},
		{[]float64{2, 0.5}},
		{[]float64{nan, 2, nan, 0.25, 4}},
		{[]float64{1, math.Inf(1)}},
		{[]float64{0}},
	} {
		c, want := Counts{Tokens: nan}, nan
		for _, x := range tc.tokens {
			c.add(Counts{Tokens: x})
			if !math.IsNaN(x) {
				if math.IsNaN(want) {
					want = 0
				}
				want += x
			}
		}
		if got := c.Tokens; got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("Tokens of rows whose gauges are %v: %v, want %v", tc.tokens, got, want)
		}
	}
}

// TestRowCounts: each of a Row's methods counts what its doc says, in its
// own field and no other: a call at once (striped or through Done), the
// other outcomes with their attempts, their time and why they stopped,
// waits, hedges and attempt timeouts.
func TestRowCounts(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		do   func(r *Row)
		want Counts
	}{
		{"nothing", func(r *Row) {}, Counts{Tokens: nan}},
		{"three at once, striped", func(r *Row) { r.SucceededAtOnce(); r.SucceededAtOnce(); r.SucceededAtOnce() },
			Counts{SucceededAtOnce: 3, Attempts: 3, Tokens: nan}},
		{"at once through Done: its time not counted", func(r *Row) { r.Done(SucceededAtOnce, 1, 5*time.Second, NoCause) },
			Counts{SucceededAtOnce: 1, Attempts: 1, Tokens: nan}},
		{"at once both ways", func(r *Row) { r.SucceededAtOnce(); r.Done(SucceededAtOnce, 1, time.Second, NoCause) },
			Counts{SucceededAtOnce: 2, Attempts: 2, Tokens: nan}},
		{"after retries: 3 attempts", func(r *Row) { r.Done(SucceededAfterRetries, 3, 2*time.Second, NoCause) },
			Counts{SucceededAfterRetries: 1, Attempts: 3, Took: 2 * time.Second, Tokens: nan}},
		{"after a retry: 2 attempts, no time", func(r *Row) { r.Done(SucceededAfterRetries, 2, 0, NoCause) },
			Counts{SucceededAfterRetries: 1, Attempts: 2, Tokens: nan}},
		{"failed without retry", func(r *Row) { r.Done(FailedWithoutRetry, 1, 7*time.Millisecond, NotRetryable) },
			Counts{FailedWithoutRetry: 1, Attempts: 1, Took: 7 * time.Millisecond, GaveUp: GaveUp{NotRetryable: 1}, Tokens: nan}},
		{"failed before any attempt", func(r *Row) { r.Done(FailedWithoutRetry, 0, time.Millisecond, Context) },
			Counts{FailedWithoutRetry: 1, Attempts: 0, Took: time.Millisecond, GaveUp: GaveUp{Context: 1}, Tokens: nan}},
		{"no attempt among others", func(r *Row) {
			r.SucceededAtOnce()
			r.Done(FailedWithoutRetry, 0, time.Millisecond, Context)
			r.Done(FailedAfterRetries, 4, time.Millisecond, MaxRetries)
		}, Counts{SucceededAtOnce: 1, FailedWithoutRetry: 1, FailedAfterRetries: 1, Attempts: 1 + 0 + 4, Took: 2 * time.Millisecond,
			GaveUp: GaveUp{Context: 1, MaxRetries: 1}, Tokens: nan}},
		{"failed after retries, by every cause", func(r *Row) {
			for i, cause := range []int{MaxRetries, MaxElapsed, Deadline, Budget, Context, NotRetryable} {
				for range i + 1 {
					r.Done(FailedAfterRetries, 2, time.Second, cause)
				}
			}
		}, Counts{FailedAfterRetries: 21, Attempts: 42, Took: 21 * time.Second,
			GaveUp: GaveUp{MaxRetries: 1, MaxElapsed: 2, Deadline: 3, Budget: 4, Context: 5, NotRetryable: 6}, Tokens: nan}},
		{"a clock gone back takes no time", func(r *Row) { r.Done(FailedAfterRetries, 2, -5*time.Second, MaxRetries) },
			Counts{FailedAfterRetries: 1, Attempts: 2, GaveUp: GaveUp{MaxRetries: 1}, Tokens: nan}},
		{"every outcome", func(r *Row) {
			r.SucceededAtOnce()
			r.Done(SucceededAfterRetries, 2, 1, NoCause)
			r.Done(SucceededAfterRetries, 3, 2, NoCause)
			r.Done(FailedWithoutRetry, 1, 3, NotRetryable)
			r.Done(FailedWithoutRetry, 1, 4, Budget)
			r.Done(FailedWithoutRetry, 1, 5, Budget)
			r.Done(FailedAfterRetries, 5, 6, MaxElapsed)
			r.Done(FailedAfterRetries, 5, 7, Deadline)
			r.Done(FailedAfterRetries, 5, 8, Deadline)
			r.Done(FailedAfterRetries, 5, 9, Deadline)
		}, Counts{SucceededAtOnce: 1, SucceededAfterRetries: 2, FailedWithoutRetry: 3, FailedAfterRetries: 4,
			Attempts: 1 + 2 + 3 + 3 + 4*5, Took: 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9,
			GaveUp: GaveUp{NotRetryable: 1, Budget: 2, MaxElapsed: 1, Deadline: 3}, Tokens: nan}},
		{"waits, as long as they went", func(r *Row) { r.Waited(2 * time.Second); r.Waited(0); r.Waited(-3 * time.Second); r.Waited(1) },
			Counts{Retries: 4, Waited: 2*time.Second + 1, Tokens: nan}},
		{"hedges, won, attempt timeouts", func(r *Row) {
			r.Hedge()
			r.HedgeWon()
			r.HedgeWon()
			r.AttemptTimeout()
			r.AttemptTimeout()
			r.AttemptTimeout()
		}, Counts{Hedges: 1, HedgesWon: 2, AttemptTimeouts: 3, Tokens: nan}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tb Table
			r := tb.Row("n", "", nil)
			tc.do(r)
			if got := r.counts(); !same(got, tc.want) {
				t.Errorf("the row's counts:\n%+v\nwant\n%+v", got, tc.want)
			}
			if got := tb.Of("n"); !same(got, tc.want) {
				t.Errorf("Of:\n%+v\nwant\n%+v", got, tc.want)
			}
			if got, _ := counts(&tb, "n", ""); !same(got, tc.want) {
				t.Errorf("Each:\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// TestBudget: a row's Tokens is its Budget's, read as it is now; NaN with
// none; the last Budget a row is given is its gauge (httpretry makes a
// host a new one after forgetting it), and giving one, the same or
// another, allocates nothing.
func TestBudget(t *testing.T) {
	var tb Table
	r := tb.Row("n", "h", nil)
	if got := r.counts().Tokens; !math.IsNaN(got) {
		t.Fatalf("Tokens of a row with no Budget: %v, want NaN", got)
	}
	first, second := gauge(2.5), gauge(7)
	r.Budget(&first)
	if got := r.counts().Tokens; got != 2.5 {
		t.Fatalf("Tokens of a row with a Budget holding 2.5: %v", got)
	}
	r.Budget(&second)
	if got := r.counts().Tokens; got != 7 {
		t.Fatalf("Tokens after a second Budget: %v, want the second's, 7", got)
	}
	r.Budget(&first)
	first = 1.25
	if got := tb.Of("n").Tokens; got != 1.25 {
		t.Fatalf("Tokens once the Budget holds 1.25: %v, want it read now", got)
	}
	if n := testing.AllocsPerRun(100, func() { r.Budget(&first) }); n != 0 {
		t.Fatalf("Budget on a row that has it: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { r.Budget(&second); r.Budget(&first) }); n != 0 {
		t.Fatalf("Budget on a row that has another: %v allocations, want 0", n)
	}
	inf := gauge(math.Inf(1))
	r2 := tb.Row("n", "h2", nil)
	r2.Budget(&inf)
	if got := tb.Of("n").Tokens; !math.IsInf(got, 1) {
		t.Fatalf("Tokens of the name, 1.25 and +Inf: %v, want +Inf", got)
	}
}

// TestSucceededAtOnceAllocs: the happy path's count allocates nothing.
func TestSucceededAtOnceAllocs(t *testing.T) {
	var tb Table
	r := tb.Row("n", "", nil)
	if n := testing.AllocsPerRun(100, r.SucceededAtOnce); n != 0 {
		t.Fatalf("SucceededAtOnce: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { tb.Row("n", "", nil) }); n != 0 {
		t.Fatalf("Row of a row made before: %v allocations, want 0", n)
	}
}

// TestStripeSize: each stripe of the happy path's count is one cache line,
// so that two stripes' counters never share one.
func TestStripeSize(t *testing.T) {
	if size := unsafe.Sizeof(stripe{}); size != 64 {
		t.Fatalf("a stripe is %d bytes, want a cache line's 64", size)
	}
	var r Row
	if d := uintptr(unsafe.Pointer(&r.atOnce[1].n)) - uintptr(unsafe.Pointer(&r.atOnce[0].n)); d != 64 {
		t.Fatalf("two stripes' counters are %d bytes apart, want 64", d)
	}
}

// stripesOf reads each stripe of r's happy-path count.
func stripesOf(r *Row) (n [stripes]uint64) {
	for i := range r.atOnce {
		for c := range r.atOnce[i].n {
			n[i] += r.atOnce[i].n[c].Load()
		}
	}
	return n
}

// TestStripesSpread: calls at once from one goroutine spread over every
// stripe, each call in one, and the row's count is every stripe's. (A
// stripe left empty by 1,600 calls, 100 a stripe on average, has a
// chance of (15/16)^1600 < 1e-44.)
func TestStripesSpread(t *testing.T) {
	var r Row
	const calls = 1600
	for i := range calls {
		before := stripesOf(&r)
		r.SucceededAtOnce()
		after := stripesOf(&r)
		grew := 0
		for j := range after {
			grew += int(after[j] - before[j])
		}
		if grew != 1 {
			t.Fatalf("call %d: the stripes grew by %d, want 1", i, grew)
		}
	}
	for i, n := range stripesOf(&r) {
		if n == 0 {
			t.Fatalf("stripe %d of %d: no call of %d (%v)", i, stripes, calls, stripesOf(&r))
		}
	}
	if got := r.counts(); got.SucceededAtOnce != calls || got.Attempts != calls {
		t.Fatalf("%d calls at once over the stripes %v: counted %d, %d attempts", calls, stripesOf(&r), got.SucceededAtOnce, got.Attempts)
	}
}

// TestConcurrent: 64 goroutines count in one row, found by each of them
// by name and host, and every count is exact, the striped one too; a
// reader meanwhile sees no count go back.
func TestConcurrent(t *testing.T) {
	const goroutines, each = 64, 300
	var tb Table
	gauges := make([]gauge, goroutines)
	rows := make([]*Row, goroutines)
	stop := make(chan struct{})
	var reader sync.WaitGroup
	var wentBack error
	reader.Go(func() {
		var last Counts
		for {
			select {
			case <-stop:
				return
			default:
			}
			c := tb.Of("n")
			_ = tb.String()
			if c.SucceededAtOnce < last.SucceededAtOnce || c.Calls() < last.Calls() || c.Attempts < last.Attempts || c.Retries < last.Retries {
				wentBack = fmt.Errorf("counts went back: %+v after %+v", c, last)
				return
			}
			last = c
		}
	})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			gauges[g] = gauge(g)
			r := tb.Row("n", "h", nil)
			rows[g] = r
			r.Budget(&gauges[g])
			for range each {
				r.SucceededAtOnce()
				r.SucceededAtOnce()
				r.Done(SucceededAfterRetries, 2, time.Millisecond, NoCause)
				r.Done(FailedAfterRetries, 3, time.Second, MaxRetries)
				r.Done(FailedWithoutRetry, 0, time.Microsecond, Context)
				r.Waited(time.Microsecond)
				r.Hedge()
				r.HedgeWon()
				r.AttemptTimeout()
			}
		})
	}
	wg.Wait()
	close(stop)
	reader.Wait()
	if wentBack != nil {
		t.Fatal(wentBack)
	}
	for g, r := range rows {
		if r != rows[0] {
			t.Fatalf("goroutine %d found another row for the same name and host", g)
		}
	}
	n := uint64(goroutines * each)
	got := tb.Of("n")
	tokens := got.Tokens
	if tokens != math.Trunc(tokens) || tokens < 0 || tokens >= goroutines {
		t.Fatalf("Tokens %v: not one of the Budgets the row was given", tokens)
	}
	want := Counts{SucceededAtOnce: 2 * n, SucceededAfterRetries: n, FailedWithoutRetry: n, FailedAfterRetries: n,
		Attempts: 2*n + 2*n + 3*n, Retries: n, Waited: time.Duration(n) * time.Microsecond,
		Took:   time.Duration(n) * (time.Millisecond + time.Second + time.Microsecond),
		GaveUp: GaveUp{MaxRetries: n, Context: n}, Hedges: n, HedgesWon: n, AttemptTimeouts: n, Tokens: tokens}
	if !same(got, want) {
		t.Fatalf("%d goroutines:\n%+v\nwant\n%+v", goroutines, got, want)
	}
}

// TestOf: a name's counts are its rows' added together, and no other
// name's; a name with no row, or a table with none, counts nothing.
func TestOf(t *testing.T) {
	var tb Table
	if got, want := tb.Of("n"), (Counts{Tokens: math.NaN()}); !same(got, want) {
		t.Fatalf("Of in an empty table: %+v", got)
	}
	var calls int
	tb.Each(func(string, string, Counts) { calls++ })
	if calls != 0 {
		t.Fatalf("Each of an empty table called fn %d times", calls)
	}
	one, two := gauge(1.5), gauge(2.25)
	tb.Row("n", "", nil).SucceededAtOnce()
	a := tb.Row("n", "a", nil)
	a.Done(FailedAfterRetries, 3, time.Second, Deadline)
	a.Budget(&one)
	b := tb.Row("n", "b", nil)
	b.Waited(time.Second)
	b.Hedge()
	b.Budget(&two)
	tb.Row("m", "", nil).Done(SucceededAfterRetries, 2, time.Millisecond, NoCause)
	tb.Row("m", "a", nil).Done(FailedWithoutRetry, 1, time.Millisecond, NotRetryable)
	tb.Row("nn", "", nil).SucceededAtOnce()

	want := Counts{SucceededAtOnce: 1, FailedAfterRetries: 1, Attempts: 4, Retries: 1, Waited: time.Second, Took: time.Second,
		GaveUp: GaveUp{Deadline: 1}, Hedges: 1, Tokens: 3.75}
	if got := tb.Of("n"); !same(got, want) {
		t.Fatalf("Of(n), of three rows:\n%+v\nwant\n%+v", got, want)
	}
	want = Counts{SucceededAfterRetries: 1, FailedWithoutRetry: 1, Attempts: 3, Took: 2 * time.Millisecond,
		GaveUp: GaveUp{NotRetryable: 1}, Tokens: math.NaN()}
	if got := tb.Of("m"); !same(got, want) {
		t.Fatalf("Of(m), of two rows and no Budget:\n%+v\nwant\n%+v", got, want)
	}
	if got := tb.Of("x"); !same(got, Counts{Tokens: math.NaN()}) {
		t.Fatalf("Of a name with no row: %+v", got)
	}
}

// TestEach: Each calls fn once for every row, in order of name and then
// host, "" first, with each row's own counts.
func TestEach(t *testing.T) {
	var tb Table
	var want []string
	for _, name := range []string{"b", "a", "c", "ab"} {
		want = append(want, name+"/")
	}
	for i := range 40 {
		want = append(want, fmt.Sprintf("a/h%02d", i), fmt.Sprintf("c/g%02d", 39-i))
	}
	// Hosts that sort against their names: a name's hosts sort among them,
	// not among all.
	want = append(want, "b/0", "ab/zz", "c/!", "b/~")
	for i, w := range want { // made in this order, counted i+1 times each
		name, host, _ := strings.Cut(w, "/")
		r := tb.Row(name, host, nil)
		for range i + 1 {
			r.SucceededAtOnce()
		}
	}
	calls := map[string]uint64{}
	for i, w := range want {
		calls[w] = uint64(i + 1)
	}
	var got []string
	tb.Each(func(name, host string, c Counts) {
		w := name + "/" + host
		got = append(got, w)
		if c.SucceededAtOnce != calls[w] || c.Calls() != calls[w] {
			t.Errorf("Each(%q, %q): %d calls, want its own %d", name, host, c.Calls(), calls[w])
		}
	})
	sorted := append([]string(nil), want...)
	sortRows(sorted)
	if !reflect.DeepEqual(got, sorted) {
		t.Fatalf("Each's rows:\n%q\nwant, by name and then host:\n%q", got, sorted)
	}
}

// sortRows sorts "name/host" rows by name and then host, as Each
// documents, done here by hand so that it does not share Each's code.
func sortRows(rows []string) {
	less := func(a, b string) bool {
		an, ah, _ := strings.Cut(a, "/")
		bn, bh, _ := strings.Cut(b, "/")
		if an != bn {
			return an < bn
		}
		return ah < bh
	}
	for i := 1; i < len(rows); i++ {
		for j := i; j > 0 && less(rows[j], rows[j-1]); j-- {
			rows[j], rows[j-1] = rows[j-1], rows[j]
		}
	}
}

// TestHosts: a name counts 1,024 hosts apart, not counting ""; the calls
// to hosts past them count together in its "other" row, made for the
// first of them and kept, which is also the one asked for by name; a host
// counted apart stays apart, and each name has 1,024 of its own.
func TestHosts(t *testing.T) {
	var tb Table
	if MaxHosts != 1024 || Other != "other" {
		t.Fatalf("MaxHosts %d, Other %q: retry.Stats documents 1,024 and \"other\"", MaxHosts, Other)
	}
	tb.Row("n", "", nil).SucceededAtOnce()
	apart := map[*Row]bool{}
	for i := range MaxHosts {
		host := fmt.Sprintf("h%04d", i)
		r := tb.Row("n", host, nil)
		if r.host != host || r.name != "n" || apart[r] {
			t.Fatalf("host %d, %q, of the first 1,024: not a row of its own (%q)", i, host, r.host)
		}
		apart[r] = true
		r.SucceededAtOnce()
	}
	if _, ok := counts(&tb, "n", Other); ok {
		t.Fatal("an other row before any host past 1,024")
	}
	var other *Row
	for i := MaxHosts; i < MaxHosts+3; i++ {
		host := fmt.Sprintf("h%04d", i)
		for range 2 { // the second from the cache, or not
			r := tb.Row("n", host, nil)
			if other == nil {
				other = r
			}
			if r == nil || r != other || r.host != Other || r.name != "n" || apart[r] {
				t.Fatalf("host %d, %q, past 1,024: not the one other row", i, host)
			}
			r.Done(FailedWithoutRetry, 1, time.Millisecond, NotRetryable)
		}
	}
	if r := tb.Row("n", Other, nil); r != other {
		t.Fatalf("Row(n, other): not the row the hosts past 1,024 count in")
	}
	if r := tb.Row("n", "h0000", nil); r.host != "h0000" || !apart[r] {
		t.Fatalf("a host counted apart before went to %q", r.host)
	}
	if r := tb.Row("n", "h1023", nil); r.host != "h1023" || !apart[r] {
		t.Fatalf("the 1,024th host went to %q", r.host)
	}
	if r := tb.Row("n", "", nil); r.host != "" {
		t.Fatalf("the name's row with no host went to %q", r.host)
	}
	if r := tb.Row("m", "h9999", nil); r.host != "h9999" || r.name != "m" {
		t.Fatalf("another name's first host went to %q of %q", r.host, r.name)
	}

	rows := 0
	tb.Each(func(name, host string, c Counts) {
		if name == "n" {
			rows++
		}
	})
	if rows != MaxHosts+2 {
		t.Fatalf("n has %d rows, want 1,024 hosts, other and \"\"", rows)
	}
	oc, ok := counts(&tb, "n", Other)
	if !ok || oc.FailedWithoutRetry != 6 || oc.Calls() != 6 {
		t.Fatalf("n's other row: %+v (there: %v), want the 6 calls to the 3 hosts past 1,024", oc, ok)
	}
	if got := tb.Of("n"); got.SucceededAtOnce != MaxHosts+1 || got.FailedWithoutRetry != 6 {
		t.Fatalf("Of(n): %+v, want every row's calls", got)
	}
}

// TestHostsOtherFirst: asking for "other" before a name's hosts takes
// none of its 1,024 places, and neither does "".
func TestHostsOtherFirst(t *testing.T) {
	var tb Table
	tb.Row("n", Other, nil)
	tb.Row("n", "", nil)
	for i := range MaxHosts {
		if r := tb.Row("n", fmt.Sprintf("h%04d", i), nil); r.host == Other {
			t.Fatalf("host %d of 1,024 went to other", i)
		}
	}
	if r := tb.Row("n", "past", nil); r.host != Other {
		t.Fatalf("host 1,025 went to %q", r.host)
	}
	if tb.hosts["n"] != MaxHosts {
		t.Fatalf("n counts %d hosts apart, want 1,024", tb.hosts["n"])
	}
}

// TestRowCache: the cache that Row finds a row in again is keyed by where
// the strings' bytes are, and checks what they say: the same name and host
// at other bytes find the same row, and others at the same bytes (shorter
// or longer) find their own.
func TestRowCache(t *testing.T) {
	var tb Table
	s := strings.Repeat("x", 8) + "-payments-" + strings.Repeat("y", 8)
	name := s[8:16] // "-payment"
	r := tb.Row(name, "", nil)
	if r.name != name || r.host != "" {
		t.Fatalf("Row(%q, \"\") is the row of %q, %q", name, r.name, r.host)
	}
	if again := tb.Row(name, "", nil); again != r {
		t.Fatal("Row of a name again: another row")
	}
	if clone := strings.Clone(name); tb.Row(clone, "", nil) != r {
		t.Fatal("Row of the name at other bytes: another row")
	}
	longer := s[8:17] // "-payments", at the same bytes
	if l := tb.Row(longer, "", nil); l == r || l.name != longer {
		t.Fatalf("Row(%q) at the bytes of %q: its row (%q)", longer, name, l.name)
	}
	if tb.Row(name, "", nil) != r || tb.Row(longer, "", nil) == r {
		t.Fatal("two names at the same bytes, asked for in turn: a row for the other")
	}

	hosts := "api.example:443"
	h1, h2 := hosts[:11], hosts // "api.example", "api.example:443", at the same bytes
	a := tb.Row(name, h1, nil)
	b := tb.Row(name, h2, nil)
	if a == b || a.host != h1 || b.host != h2 {
		t.Fatalf("two hosts at the same bytes: rows of %q and %q", a.host, b.host)
	}
	if tb.Row(name, h1, nil) != a || tb.Row(name, h2, nil) != b || tb.Row(name, strings.Clone(h1), nil) != a {
		t.Fatal("two hosts at the same bytes, asked for in turn: a row for the other")
	}
	for _, r := range []*Row{r, a, b} {
		r.SucceededAtOnce()
	}
	if got := tb.Of(name).Calls(); got != 3 {
		t.Fatalf("Of(%q): %d calls, want 3", name, got)
	}
	if got := tb.Of(longer).Calls(); got != 0 {
		t.Fatalf("Of(%q): %d calls, want 0", longer, got)
	}
}

// TestRowCacheSlots: 256 names spread over the cache's 256 slots, and a
// name whose slot holds its row is found there again, without the lock.
// (Hashed at random, 256 names take 162 slots on average, with a spread
// of 5: fewer than 120 has a chance below 1e-15.)
func TestRowCacheSlots(t *testing.T) {
	var tb Table
	names := make([]string, len(tb.cache))
	for i := range names {
		names[i] = fmt.Sprintf("n%07d", i)
		tb.Row(names[i], "h", nil)
	}
	used := slotsUsed(&tb)
	if used < 120 {
		t.Fatalf("256 names took %d of the cache's 256 slots, want 120 or more", used)
	}
	var hosts Table // one name's 256 hosts spread alike
	for i := range names {
		hosts.Row("n", names[i], nil)
	}
	if n := slotsUsed(&hosts); n < 120 {
		t.Fatalf("a name's 256 hosts took %d of the cache's 256 slots, want 120 or more", n)
	}
	found := 0
	for _, name := range names {
		slot := &tb.cache[slotOf(name, "h")]
		if r := slot.Load(); r == nil || r.name != name {
			continue
		}
		found++
		var r *Row
		if waitsForLock(tb.mu.Lock, tb.mu.Unlock, func() { r = tb.Row(name, "h", nil) }) || r.name != name {
			t.Fatalf("Row(%q) again, in its slot: not found in the cache", name)
		}
	}
	if found != used {
		t.Fatalf("%d names found in their slots, of %d slots used", found, used)
	}
}

func slotsUsed(tb *Table) (n int) {
	for i := range tb.cache {
		if tb.cache[i].Load() != nil {
			n++
		}
	}
	return n
}

// parked counts the goroutines parked with a wait reason that starts
// with reason, as a dump of them shows it: "goroutine 7 [sync.RWMutex.RLock]:".
func parked(reason string) int {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte(" ["+reason))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// waitsForLock runs fn in a goroutine of its own while holding a lock by
// lock, and reports whether fn waited for a lock (that one, as no other
// test runs meanwhile), rather than returning: it looks, without sleeping,
// until one or the other.
func waitsForLock(lock, unlock func(), fn func()) bool {
	lock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	for {
		select {
		case <-done:
			unlock()
			return false
		default:
		}
		if parked("sync.RWMutex.") > 0 || parked("sync.Mutex.") > 0 {
			unlock()
			<-done
			return true
		}
		runtime.Gosched()
	}
}

// TestRowLocks: a row found before is found from the cache without the
// table's lock (while a writer holds it); a row made before but not in
// the cache, under the read lock only, so that the lookups of many
// goroutines do not wait for each other.
func TestRowLocks(t *testing.T) {
	var tb Table
	r := tb.Row("n", "h", nil)
	var got *Row
	if waitsForLock(tb.mu.Lock, tb.mu.Unlock, func() { got = tb.Row("n", "h", nil) }) || got != r {
		t.Fatal("Row of a row in the cache waited for the table's lock")
	}
	got = nil
	if waitsForLock(tb.mu.RLock, tb.mu.RUnlock, func() { got = tb.row("n", "h", nil) }) || got != r {
		t.Fatal("a row made before, looked for past the cache, waited for more than the read lock")
	}
	// Checked here, where the row is looked for past the cache: a row not
	// made yet waits for the write lock.
	if !waitsForLock(tb.mu.RLock, tb.mu.RUnlock, func() { got = tb.row("n", "new", nil) }) || got.host != "new" {
		t.Fatal("a new row was made without waiting for the write lock")
	}
}

// TestRowMadeOnce: two goroutines that both find no row for a name and
// host, and then both make it, make one row between them, and count one
// host.
func TestRowMadeOnce(t *testing.T) {
	var tb Table
	tb.Row("n", "", nil).SucceededAtOnce() // the table's maps made
	var a, b *Row
	var wg sync.WaitGroup
	tb.mu.Lock()
	wg.Go(func() { a = tb.row("n", "h", nil) })
	wg.Go(func() { b = tb.row("n", "h", nil) })
	// Both wait to read; once let, both read before either can write.
	for parked("sync.RWMutex.RLock") < 2 {
		runtime.Gosched()
	}
	tb.mu.Unlock()
	wg.Wait()
	if a != b || a == nil || tb.rows[key{"n", "h"}] != a {
		t.Fatalf("two goroutines made the row of n and h: %p and %p", a, b)
	}
	if tb.hosts["n"] != 1 {
		t.Fatalf("one host counted %d times", tb.hosts["n"])
	}
}

// TestDefault: the process's table is there to count in.
func TestDefault(t *testing.T) {
	if Default == nil {
		t.Fatal("no Default table")
	}
	if r := Default.Row("internal/stats test", "", nil); r == nil || Default.Row("internal/stats test", "", nil) != r {
		t.Fatal("Default does not keep a row")
	}
}

// TestStringEmpty: the JSON of a table with no rows is an empty object.
func TestStringEmpty(t *testing.T) {
	var tb Table
	if got := tb.String(); got != "{}" {
		t.Fatalf("String() of an empty table = %q, want {}", got)
	}
}

// names returns the names of a JSON object, in the order written.
func names(t *testing.T, s string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("String() is not a JSON object: %v %v\n%s", tok, err, s)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("String(): %v\n%s", err, s)
		}
		keys = append(keys, tok.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("String(): %v\n%s", err, s)
		}
	}
	if _, err := dec.Token(); err != nil {
		t.Fatalf("String(): %v\n%s", err, s)
	}
	return keys
}

// TestString: String is a JSON object of the names, in order, each with
// its totals under the names the JSON documents, its Budgets' tokens when
// it has any (the largest float64 for +Inf), and its hosts' rows, each
// alike, but for the row with no host, which only adds to the totals.
func TestString(t *testing.T) {
	var tb Table
	inf, three, half, quarter := gauge(math.Inf(1)), gauge(3), gauge(1.5), gauge(2.25)

	pay := tb.Row("pay", "", nil)
	pay.SucceededAtOnce()
	pay.SucceededAtOnce()
	pay.Done(SucceededAfterRetries, 3, 2*time.Second, NoCause)
	pay.Done(FailedWithoutRetry, 1, 3, NotRetryable)
	pay.Done(FailedAfterRetries, 4, 5, MaxRetries)
	pay.Done(FailedAfterRetries, 2, 7, MaxElapsed)
	pay.Done(FailedAfterRetries, 2, 11, Deadline)
	pay.Done(FailedWithoutRetry, 1, 13, Budget)
	pay.Done(FailedWithoutRetry, 0, 17, Context)
	for range 5 {
		pay.Waited(100)
	}
	api := tb.Row("pay", "api.example:443", nil)
	api.Budget(&three)
	api.Done(SucceededAfterRetries, 2, 19, NoCause)
	api.Waited(23)
	api.Hedge()
	api.Hedge()
	api.HedgeWon()
	api.AttemptTimeout()
	api.AttemptTimeout()
	api.AttemptTimeout()
	tb.Row("pay", "b.example:443", nil).Budget(&inf)
	tb.Row("pay", "b.example:443", nil).SucceededAtOnce()

	tb.Row(`we"ird`, "", nil).SucceededAtOnce()
	sum := tb.Row("sum", "x", nil)
	sum.Budget(&half)
	sum.SucceededAtOnce()
	tb.Row("sum", "y", nil).Budget(&quarter)
	tb.Row("auth", "", nil).Done(FailedWithoutRetry, 1, 29, NotRetryable)

	s := tb.String()
	if got, want := names(t, s), []string{"auth", "pay", "sum", `we"ird`}; !reflect.DeepEqual(got, want) {
		t.Fatalf("String()'s names, in order: %q, want %q\n%s", got, want, s)
	}
	want := `{
		"auth": {"successful_without_retry": 0, "successful_with_retry": 0, "failed_without_retry": 1, "failed_with_retry": 0,
			"attempts": 1, "retries": 0, "waited_ns": 0, "took_ns": 29,
			"gave_up": {"max_retries": 0, "max_elapsed": 0, "deadline": 0, "budget": 0, "context": 0, "not_retryable": 1},
			"hedges": 0, "hedges_won": 0, "attempt_timeouts": 0},
		"pay": {"successful_without_retry": 3, "successful_with_retry": 2, "failed_without_retry": 3, "failed_with_retry": 3,
			"attempts": 18, "retries": 6, "waited_ns": 523, "took_ns": 2000000075,
			"gave_up": {"max_retries": 1, "max_elapsed": 1, "deadline": 1, "budget": 1, "context": 1, "not_retryable": 1},
			"hedges": 2, "hedges_won": 1, "attempt_timeouts": 3,
			"budget_tokens": 1.7976931348623157e+308,
			"hosts": {
				"api.example:443": {"successful_without_retry": 0, "successful_with_retry": 1, "failed_without_retry": 0, "failed_with_retry": 0,
					"attempts": 2, "retries": 1, "waited_ns": 23, "took_ns": 19,
					"gave_up": {"max_retries": 0, "max_elapsed": 0, "deadline": 0, "budget": 0, "context": 0, "not_retryable": 0},
					"hedges": 2, "hedges_won": 1, "attempt_timeouts": 3, "budget_tokens": 3},
				"b.example:443": {"successful_without_retry": 1, "successful_with_retry": 0, "failed_without_retry": 0, "failed_with_retry": 0,
					"attempts": 1, "retries": 0, "waited_ns": 0, "took_ns": 0,
					"gave_up": {"max_retries": 0, "max_elapsed": 0, "deadline": 0, "budget": 0, "context": 0, "not_retryable": 0},
					"hedges": 0, "hedges_won": 0, "attempt_timeouts": 0, "budget_tokens": 1.7976931348623157e+308}
			}},
		"sum": {"successful_without_retry": 1, "successful_with_retry": 0, "failed_without_retry": 0, "failed_with_retry": 0,
			"attempts": 1, "retries": 0, "waited_ns": 0, "took_ns": 0,
			"gave_up": {"max_retries": 0, "max_elapsed": 0, "deadline": 0, "budget": 0, "context": 0, "not_retryable": 0},
			"hedges": 0, "hedges_won": 0, "attempt_timeouts": 0, "budget_tokens": 3.75,
			"hosts": {
				"x": {"successful_without_retry": 1, "successful_with_retry": 0, "failed_without_retry": 0, "failed_with_retry": 0,
					"attempts": 1, "retries": 0, "waited_ns": 0, "took_ns": 0,
					"gave_up": {"max_retries": 0, "max_elapsed": 0, "deadline": 0, "budget": 0, "context": 0, "not_retryable": 0},
					"hedges": 0, "hedges_won": 0, "attempt_timeouts": 0, "budget_tokens": 1.5},
				"y": {"successful_without_retry": 0, "successful_with_retry": 0, "failed_without_retry": 0, "failed_with_retry": 0,
					"attempts": 0, "retries": 0, "waited_ns": 0, "took_ns": 0,
					"gave_up": {"max_retries": 0, "max_elapsed": 0, "deadline": 0, "budget": 0, "context": 0, "not_retryable": 0},
					"hedges": 0, "hedges_won": 0, "attempt_timeouts": 0, "budget_tokens": 2.25}
			}},
		"we\"ird": {"successful_without_retry": 1, "successful_with_retry": 0, "failed_without_retry": 0, "failed_with_retry": 0,
			"attempts": 1, "retries": 0, "waited_ns": 0, "took_ns": 0,
			"gave_up": {"max_retries": 0, "max_elapsed": 0, "deadline": 0, "budget": 0, "context": 0, "not_retryable": 0},
			"hedges": 0, "hedges_won": 0, "attempt_timeouts": 0}
	}`
	var got, wanted any
	if err := json.Unmarshal([]byte(s), &got); err != nil {
		t.Fatalf("String() is not JSON: %v\n%s", err, s)
	}
	if err := json.Unmarshal([]byte(want), &wanted); err != nil {
		t.Fatalf("the test's JSON: %v", err)
	}
	perCall(got) // TestEndJSON checks them
	if !reflect.DeepEqual(got, wanted) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(wanted, "", "  ")
		t.Fatalf("String():\n%s\nwant\n%s", g, w)
	}
}

// perCall deletes the per-call counts from a decoded table, its names'
// and their hosts', for the tests written before them.
func perCall(table any) {
	for _, v := range table.(map[string]any) {
		row := v.(map[string]any)
		for _, k := range []string{"status", "retries_per_call", "hedges_per_call", "retry_delay"} {
			delete(row, k)
		}
		if hosts, ok := row["hosts"]; ok {
			perCall(hosts)
		}
	}
}

// TestTokensJSON: a gauge as JSON holds it: none for NaN or -Inf, the largest
// float64 for +Inf, and any other number as it is.
func TestTokensJSON(t *testing.T) {
	for _, x := range []float64{math.NaN(), math.Inf(-1)} {
		if p := tokens(x); p != nil {
			t.Errorf("tokens(%v) = %v, want none", x, *p)
		}
	}
	for x, want := range map[float64]float64{
		math.Inf(1): math.MaxFloat64, 0: 0, 2.5: 2.5, math.MaxFloat64: math.MaxFloat64, -1: -1,
	} {
		if p := tokens(x); p == nil || *p != want {
			t.Errorf("tokens(%v) = %v, want %v", x, p, want)
		}
	}
}

// TestPastBoundReadLock: once a name counts MaxHosts hosts apart and has
// its Other row, a host past the bound finds that row under the read lock
// only, so that a client that reaches many hosts does not take the
// table's write lock on every request to them.
func TestPastBoundReadLock(t *testing.T) {
	var tb Table
	for i := range MaxHosts {
		tb.row("n", fmt.Sprint("h", i), nil)
	}
	other := tb.row("n", "past-0", nil)
	if other.host != Other {
		t.Fatalf("the first host past the bound counts under %q, want %q", other.host, Other)
	}
	var got *Row
	if waitsForLock(tb.mu.RLock, tb.mu.RUnlock, func() { got = tb.row("n", "past-1", nil) }) || got != other {
		t.Fatal("a host past the bound waited for the write lock to find the Other row")
	}
	// A name with room left still makes its host's row under the write lock.
	if !waitsForLock(tb.mu.RLock, tb.mu.RUnlock, func() { got = tb.row("m", "past-1", nil) }) || got.host != "past-1" {
		t.Fatal("a name with room made a host's row without the write lock")
	}
}

// TestAttempt: a Loop's attempts, counted as they start with Attempt, add
// to Attempts before the run ends, and its end adds none again; a count of
// zero or less adds nothing.
func TestAttempt(t *testing.T) {
	var tb Table
	r := tb.Row("n", "", nil)
	r.Attempt(1)
	r.Attempt(2)
	r.Attempt(0)
	r.Attempt(-3)
	if c := r.counts(); c.Attempts != 3 || c.Calls() != 0 {
		t.Fatalf("after Attempt(1), (2), (0), (−3): Attempts %d, calls %d; want 3 and 0", c.Attempts, c.Calls())
	}
	r.Done(FailedAfterRetries, 0, time.Second, MaxRetries)
	if c := r.counts(); c.Attempts != 3 || c.FailedAfterRetries != 1 {
		t.Fatalf("after the run's end: Attempts %d, failed after retries %d; want 3 and 1", c.Attempts, c.FailedAfterRetries)
	}
}

// TestAttemptsOnlyGrow: Attempts never goes back and never counts an
// attempt not made, read while calls that made none (their context was
// done before fn) are counted: each count only grows, as the doc says, and
// an OpenTelemetry counter read from it never resets.
func TestAttemptsOnlyGrow(t *testing.T) {
	var tb Table
	r := tb.Row("n", "", nil)
	const calls = 200000
	var made atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range calls {
			if i%2 == 0 {
				r.Done(FailedWithoutRetry, 0, 0, Context)
			} else {
				made.Add(1)
				r.SucceededAtOnce()
			}
		}
	}()
	var last uint64
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		a := r.counts().Attempts
		if a < last || a > made.Load() {
			t.Fatalf("Attempts read %d after %d, with %d attempts made", a, last, made.Load())
		}
		last = a
	}
	if a := r.counts().Attempts; a != calls/2 {
		t.Fatalf("Attempts %d, want %d", a, calls/2)
	}
}

// TestKeysApart: names and hosts that are not valid UTF-8, or hold a
// backslash, each keep a key of their own in the JSON ("adv3\xff" and
// "adv3\xfe" decoded to one key when encoding/json made each U+FFFD), and
// Key's mapping is undone by unkey.
func TestKeysApart(t *testing.T) {
	tb := &Table{}
	odd := []string{"adv3\xff", "adv3\xfe", `adv3\xff`, `adv3\\xff`, "adv3\ufffd", "plain", `a\b`, "\xc3", "é"}
	for _, n := range odd {
		tb.Row(n, "", nil).SucceededAtOnce()
		tb.Row("hosts", n, nil).SucceededAtOnce()
	}
	var got map[string]struct {
		Hosts map[string]json.RawMessage `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(tb.String()), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(odd)+1 || len(got["hosts"].Hosts) != len(odd) {
		t.Fatalf("%d names and %d hosts, want %d and %d:\n%s", len(got), len(got["hosts"].Hosts), len(odd)+1, len(odd), tb.String())
	}
	for _, n := range odd {
		if _, ok := got[Key(n)]; !ok || unkey(t, Key(n)) != n {
			t.Errorf("%q: key %q (in the JSON: %v), undone %q", n, Key(n), ok, unkey(t, Key(n)))
		}
	}
	if Key("plain") != "plain" || Key("é") != "é" || Key("adv3\ufffd") != "adv3\ufffd" {
		t.Errorf("valid UTF-8 without a backslash must be its own key")
	}
}

// unkey undoes Key, as its doc says a reader does.
func unkey(t *testing.T, k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		if k[i] != '\\' {
			b.WriteByte(k[i])
			continue
		}
		switch {
		case i+1 < len(k) && k[i+1] == '\\':
			b.WriteByte('\\')
			i++
		case i+3 < len(k) && k[i+1] == 'x':
			var c byte
			if _, err := fmt.Sscanf(k[i+2:i+4], "%02x", &c); err != nil {
				t.Fatalf("%q: %v", k, err)
			}
			b.WriteByte(c)
			i += 3
		default:
			t.Fatalf("%q: a lone backslash", k)
		}
	}
	return b.String()
}

// FuzzJSON: for any names and hosts, and any gauge a row's Budget can
// report, String is valid JSON with one key for each name, and one for
// each of a name's hosts.
func FuzzJSON(f *testing.F) {
	f.Add("adv3\xff", "adv3\xfe", "h\\x", 1.5)
	f.Add("", "", "", math.Inf(1))
	f.Add("n", "n", "other", math.NaN())
	f.Fuzz(func(t *testing.T, a, b, host string, tokens float64) {
		tb := &Table{}
		for _, n := range []string{a, b} {
			r := tb.Row(n, host, nil)
			r.SucceededAtOnce()
			r.Budget(gaugeOf(tokens))
			tb.Row(n, host+"\x00"+n, nil).Done(FailedAfterRetries, 2, time.Second, MaxRetries)
		}
		s := tb.String()
		if !json.Valid([]byte(s)) {
			t.Fatalf("not JSON: %s", s)
		}
		var got map[string]struct {
			Hosts map[string]json.RawMessage `json:"hosts"`
		}
		if err := json.Unmarshal([]byte(s), &got); err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{a: true, b: true}
		if len(got) != len(names) {
			t.Fatalf("%d keys for names %q: %s", len(got), slices.Sorted(maps.Keys(names)), s)
		}
		for n := range names {
			hosts := map[string]bool{host + "\x00" + n: true}
			if host != "" {
				hosts[host] = true
			}
			if g := len(got[Key(n)].Hosts); g != len(hosts) {
				t.Fatalf("name %q: %d host keys, want %d: %s", n, g, len(hosts), s)
			}
		}
	})
}

type gaugeOf float64

func (g gaugeOf) Tokens() float64 { return float64(g) }
