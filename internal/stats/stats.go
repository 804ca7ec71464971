// Package stats is the table retry and httpretry count named policies in:
// a row of atomic counters for each name and host, which retry exports as
// retry.Stats and retry.Counts. It lives apart so that httpretry can count
// what only it sees (hedges, attempt timeouts) in the rows retry.Do counts
// the rest in.
package stats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Counts are the cumulative counts of the calls made under one name (and,
// for httpretry, to one host), since the process started; Tokens is a
// gauge. Each count only grows.
type Counts struct {
	// Calls by outcome, as resilience4j's retry.calls counts them by kind.
	SucceededAtOnce       uint64 `json:"successful_without_retry"`
	SucceededAfterRetries uint64 `json:"successful_with_retry"`
	FailedWithoutRetry    uint64 `json:"failed_without_retry"`
	FailedAfterRetries    uint64 `json:"failed_with_retry"`

	Attempts uint64        `json:"attempts"`  // fn called (httpretry: attempts, not the copies of one)
	Retries  uint64        `json:"retries"`   // waits started
	Waited   time.Duration `json:"waited_ns"` // the waits' time, as waited (one cut short, as far as it went)
	Took     time.Duration `json:"took_ns"`   // the time the calls that failed at least once took, from start to return

	GaveUp GaveUp `json:"gave_up"` // the calls that failed, by why they stopped

	// httpretry's only: copies sent beyond each attempt's first, those
	// that won, and requests that timed out awaiting their headers.
	Hedges          uint64 `json:"hedges"`
	HedgesWon       uint64 `json:"hedges_won"`
	AttemptTimeouts uint64 `json:"attempt_timeouts"`

	// httpretry's only: the calls by the status class of what RoundTrip
	// returned.
	Status Status `json:"status"`

	// The calls that ended, by how many retries each made (waits started),
	// how many hedges each sent, and how long each waited in all.
	RetriesPerCall PerCall `json:"retries_per_call"`
	HedgesPerCall  PerCall `json:"hedges_per_call"`
	RetryDelay     Delays  `json:"retry_delay"`

	// Tokens is the retries the row's Budget would allow now (+Inf for
	// one that never refuses), or NaN when no call counted here had a
	// Budget; of several, the one its last call counted. A name's total
	// holds its rows' sum, so a Budget that several rows share counts once
	// in each.
	Tokens float64 `json:"-"`
}

// Status counts httpretry's calls by what RoundTrip returned: a response,
// by its status class, or an error.
type Status struct {
	S2xx       uint64 `json:"2xx"` // 1xx (101 Switching Protocols) and 2xx
	S3xx       uint64 `json:"3xx"`
	S4xx       uint64 `json:"4xx"`
	S5xx       uint64 `json:"5xx"` // 500 and above
	NoResponse uint64 `json:"no_response"`
}

// PerCallBounds are the upper bounds of PerCall's counts but the last.
var PerCallBounds = [...]float64{0, 1, 2, 3, 4}

// PerCall is a histogram of a count per call: Counts[i] the calls that
// counted i, the last those that counted 5 or more; Sum the counts' sum.
type PerCall struct {
	Counts [len(PerCallBounds) + 1]uint64 `json:"counts"`
	Sum    uint64                         `json:"sum"`
}

// DelayBounds are the upper bounds of Delays's counts but the last, in
// seconds, as OpenTelemetry's histograms write them.
var DelayBounds = [...]float64{0, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Delays is a histogram of the time each call waited: Counts[i] the calls
// whose wait was at most DelayBounds[i] seconds (and above the bound
// before), the last those above 60s; Sum the waits' sum.
type Delays struct {
	Counts [len(DelayBounds) + 1]uint64 `json:"counts"`
	Sum    time.Duration                `json:"sum_ns"`
}

// GaveUp counts the calls that failed by why they stopped, as
// retry.Error.Cause says.
type GaveUp struct {
	MaxRetries   uint64 `json:"max_retries"`   // backoff.ErrMaxRetries
	MaxElapsed   uint64 `json:"max_elapsed"`   // backoff.ErrMaxElapsed
	Deadline     uint64 `json:"deadline"`      // backoff.ErrDeadline: a wait that could not end before the deadline
	Budget       uint64 `json:"budget"`        // retry.ErrBudget: the retry budget refused (Envoy's upstream_rq_retry_overflow)
	Context      uint64 `json:"context"`       // the call's context ended
	NotRetryable uint64 `json:"not_retryable"` // Permanent, GiveUp, or Retryable said no
}

// Calls returns every call counted: the four outcomes together.
func (c Counts) Calls() uint64 {
	return c.SucceededAtOnce + c.SucceededAfterRetries + c.FailedWithoutRetry + c.FailedAfterRetries
}

// add adds d to c.
func (c *Counts) add(d Counts) {
	c.SucceededAtOnce += d.SucceededAtOnce
	c.SucceededAfterRetries += d.SucceededAfterRetries
	c.FailedWithoutRetry += d.FailedWithoutRetry
	c.FailedAfterRetries += d.FailedAfterRetries
	c.Attempts += d.Attempts
	c.Retries += d.Retries
	c.Waited += d.Waited
	c.Took += d.Took
	c.GaveUp.MaxRetries += d.GaveUp.MaxRetries
	c.GaveUp.MaxElapsed += d.GaveUp.MaxElapsed
	c.GaveUp.Deadline += d.GaveUp.Deadline
	c.GaveUp.Budget += d.GaveUp.Budget
	c.GaveUp.Context += d.GaveUp.Context
	c.GaveUp.NotRetryable += d.GaveUp.NotRetryable
	c.Hedges += d.Hedges
	c.HedgesWon += d.HedgesWon
	c.AttemptTimeouts += d.AttemptTimeouts
	c.Status.S2xx += d.Status.S2xx
	c.Status.S3xx += d.Status.S3xx
	c.Status.S4xx += d.Status.S4xx
	c.Status.S5xx += d.Status.S5xx
	c.Status.NoResponse += d.Status.NoResponse
	c.RetriesPerCall.add(d.RetriesPerCall)
	c.HedgesPerCall.add(d.HedgesPerCall)
	for i, n := range d.RetryDelay.Counts {
		c.RetryDelay.Counts[i] += n
	}
	c.RetryDelay.Sum += d.RetryDelay.Sum
	switch {
	case math.IsNaN(c.Tokens):
		c.Tokens = d.Tokens
	case !math.IsNaN(d.Tokens):
		c.Tokens += d.Tokens
	}
}

func (h *PerCall) add(d PerCall) {
	for i, n := range d.Counts {
		h.Counts[i] += n
	}
	h.Sum += d.Sum
}

// Outcomes, as End.Outcome says them.
const (
	SucceededAtOnce = iota
	SucceededAfterRetries
	FailedWithoutRetry
	FailedAfterRetries
)

// Causes, as End.Cause says them.
const (
	NoCause = iota // a success
	MaxRetries
	MaxElapsed
	Deadline
	Budget
	Context
	NotRetryable
	causes
)

// Classes of what an httpretry call returned, as End.Class says them;
// NotHTTP for a call of retry's.
const (
	NotHTTP = iota
	Class2xx
	Class3xx
	Class4xx
	Class5xx
	NoResponse
	classes
)

// ClassOf is the class of a response's status code.
func ClassOf(code int) int {
	switch {
	case code < 300:
		return Class2xx
	case code < 400:
		return Class3xx
	case code < 500:
		return Class4xx
	}
	return Class5xx
}

// An End is how one call ended: the one value its counts are made from,
// told to Row.End once, as the call returns.
type End struct {
	Outcome  int           // SucceededAtOnce, …
	Cause    int           // NoCause for a success, or why it stopped
	Attempts int           // its attempts not already counted by Row.Attempt
	Retries  int           // waits started
	Delay    time.Duration // the waits' time, as waited
	Took     time.Duration // start to return; counted for a call that did not succeed at once
	Hedges   int           // httpretry's copies sent beyond each attempt's first
	Class    int           // NotHTTP, or what httpretry's RoundTrip returned
}

// An Answer is what httpretry's attempt returns to retry.Do for a response
// that is the answer, in place of nil, so that the call's End can say its
// class and hedges: a non-nil error that retry takes for success, never
// shown to a user. Under 256 as an interface value, it costs no
// allocation (the runtime keeps those boxed).
type Answer uint8

// AnswerOf is the Answer for a response of class c after hedges hedges
// (at most 31 told).
func AnswerOf(c, hedges int) Answer { return Answer(c | min(hedges, 31)<<3) }

func (a Answer) Error() string { return "httpretry: answered" }

// Class and Hedges are what the Answer says.
func (a Answer) Class() int  { return int(a & 7) }
func (a Answer) Hedges() int { return int(a >> 3) }

// Facts says, for an error an httpretry attempt returned, the class of
// what RoundTrip returns should the call end on it (NoResponse once a
// wait began after it), and the hedges the attempt sent. httpretry gives
// it to the rows it counts in.
type Facts func(err error) (class, hedges int)

// A Row counts one name and host. Its methods are safe for concurrent use.
type Row struct {
	name, host string
	facts      Facts           // httpretry's, for its rows; nil for retry's
	atOnce     [stripes]stripe // calls that succeeded at once, by class, striped: the happy path's count
	calls      [4]atomic.Uint64
	attempts   atomic.Uint64 // the attempts of every call but those atOnce counts
	retries    atomic.Uint64
	waited     atomic.Int64
	took       atomic.Int64
	gaveUp     [causes]atomic.Uint64
	hedges     atomic.Uint64
	hedgesWon  atomic.Uint64
	timeouts   atomic.Uint64
	class      [classes]atomic.Uint64 // the calls atOnce does not count, by class
	perCall    [2]histogram           // retries, hedges: the calls atOnce does not count
	delays     [len(DelayBounds) + 1]atomic.Uint64
	delaySum   atomic.Int64
	budget     atomic.Value // the interface{ Tokens() float64 } Budget last counted
}

type histogram struct {
	n   [len(PerCallBounds) + 1]atomic.Uint64
	sum atomic.Uint64
}

func (h *histogram) add(v int) {
	h.n[min(v, len(PerCallBounds))].Add(1)
	h.sum.Add(uint64(v))
}

func (h *histogram) read(atOnce uint64) PerCall {
	var p PerCall
	for i := range h.n {
		p.Counts[i] = h.n[i].Load()
	}
	p.Counts[0] += atOnce
	p.Sum = h.sum.Load()
	return p
}

// stripes spread the happy path's count over cache lines, one chosen at
// random for each call (the runtime's per-thread generator), so that
// goroutines on other processors rarely add to the same line:
// BenchmarkDoNamedParallel in retry.
const stripes = 16

type stripe struct {
	n [classes]atomic.Uint64
	_ [64 - classes*8]byte
}

// Facts returns the row's Facts: httpretry's, or nil.
func (r *Row) Facts() Facts { return r.facts }

// End counts a call that ended: the one place a call's counts are made.
// A call that succeeded at its first attempt, without a hedge, is the
// happy path's one atomic add; every other call counts each of its
// numbers.
func (r *Row) End(e End) {
	if e.Outcome == SucceededAtOnce && e.Attempts == 1 && e.Retries == 0 && e.Hedges == 0 {
		r.atOnce[rand.Uint32()%stripes].n[e.Class].Add(1)
		return
	}
	r.calls[e.Outcome].Add(1)
	r.Attempt(e.Attempts)
	if e.Outcome != SucceededAtOnce {
		r.took.Add(int64(max(e.Took, 0)))
	}
	if e.Cause != NoCause {
		r.gaveUp[e.Cause].Add(1)
	}
	r.class[e.Class].Add(1)
	r.perCall[0].add(e.Retries)
	r.perCall[1].add(e.Hedges)
	delay := max(e.Delay, 0)
	i, _ := slices.BinarySearch(DelayBounds[:], delay.Seconds())
	r.delays[i].Add(1)
	r.delaySum.Add(int64(delay))
}

// Attempt counts n attempts of a call not yet ended: a Loop counts each
// as it starts, so that a supervisor that never ends shows them.
func (r *Row) Attempt(n int) {
	if n > 0 {
		r.attempts.Add(uint64(n))
	}
}

// Waited counts a wait, as long as it went, as it ends: the row's
// retries and time waited, which a call that never ends shows too.
func (r *Row) Waited(d time.Duration) {
	r.retries.Add(1)
	r.waited.Add(int64(max(d, 0)))
}

// Hedge counts a copy sent beyond an attempt's first; HedgeWon one that
// won; AttemptTimeout a request that timed out awaiting its headers.
func (r *Row) Hedge()          { r.hedges.Add(1) }
func (r *Row) HedgeWon()       { r.hedgesWon.Add(1) }
func (r *Row) AttemptTimeout() { r.timeouts.Add(1) }

// Budget makes b the row's gauge of tokens: the Budget the row's last call
// counted, so that a host whose Budget httpretry forgot and made anew is
// read from the new one. b's dynamic type must be the same on every call
// (retry's *Budget): a pointer in an interface, stored without allocating,
// and only when it changes.
func (r *Row) Budget(b interface{ Tokens() float64 }) {
	if r.budget.Load() != any(b) {
		r.budget.Store(b)
	}
}

// counts reads the row. Each count is a sum of counts that only grow, so
// that it only grows, whatever the order they are read in.
func (r *Row) counts() Counts {
	var atOnce [classes]uint64
	for i := range r.atOnce {
		for c := range atOnce {
			atOnce[c] += r.atOnce[i].n[c].Load()
		}
	}
	var all uint64 // the calls at once, every class
	for _, n := range atOnce {
		all += n
	}
	class := func(c int) uint64 { return atOnce[c] + r.class[c].Load() }
	c := Counts{
		SucceededAtOnce:       r.calls[SucceededAtOnce].Load() + all,
		SucceededAfterRetries: r.calls[SucceededAfterRetries].Load(),
		FailedWithoutRetry:    r.calls[FailedWithoutRetry].Load(),
		FailedAfterRetries:    r.calls[FailedAfterRetries].Load(),
		Attempts:              all + r.attempts.Load(),
		Retries:               r.retries.Load(),
		Waited:                time.Duration(r.waited.Load()),
		Took:                  time.Duration(r.took.Load()),
		GaveUp: GaveUp{
			MaxRetries: r.gaveUp[MaxRetries].Load(), MaxElapsed: r.gaveUp[MaxElapsed].Load(),
			Deadline: r.gaveUp[Deadline].Load(), Budget: r.gaveUp[Budget].Load(),
			Context: r.gaveUp[Context].Load(), NotRetryable: r.gaveUp[NotRetryable].Load(),
		},
		Hedges:          r.hedges.Load(),
		HedgesWon:       r.hedgesWon.Load(),
		AttemptTimeouts: r.timeouts.Load(),
		Status: Status{
			S2xx: class(Class2xx), S3xx: class(Class3xx), S4xx: class(Class4xx), S5xx: class(Class5xx),
			NoResponse: class(NoResponse),
		},
		RetriesPerCall: r.perCall[0].read(all),
		HedgesPerCall:  r.perCall[1].read(all),
		Tokens:         math.NaN(),
	}
	for i := range r.delays {
		c.RetryDelay.Counts[i] = r.delays[i].Load()
	}
	c.RetryDelay.Counts[0] += all
	c.RetryDelay.Sum = time.Duration(r.delaySum.Load())
	if b, ok := r.budget.Load().(interface{ Tokens() float64 }); ok {
		c.Tokens = b.Tokens()
	}
	return c
}

// MaxHosts is how many hosts a name counts apart; the calls to hosts past
// them count under the host Other, so that a client that reaches a million
// hosts keeps a bounded table, and no count ever goes back.
const (
	MaxHosts = 1024
	Other    = "other"
)

// A Table holds a Row for each name and host, made on first use and kept
// for the life of the process. Its methods are safe for concurrent use.
type Table struct {
	mu    sync.RWMutex
	rows  map[key]*Row
	hosts map[string]int // how many hosts each name counts apart
	cache [256]atomic.Pointer[Row]
}

type key struct{ name, host string }

// Default is the process-wide table.
var Default = &Table{}

// Row returns the row for name and host, making it on first use, with
// facts (httpretry's; nil for retry's) when it makes it. A row found
// before is found again from a small cache indexed by a hash of the two
// strings, without a lock that the callers of every row would contend
// on: BenchmarkDoNamedParallel in retry.
func (t *Table) Row(name, host string, facts Facts) *Row {
	slot := &t.cache[slotOf(name, host)]
	if r := slot.Load(); r != nil && r.name == name && r.host == host {
		return r
	}
	r := t.row(name, host, facts)
	slot.Store(r)
	return r
}

// seed is the cache's hash seed.
var seed = maphash.MakeSeed()

// slotOf is the cache's slot for name and host: two string hashes, 6ns
// where maphash.Comparable of the pair took 13 (BenchmarkDoNamed).
func slotOf(name, host string) uint64 {
	h := maphash.String(seed, name)
	if host != "" {
		h ^= maphash.String(seed, host) * 0x9e3779b97f4a7c15
	}
	return h & 255
}

func (t *Table) row(name, host string, facts Facts) *Row {
	t.mu.RLock()
	r := t.rows[key{name, host}]
	if r == nil && host != "" && t.hosts[name] >= MaxHosts {
		r = t.rows[key{name, Other}] // a host past the bound: no write lock for it
	}
	t.mu.RUnlock()
	if r != nil {
		return r
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if r = t.rows[key{name, host}]; r != nil {
		return r
	}
	if t.rows == nil {
		t.rows, t.hosts = map[key]*Row{}, map[string]int{}
	}
	if host != "" && host != Other {
		if t.hosts[name] >= MaxHosts {
			if r = t.rows[key{name, Other}]; r == nil {
				r = &Row{name: name, host: Other, facts: facts}
				t.rows[key{name, Other}] = r
			}
			return r
		}
		t.hosts[name]++
	}
	r = &Row{name: name, host: host, facts: facts}
	t.rows[key{name, host}] = r
	return r
}

// Of returns name's counts, its hosts' rows added together.
func (t *Table) Of(name string) Counts {
	c := Counts{Tokens: math.NaN()}
	t.mu.RLock()
	defer t.mu.RUnlock()
	for k, r := range t.rows {
		if k.name == name {
			c.add(r.counts())
		}
	}
	return c
}

// Each calls fn for every row, by name and then host: the host is ""
// for the calls of retry.Do and a Loop, and httpretry's host ("api.example:443")
// for a Transport's.
func (t *Table) Each(fn func(name, host string, c Counts)) {
	t.mu.RLock()
	rows := make([]*Row, 0, len(t.rows))
	for _, r := range t.rows {
		rows = append(rows, r)
	}
	t.mu.RUnlock()
	slices.SortFunc(rows, func(a, b *Row) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.host, b.host)
	})
	for _, r := range rows {
		fn(r.name, r.host, r.counts())
	}
}

// String returns the table as JSON, an object of names, sorted, each its
// totals and its hosts' rows, so that expvar.Publish("retry", retry.Stats)
// shows it at /debug/vars:
//
//	{"payments": {"successful_without_retry": 9120, …, "hosts": {"api.example:443": {…}}}}
func (t *Table) String() string {
	type entry struct {
		Counts
		Tokens *float64                  `json:"budget_tokens,omitempty"`
		Hosts  map[string]json.Marshaler `json:"hosts,omitempty"`
	}
	names := map[string]*Counts{}
	hosts := map[string]map[string]json.Marshaler{}
	var order []string
	t.Each(func(name, host string, c Counts) {
		total, ok := names[name]
		if !ok {
			total = &Counts{Tokens: math.NaN()}
			names[name] = total
			order = append(order, name)
		}
		total.add(c)
		if host != "" {
			if hosts[name] == nil {
				hosts[name] = map[string]json.Marshaler{}
			}
			hosts[name][Key(host)] = row(c)
		}
	})
	var b bytes.Buffer
	b.WriteByte('{')
	for i, name := range order {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(Key(name))
		b.Write(k)
		b.WriteByte(':')
		v, _ := json.Marshal(entry{Counts: *names[name], Tokens: tokens(names[name].Tokens), Hosts: hosts[name]})
		b.Write(v)
	}
	b.WriteByte('}')
	return b.String()
}

// Key is a name or host as the table's JSON writes it, so that no two
// rows share a key: a string of valid UTF-8 without a backslash as it is;
// otherwise each backslash doubled and each byte that is not valid UTF-8
// written \xNN, in hex (encoding/json would make every such byte U+FFFD,
// so that "a\xff" and "a\xfe" decoded to one key). The mapping is one to
// one, and undone by reading \\ as \ and \xNN as the byte.
func Key(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// row is a host's Counts as JSON, with its gauge.
type row Counts

func (r row) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Counts
		Tokens *float64 `json:"budget_tokens,omitempty"`
	}{Counts(r), tokens(r.Tokens)})
}

// tokens is a gauge as JSON can hold it: none for NaN, and the largest
// float64 for +Inf, which JSON cannot write.
func tokens(x float64) *float64 {
	switch {
	case math.IsNaN(x) || math.IsInf(x, -1):
		return nil
	case math.IsInf(x, 1):
		x = math.MaxFloat64
	}
	return &x
}
