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
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"
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

	// Tokens is the retries the row's Budget would allow now (+Inf for
	// one that never refuses), or NaN when no call counted here had a
	// Budget; of several, the one its last call counted. A name's total
	// holds its rows' sum, so a Budget that several rows share counts once
	// in each.
	Tokens float64 `json:"-"`
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
	switch {
	case math.IsNaN(c.Tokens):
		c.Tokens = d.Tokens
	case !math.IsNaN(d.Tokens):
		c.Tokens += d.Tokens
	}
}

// Outcomes, as Row.Done takes them.
const (
	SucceededAtOnce = iota
	SucceededAfterRetries
	FailedWithoutRetry
	FailedAfterRetries
)

// Causes, as Row.Done takes them.
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

// A Row counts one name and host. Its methods are safe for concurrent use.
type Row struct {
	name, host string
	atOnce     [stripes]stripe // calls that succeeded at once, striped: the happy path's count
	calls      [4]atomic.Uint64
	attempts   atomic.Uint64 // the attempts of every call but those SucceededAtOnce counts
	retries    atomic.Uint64
	waited     atomic.Int64
	took       atomic.Int64
	gaveUp     [causes]atomic.Uint64
	hedges     atomic.Uint64
	hedgesWon  atomic.Uint64
	timeouts   atomic.Uint64
	budget     atomic.Value // the interface{ Tokens() float64 } Budget last counted
}

// stripes spread the happy path's count over cache lines, chosen by where
// the caller's stack is, so that goroutines on other processors rarely add
// to the same line: BenchmarkDoNamedParallel in retry, 66ns a call on one
// counter against 21ns with no Name.
const stripes = 16

type stripe struct {
	n atomic.Uint64
	_ [56]byte
}

// SucceededAtOnce counts a call that succeeded at its first attempt: the
// happy path's one atomic add.
func (r *Row) SucceededAtOnce() {
	var here byte
	r.atOnce[uintptr(unsafe.Pointer(&here))>>12%stripes].n.Add(1)
}

// Done counts a call that ended otherwise: its outcome, its attempts (those
// not counted already by Attempt), the time it took, and why it stopped.
func (r *Row) Done(outcome, attempts int, took time.Duration, cause int) {
	r.calls[outcome].Add(1)
	r.Attempt(attempts)
	if outcome != SucceededAtOnce {
		r.took.Add(int64(max(took, 0)))
	}
	if cause != NoCause {
		r.gaveUp[cause].Add(1)
	}
}

// Attempt counts n attempts of a call not yet ended: a Loop counts each
// as it starts, so that a supervisor that never ends shows them.
func (r *Row) Attempt(n int) {
	if n > 0 {
		r.attempts.Add(uint64(n))
	}
}

// Waited counts a wait, as long as it went.
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

func (r *Row) sumAtOnce() (n uint64) {
	for i := range r.atOnce {
		n += r.atOnce[i].n.Load()
	}
	return n
}

// counts reads the row.
func (r *Row) counts() Counts {
	atOnce := r.sumAtOnce()
	c := Counts{
		SucceededAtOnce:       r.calls[SucceededAtOnce].Load() + atOnce,
		SucceededAfterRetries: r.calls[SucceededAfterRetries].Load(),
		FailedWithoutRetry:    r.calls[FailedWithoutRetry].Load(),
		FailedAfterRetries:    r.calls[FailedAfterRetries].Load(),
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
		Tokens:          math.NaN(),
	}
	// Two counts that only grow, so that their sum only grows, whatever
	// the order they are read in: a call that made no attempt adds nothing.
	c.Attempts = atOnce + r.attempts.Load()
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

// Row returns the row for name and host, making it on first use. A row
// found before is found again from a small cache keyed by where name's
// bytes are, so that a Policy's constant name costs a load and a compare,
// not a hash of the name (measured: BenchmarkDoNamed in retry).
func (t *Table) Row(name, host string) *Row {
	slot := &t.cache[(uintptr(unsafe.Pointer(unsafe.StringData(name)))^uintptr(unsafe.Pointer(unsafe.StringData(host))))>>3&255]
	if r := slot.Load(); r != nil && r.name == name && r.host == host {
		return r
	}
	r := t.row(name, host)
	slot.Store(r)
	return r
}

func (t *Table) row(name, host string) *Row {
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
				r = &Row{name: name, host: Other}
				t.rows[key{name, Other}] = r
			}
			return r
		}
		t.hosts[name]++
	}
	r = &Row{name: name, host: host}
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

// String returns the table as JSON, an object of names, each its totals
// and its hosts' rows, so that expvar.Publish("retry", retry.Stats) shows
// it at /debug/vars:
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
