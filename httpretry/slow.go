package httpretry

import (
	"net/http"
	"sync/atomic"
	"time"
)

// ErrAttemptTimeout is the error of an attempt whose response headers took
// longer than Transport.AttemptTimeout. It is a [net.Error] whose Timeout
// reports true, and DefaultRetryable retries it.
var ErrAttemptTimeout error = attemptTimeout{}

type attemptTimeout struct{}

func (attemptTimeout) Error() string   { return "httpretry: attempt timed out awaiting response headers" }
func (attemptTimeout) Timeout() bool   { return true }
func (attemptTimeout) Temporary() bool { return true }

// Hedge sends more copies of a request whose response headers are slow to
// come, and returns the first answer: the tail of a slow host's latency
// traded for a bounded share of extra requests (Dean and Barroso, "The
// Tail at Scale", CACM 2013). Set it as Transport.Hedge; the package doc
// says what is hedged, how a copy wins, and what a hedge costs.
//
// The zero Hedge is adaptive: it hedges a request once it has gone without
// headers for longer than 95% of the host's recent requests did (or, where
// a slow few are much slower than the rest, at the knee before them; see
// Delay), so that 5% to 7.5% of requests are hedged, or, where more than
// 5% never answer within the attempt, up to 1.5 times that share, so that
// every one of them is hedged early; and it sends no more hedges to a host
// than its allowance, 2 × ExtraLoad of the attempts that needed none. A
// Hedge keeps, for at most 1,024 hosts, each one's latency estimate and
// allowance, and is safe for concurrent use by any number of Transports
// and goroutines; it must not be copied after first use, and its fields
// must not change while it is in use.
type Hedge struct {
	// Delay, when above zero, is how long a copy goes without headers
	// before the next is sent. Zero or less is adaptive: the (1 −
	// ExtraLoad) quantile of the host's recent times to headers, each
	// time cut off before its headers counted as longer than it ran
	// (the Kaplan–Meier estimate); or, where the times run flat (a few
	// very slow requests), the knee: the time 1.5 × ExtraLoad lie above,
	// when that is less than half the quantile, since a delay twice as
	// long that hedges no fewer than two thirds as many is not worth its
	// wait: so a two-mode mix whose slow mode holds between ExtraLoad and
	// 1.5 × ExtraLoad of the times is hedged at the edge of its fast
	// mode, all its slow requests, rather than late in the slow mode,
	// where a hedge saves little. It is within a bucket's eighth of an octave, and fades over
	// about 500 samples or 100 seconds, so that a shift shows within
	// 2,000 requests or 5 minutes. No hedge is sent until the host has
	// the weight of 40 samples (2/ExtraLoad, at least 20 and at most
	// 50), which a host sent one request a second has by about its 55th
	// (50: its 76th), a host sent fewer than about one every 2.3 seconds
	// (50: 1.8) never: give it a fixed delay.
	Delay time.Duration
	// ExtraLoad is the share of requests an adaptive delay hedges, and
	// half the share the allowance pays for, with any delay (counted in
	// millionths of a hedge, rounded down). Zero or less (or NaN) means
	// 0.05, the 95th percentile; above 1, 1.
	ExtraLoad float64
	// Max is the most copies sent beyond the first, each Delay after the
	// one before. Zero means 1; below zero, none; above 31, 31 (which
	// is as many as retry.Stats counts of one attempt).
	Max int

	hosts hosts[hedgeHost]
}

// hedgeHost is what a Hedge keeps of one host: its latency, its
// allowance of hedges, and whether it answers in HTTP/2.
type hedgeHost struct {
	lat    latency
	tokens atomic.Int64 // the allowance, in millionths of a hedge (allowanceUnit)
	h2     atomic.Bool  // its last response came over HTTP/2: a cancelled copy costs no connection
}

// The allowance: each attempt whose first copy answers before the hedge
// delay, needing no hedge, earns allowanceRate × ExtraLoad of a hedge, up
// to allowanceMost hedges held; a hedge takes one; a new host holds
// allowanceStart, and none once the Hedge has forgotten a host (past
// 1,024), since it may be one it forgot. So the hedges to a host are, over
// any interval, at most allowanceMost plus allowanceRate × ExtraLoad × the
// attempts in it, whatever the delay; and when most requests are slower
// than the delay, as in an overload, few earn, and hedging stops by
// itself.
const (
	allowanceRate  = 2
	allowanceMost  = 100
	allowanceStart = 1
	allowanceUnit  = 1_000_000 // a hedge; an attempt's share is rounded down to it, so that the bound holds exactly
)

// newHedgeHost makes a host's entry, holding allowanceStart hedges.
func newHedgeHost(hostKey) *hedgeHost {
	h := new(hedgeHost)
	h.tokens.Store(allowanceStart * allowanceUnit)
	return h
}

// earn adds an attempt's share of a hedge to h's allowance.
func (h *hedgeHost) earn(share float64) {
	per, most := int64(allowanceRate*share*allowanceUnit), int64(allowanceMost*allowanceUnit)
	for {
		v := h.tokens.Load()
		if v >= most || h.tokens.CompareAndSwap(v, min(v+per, most)) {
			return
		}
	}
}

// take takes a hedge from h's allowance, and reports whether it held one.
func (h *hedgeHost) take() bool {
	for {
		v := h.tokens.Load()
		if v < allowanceUnit {
			return false
		}
		if h.tokens.CompareAndSwap(v, v-allowanceUnit) {
			return true
		}
	}
}

// saw notes the protocol of a response from h.
func (h *hedgeHost) saw(resp *http.Response) {
	if h2 := resp.ProtoMajor == 2; (h2 || resp.ProtoMajor == 1) && h.h2.Load() != h2 {
		h.h2.Store(h2)
	}
}

// share is ExtraLoad, normalised.
func (h *Hedge) share() float64 {
	switch e := h.ExtraLoad; {
	case !(e > 0):
		return 0.05
	case e > 1:
		return 1
	default:
		return e
	}
}

// adaptive reports whether the Hedge estimates its delay.
func (h *Hedge) adaptive() bool { return h.Delay <= 0 && h.hedges() > 0 }

// hedges is Max, normalised.
func (h *Hedge) hedges() int {
	if h.Max == 0 {
		return 1
	}
	return min(max(h.Max, 0), maxHedges)
}

// maxHedges is the most hedges of one attempt: stats.AnswerOf tells retry
// up to 31.
const maxHedges = 31
