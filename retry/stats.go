package retry

import (
	"context"
	"errors"
	"time"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/internal/stats"
)

// Stats is the process-wide table of the calls made under a Policy.Name:
// for each name (and, for httpretry, each host), the calls by outcome, the
// attempts, the waits and the time waited, the calls that failed by why,
// the retries, hedges and time waited per call as histograms, for
// httpretry the calls by the status class of what they returned, and the
// budget's tokens as a gauge. A Policy with a Name counts in it
// with nothing else to set up; one without counts nothing. Read it as
// values ([Table.Of], [Table.Each], for an exporter), or as JSON by its
// String method, so that
//
//	expvar.Publish("retry", retry.Stats)
//
// shows it at /debug/vars. This package does not import expvar itself:
// importing it registers /debug/vars on http.DefaultServeMux in every
// program that imports the package, which is the program's choice to make.
// In the JSON, a name or host that is not valid UTF-8, or holds a
// backslash, is written with each backslash doubled and each byte that is
// not UTF-8 as \xNN, so that every row keeps a key of its own (encoding/json
// would write each such byte as U+FFFD, and two rows one key). A budget
// that never refuses (httpretry.NoBudget) writes budget_tokens as the
// largest float64, which JSON can hold where +Inf it cannot. A name keeps
// its rows, and its counts only grow, for the life of the process; a name counts at most 1,024 hosts apart, and the rest together
// under the host "other".
var Stats = (*Table)(stats.Default)

// A Table holds the counts of the calls made under each Policy.Name, and
// for httpretry each host: a row for each, made on the first call counted
// and kept for the life of the table. [Stats] is the process's, where a
// Policy counts unless its Table says otherwise. Its methods are safe for
// concurrent use, and none of them waits for a call being counted.
type Table stats.Table

// NewTable returns an empty table, for a Policy.Table: a test's own, so
// that its counts start from zero whatever ran before it.
func NewTable() *Table { return new(Table) }

// Of returns name's counts: its rows' together, every host's. A name not
// counted has zero Counts, with Tokens NaN.
func (t *Table) Of(name string) Counts { return countsOf((*stats.Table)(t).Of(name)) }

// Each calls fn for every row: a name, its host ("" for a row with none,
// [retry.Do]'s and a Loop's), and the row's counts, by name, then host.
// It reads each row's Budget for Tokens, under that Budget's lock, and
// must not be called from fn.
func (t *Table) Each(fn func(name, host string, c Counts)) {
	(*stats.Table)(t).Each(func(name, host string, c stats.Counts) { fn(name, host, countsOf(c)) })
}

// String returns the table as JSON, for expvar.Publish: an object of the
// names, sorted, each with its totals under the keys
// Counts's fields name, its budget_tokens when it has a Budget, and its
// hosts' rows alike under "hosts":
//
//	{"payments": {"successful_without_retry": 9120, …, "hosts": {"api.example:443": {…}}}}
func (t *Table) String() string { return (*stats.Table)(t).String() }

// Counts are the cumulative counts of the calls made under one name (and,
// for httpretry, to one host); Tokens is a gauge. Each count only grows.
// The JSON keys are those of [Table.String].
type Counts struct {
	// Calls by outcome, as resilience4j's retry.calls counts them by kind
	// (see [Outcome]).
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

	// httpretry's only: its calls by what RoundTrip returned. A call that
	// ends on a status not retried (a 404, a 501) is, by Outcome, a
	// success: it got its answer, and it earns the budget as one; Status
	// tells the 4xx and 5xx apart.
	Status Status `json:"status"`

	// The calls that ended, each counted once as it returned, by how many
	// retries it made (waits started, as Retries counts them), how many
	// hedges it sent (httpretry's; 0 for the rest), and how long it waited
	// in all (as Waited counts it): gRPC A96's grpc.client.call.retries
	// and grpc.client.call.retry_delay, per call. Retries and Waited count
	// each wait as it ends, so that a call still running shows its waits;
	// these count a call once it has returned, so that they can be asked
	// "how many calls needed three retries".
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
// by the class of its status code, or an error (NoResponse: every copy
// failed, a wait began after the last response, or the context ended
// first). A call of retry's own counts in none of them.
type Status struct {
	S2xx       uint64 `json:"2xx"` // 200–299, and a 1xx that ended the exchange (101 Switching Protocols)
	S3xx       uint64 `json:"3xx"` // a redirect the Client did not follow, 304 Not Modified
	S4xx       uint64 `json:"4xx"` // 400–499 returned: not retried (404), or a retried 429 out of retries
	S5xx       uint64 `json:"5xx"` // 500 and above returned: not retried (501, 505), or retried and out of retries
	NoResponse uint64 `json:"no_response"`
}

// PerCallBounds are the upper bounds of [PerCall]'s Counts but the last,
// as an OpenTelemetry histogram's explicit bounds.
var PerCallBounds = stats.PerCallBounds

// PerCall is a histogram of a number per call: Counts[i] is the calls
// that counted i, for i up to 4, and Counts[5] those that counted 5 or
// more; Sum is the numbers' sum. In JSON, {"counts": [...], "sum": n}.
type PerCall struct {
	Counts [len(stats.PerCallBounds) + 1]uint64 `json:"counts"`
	Sum    uint64                               `json:"sum"`
}

// DelayBounds are the upper bounds of [Delays]'s Counts but the last, in
// seconds: 0 (the calls that never waited), 1ms, 5ms, … 60s.
var DelayBounds = stats.DelayBounds

// Delays is a histogram of the time each call waited: Counts[i] is the
// calls whose waits came to at most DelayBounds[i] seconds and more than
// the bound before it, and the last count those above 60s; Sum is the
// time's sum. In JSON, {"counts": [...], "sum_ns": n}.
type Delays struct {
	Counts [len(stats.DelayBounds) + 1]uint64 `json:"counts"`
	Sum    time.Duration                      `json:"sum_ns"`
}

// Calls returns every call counted: the four outcomes together.
func (c Counts) Calls() uint64 {
	return c.SucceededAtOnce + c.SucceededAfterRetries + c.FailedWithoutRetry + c.FailedAfterRetries
}

// GaveUp counts the calls that failed by why they stopped, as Error.Cause
// says.
type GaveUp struct {
	MaxRetries   uint64 `json:"max_retries"`   // backoff.ErrMaxRetries
	MaxElapsed   uint64 `json:"max_elapsed"`   // backoff.ErrMaxElapsed
	Deadline     uint64 `json:"deadline"`      // backoff.ErrDeadline: a wait that could not end before the deadline
	Budget       uint64 `json:"budget"`        // ErrBudget: the retry budget refused (Envoy's upstream_rq_retry_overflow)
	Context      uint64 `json:"context"`       // the call's context ended
	NotRetryable uint64 `json:"not_retryable"` // Permanent, GiveUp, or Retryable said no
}

// countsOf is the table's counts as this package documents them.
func countsOf(c stats.Counts) Counts {
	g := c.GaveUp
	return Counts{
		SucceededAtOnce: c.SucceededAtOnce, SucceededAfterRetries: c.SucceededAfterRetries,
		FailedWithoutRetry: c.FailedWithoutRetry, FailedAfterRetries: c.FailedAfterRetries,
		Attempts: c.Attempts, Retries: c.Retries, Waited: c.Waited, Took: c.Took,
		GaveUp: GaveUp{MaxRetries: g.MaxRetries, MaxElapsed: g.MaxElapsed, Deadline: g.Deadline,
			Budget: g.Budget, Context: g.Context, NotRetryable: g.NotRetryable},
		Hedges: c.Hedges, HedgesWon: c.HedgesWon, AttemptTimeouts: c.AttemptTimeouts,
		Status:         Status(c.Status),
		RetriesPerCall: PerCall(c.RetriesPerCall), HedgesPerCall: PerCall(c.HedgesPerCall),
		RetryDelay: Delays(c.RetryDelay), Tokens: c.Tokens,
	}
}

// table is the table p counts in.
func (p *Policy) table() *stats.Table {
	if p.Table != nil {
		return (*stats.Table)(p.Table)
	}
	return stats.Default
}

// Outcome is how a call ended, as resilience4j's retry.calls counts them
// by kind. "With retry" means a wait started, as Counts.Retries counts
// retries, whether or not an attempt followed it: a call cancelled during
// its first wait failed with a retry, and a Loop's run whose first attempt
// followed a wait (after a Reset) succeeded with one.
type Outcome uint8

const (
	SucceededAtOnce       Outcome = iota // successful_without_retry
	SucceededAfterRetries                // successful_with_retry
	FailedWithoutRetry                   // failed_without_retry
	FailedAfterRetries                   // failed_with_retry
)

var outcomeNames = [...]string{
	SucceededAtOnce:       "successful_without_retry",
	SucceededAfterRetries: "successful_with_retry",
	FailedWithoutRetry:    "failed_without_retry",
	FailedAfterRetries:    "failed_with_retry",
}

// String returns the outcome's name, as resilience4j writes its kind:
// "successful_without_retry", "successful_with_retry",
// "failed_without_retry" or "failed_with_retry"; "unknown" for another
// value.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// Done describes how a call ended, for Policy.OnDone: once for each Do and
// DoValue as it returns, and for a Loop at each Reset (a run that
// succeeded) and when Wait returns false.
type Done struct {
	Outcome  Outcome
	Attempts int           // how many times fn was called (a Loop: Wait returned true)
	Elapsed  time.Duration // from the start to the end, wall clock
	Err      error         // the last error fn returned; nil after a success, and from a Loop
	Cause    error         // why it stopped, as Error.Cause; nil after a success
}

// call is what a call did, for its End.
type call struct {
	attempts int           // fn called (a Loop: Wait returned true)
	counted  bool          // its attempts counted as they started, as a Loop's are
	waits    int           // waits started
	delay    time.Duration // their time, as waited: read only under a Name
	hedges   int           // httpretry's copies beyond each attempt's first
	class    int           // what httpretry returned, for a success: its Answer's
}

// ended counts a call's end under p.Name, in one stats.End, and tells
// p.OnDone. It reads the clock only for OnDone or for a call that did not
// succeed at once, whose time the table counts; took is that time when
// the caller has it, or -1. A call that failed takes its class from its
// row's Facts: httpretry's, which say what RoundTrip returns for err.
func (p *Policy) ended(outcome Outcome, c *call, start time.Time, took time.Duration, err, cause error) {
	if took < 0 && (p.OnDone != nil || outcome != SucceededAtOnce) {
		took = time.Since(start)
	}
	if p.Name != "" {
		r := p.row()
		e := stats.End{
			Outcome: int(outcome), Cause: causeOf(cause, outcome), Attempts: c.attempts,
			Retries: c.waits, Delay: c.delay, Took: took, Hedges: c.hedges, Class: c.class,
		}
		if c.counted {
			e.Attempts = 0
		}
		if f := r.Facts(); f != nil && (outcome == FailedWithoutRetry || outcome == FailedAfterRetries) {
			e.Class, _ = f(err)
		}
		r.End(e)
	}
	if p.OnDone != nil {
		p.OnDone(Done{Outcome: outcome, Attempts: c.attempts, Elapsed: took, Err: err, Cause: cause})
	}
}

// row is p's row in the table, with its Budget as the row's gauge.
func (p *Policy) row() *stats.Row {
	r := p.table().Row(p.Name, p.Host, nil)
	if p.Budget != nil {
		r.Budget(p.Budget)
	}
	return r
}

// outcome is the outcome of a call that gave up after waits started: with
// a retry once a wait has started, as the table counts a retry, so that
// the kinds and retry.retries agree (a call cancelled in its first wait
// failed with a retry).
func outcome(waits int) Outcome {
	if waits > 0 {
		return FailedAfterRetries
	}
	return FailedWithoutRetry
}

// causeOf sorts why a call stopped for the table.
func causeOf(cause error, o Outcome) int {
	switch {
	case o == SucceededAtOnce || o == SucceededAfterRetries:
		return stats.NoCause
	case cause == nil:
		return stats.NotRetryable
	case cause == backoff.ErrMaxRetries:
		return stats.MaxRetries
	case cause == backoff.ErrMaxElapsed:
		return stats.MaxElapsed
	case cause == backoff.ErrDeadline:
		return stats.Deadline
	case cause == ErrBudget:
		return stats.Budget
	case errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded):
		return stats.Context
	}
	return stats.Context // a cause of the context's own, set by WithCancelCause
}
