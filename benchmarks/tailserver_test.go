package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	_ "unsafe" // go:linkname, for hedgedhttp's package-level pools
)

// The host of TestTail, as an http.RoundTripper that serves from a
// testing/synctest bubble: no socket, every wait virtual. A run depends
// only on its seed: the arrivals and the replicas' pauses are drawn from
// the seed alone, and each logical request's fates from a stream of its
// own (see tailStream), so that every arm meets the same host.

// tailHost is the model of the host. Each request goes to one of replicas
// at random and is served in svcMin + Exp(mean svcExp), however many are
// in service there at once. Each replica pauses for pause at Poisson
// times, a mean of gap apart, independently (overlapping pauses merge;
// a gap of zero: no pauses): a request that arrives in a pause starts
// when it ends, and a pause that starts during its work adds its whole
// length. Of the requests, a share hang never send headers (they end when
// their context does), and a share fail answer 503 after failSvc. From
// shiftAt on (when shiftK is above zero), every service time of a request
// arriving then and every pause starting then is shiftK times as long.
// Every response has a body of body bytes.
type tailHost struct {
	replicas       int
	svcMin, svcExp time.Duration
	pause, gap     time.Duration
	hang, fail     float64
	failSvc        time.Duration
	shiftK         float64
	shiftAt        time.Duration
	body           int
}

// The streams of a seed, each its own PCG keyed by the seed and one of
// these tags, with what it is for in the low bits: the arrivals of each
// client instance, the pauses of each replica, and the fates of each
// logical request (instance << 40 | call << 8 | key: a fan-out has fewer
// than 256 keys).
const (
	tailStreamArrivals = 1 << 62
	tailStreamPauses   = 2 << 62
	tailStreamRequests = 3 << 62
)

// tailPause is one pause of a replica, [start, end) since the run began.
type tailPause struct{ start, end time.Duration }

// tailServer is one run's host: the model, its replicas' pauses, and what
// it saw. Its RoundTrip is safe for concurrent use.
type tailServer struct {
	host   tailHost
	t0     time.Time
	pauses [][]tailPause // per replica: sorted and disjoint

	seen   atomic.Int64 // requests that reached it (not refused on a done context)
	hung   atomic.Int64 // of them, those that never sent headers
	failed atomic.Int64 // answered 503
	slowed atomic.Int64 // delayed by a pause
}

// newTailServer draws the replicas' pauses that start before horizon
// from seed; t0 is when the run begins.
func newTailServer(host tailHost, seed uint64, t0 time.Time, horizon time.Duration) *tailServer {
	s := &tailServer{host: host, t0: t0, pauses: make([][]tailPause, host.replicas)}
	if host.gap <= 0 || host.pause <= 0 {
		return s
	}
	for i := range s.pauses {
		r := rand.New(rand.NewPCG(seed, tailStreamPauses|uint64(i)))
		for at := time.Duration(0); ; {
			at += time.Duration(r.ExpFloat64() * float64(host.gap))
			if at >= horizon {
				break
			}
			p := tailPause{at, at + host.scaled(at, host.pause)}
			if n := len(s.pauses[i]); n > 0 && p.start <= s.pauses[i][n-1].end {
				s.pauses[i][n-1].end = max(s.pauses[i][n-1].end, p.end)
			} else {
				s.pauses[i] = append(s.pauses[i], p)
			}
		}
	}
	return s
}

// scaled is d as the host has it at at: shiftK times d from shiftAt on.
func (h tailHost) scaled(at, d time.Duration) time.Duration {
	if h.shiftK > 0 && at >= h.shiftAt {
		return time.Duration(h.shiftK * float64(d))
	}
	return d
}

// finish is when replica rep ends work that arrives at at: the work runs
// only while the replica is not paused.
func (s *tailServer) finish(rep int, at, work time.Duration) time.Duration {
	ps := s.pauses[rep]
	t := at
	for i := sort.Search(len(ps), func(i int) bool { return ps[i].end > at }); i < len(ps) && ps[i].start < t+work; i++ {
		if ps[i].start > t {
			work -= ps[i].start - t
		}
		t = ps[i].end
	}
	return t + work
}

// pausedShare is the share of [from, to) that replicas are paused, the
// mean over them.
func (s *tailServer) pausedShare(from, to time.Duration) float64 {
	var paused time.Duration
	for _, ps := range s.pauses {
		for _, p := range ps {
			if a, b := max(p.start, from), min(p.end, to); b > a {
				paused += b - a
			}
		}
	}
	return float64(paused) / float64(to-from) / float64(len(s.pauses))
}

// tailCall is one call: when it arrived, and the requests its logical
// requests sent, as the host counts them.
type tailCall struct {
	measured bool // after the warm-up
	after    bool // at or after the shift (C)
	requests atomic.Int64
}

// tailStream is the random draws of one logical request (a call, or one
// of a fan-out's keys), carried in its context: the host takes a copy's
// replica, fate and service time from it in the order the copies arrive,
// so every arm's first attempt meets the same ones (common random
// numbers), and a hedge or a retry draws afresh.
type tailStream struct {
	mu   sync.Mutex
	r    *rand.Rand
	call *tailCall
}

type tailStreamKey struct{}

// newTailStream is the stream of key of call k of instance inst.
func newTailStream(seed uint64, inst, k, key int, call *tailCall) *tailStream {
	return &tailStream{r: rand.New(rand.NewPCG(seed, tailStreamRequests|uint64(inst)<<40|uint64(k)<<8|uint64(key))), call: call}
}

// draw returns a copy's replica in [0, replicas), its fate in [0, 1) and
// its service's exponential part, in units of its mean.
func (st *tailStream) draw(replicas int) (rep int, fate, exp float64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.r.IntN(replicas), st.r.Float64(), st.r.ExpFloat64()
}

var errTailNoStream = errors.New("tail host: a request without its stream in its context (the client dropped the context's values)")

// RoundTrip serves req. A request on a done context, or one at its
// deadline, is refused at once with the context's error, as net/http
// sends nothing on a done context (in virtual time a timer may fire in
// the very instant of the deadline, before the context's own has marked
// it done). Otherwise its headers come after its time in service, or
// never for a hang, and its context ending first ends it with the
// context's error.
func (s *tailServer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return nil, context.DeadlineExceeded
	}
	s.seen.Add(1)
	st, _ := ctx.Value(tailStreamKey{}).(*tailStream)
	if st == nil {
		return nil, errTailNoStream
	}
	st.call.requests.Add(1)
	rep, fate, exp := st.draw(s.host.replicas)
	now := time.Since(s.t0)
	status, work := http.StatusOK, s.host.svcMin+time.Duration(exp*float64(s.host.svcExp))
	switch {
	case fate < s.host.hang:
		s.hung.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	case fate < s.host.hang+s.host.fail:
		s.failed.Add(1)
		status, work = http.StatusServiceUnavailable, s.host.failSvc
	}
	work = s.host.scaled(now, work)
	done := s.finish(rep, now, work)
	if done-now > work {
		s.slowed.Add(1)
	}
	timer := time.NewTimer(done - now)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"text/plain"}},
		ContentLength: int64(s.host.body),
		Body:          &tailBody{ctx: ctx, left: s.host.body},
		Request:       req,
	}, nil
}

// tailBody is a response body of left bytes, all readable at once, that
// fails with its request's context's error once that context is done, as
// net/http's does: an arm that cancels a response it returned cannot pass
// for one that does not.
type tailBody struct {
	ctx  context.Context
	left int
}

func (b *tailBody) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	if b.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), b.left)
	clear(p[:n])
	b.left -= n
	return n, nil
}

func (b *tailBody) Close() error { return nil }

// cristalhq/hedgedhttp keeps two pools at package level: a channel of
// tasks, whose idle workers linger 10s, and a sync.Pool of timers. Neither
// can serve a synctest bubble as they are: a worker waiting on a channel
// made outside the bubble is not durably blocked, so virtual time never
// advances (the first test hung), and a timer made in one bubble may not
// be used from another. hedgedInBubble gives each bubble its own, made
// inside it, so the code that runs is hedgedhttp's own; hedgedMu keeps two
// bubbles from sharing them.
var hedgedMu sync.Mutex

//go:linkname hedgedTaskQueue github.com/cristalhq/hedgedhttp.taskQueue
var hedgedTaskQueue chan func()

//go:linkname hedgedTimerPool github.com/cristalhq/hedgedhttp.timerPool
var hedgedTimerPool sync.Pool

// hedgedInBubble must be called inside the bubble, holding hedgedMu,
// before hedgedhttp is used there; its workers end 10s (virtual) after
// their last task, so the bubble must wait that long before it returns.
func hedgedInBubble() {
	hedgedTaskQueue = make(chan func())
	hedgedTimerPool = sync.Pool{New: func() any { return time.NewTimer(time.Second) }}
}
