package stats

import "time"

// SucceededAtOnce and Done are the table's old entry points, kept for the
// tests that count through them: each is one End.
func (r *Row) SucceededAtOnce() { r.End(End{Outcome: SucceededAtOnce, Attempts: 1}) }

func (r *Row) Done(outcome, attempts int, took time.Duration, cause int) {
	r.End(End{Outcome: outcome, Attempts: attempts, Took: took, Cause: cause})
}
