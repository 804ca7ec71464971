package benchmarks

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	_ "unsafe" // go:linkname, for hedgedhttp's package-level pools
)

// The in-memory dependency of TestTail. It decides each request's fate
// from the scenario's seed and the request's identity (client, call, key,
// and which copy of that key it is: the first request, a hedge or a retry
// each get their own draw), so every arm meets the same fates whatever its
// timing, and a run depends only on the seed. It serves from a
// testing/synctest bubble: every wait is virtual.

// tailFate is what the server does with one request: answer with status
// after wait, or never send headers (hang).
type tailFate struct {
	status int
	wait   time.Duration
	hang   bool
}

// tailModel draws a request's fate from r, for a request arriving at at
// (since the run began); shifted reports whether scenario C's shift has
// happened.
type tailModel interface {
	fate(r *rand.Rand, at time.Duration, shifted bool) tailFate
}

// slowModel is scenarios A and C: of every request, 5% answer 503 after
// 1ms, 2% answer after 1.5s, 1% never send headers, and the rest answer
// after a wait uniform in [3ms, 7ms]. After the shift (C), every wait is
// ×4.
type slowModel struct{}

func (slowModel) fate(r *rand.Rand, _ time.Duration, shifted bool) tailFate {
	scale := time.Duration(1)
	if shifted {
		scale = 4
	}
	u, v := r.Float64(), r.Float64()
	switch {
	case u < 0.05:
		return tailFate{status: http.StatusServiceUnavailable, wait: scale * time.Millisecond}
	case u < 0.07:
		return tailFate{status: http.StatusOK, wait: scale * 1500 * time.Millisecond}
	case u < 0.08:
		return tailFate{hang: true}
	}
	return tailFate{status: http.StatusOK, wait: scale * (3*time.Millisecond + time.Duration(v*float64(4*time.Millisecond)))}
}

// replicaModel is scenario B, The Tail at Scale: Replicas replicas behind
// one host, each request sent to one of them at random, each serving in a
// time uniform in [2ms, 10ms] but pausing now and then (a pause starts at
// Poisson rate 1/PauseEvery on each replica, independently, and lasts a
// time uniform in [0.5s, 1.5s]). A pause stops the replica's work: a
// request arriving in a pause, or in service when one starts, finishes
// its remaining work after the pause ends.
type replicaModel struct {
	pauses [][]tailPause // per replica, sorted, disjoint
}

type tailPause struct{ start, end time.Duration }

const (
	tailReplicas   = 10
	tailPauseEvery = 200 * time.Second
)

// newReplicaModel draws every replica's pauses up to horizon from seed.
func newReplicaModel(seed uint64, horizon time.Duration) *replicaModel {
	m := &replicaModel{pauses: make([][]tailPause, tailReplicas)}
	for i := range m.pauses {
		r := rand.New(rand.NewPCG(seed, 1<<62|uint64(i)))
		t := time.Duration(0)
		for {
			t += time.Duration(r.ExpFloat64() * float64(tailPauseEvery))
			if t >= horizon {
				break
			}
			d := 500*time.Millisecond + time.Duration(r.Float64()*float64(time.Second))
			m.pauses[i] = append(m.pauses[i], tailPause{t, t + d})
			t += d
		}
	}
	return m
}

func (m *replicaModel) fate(r *rand.Rand, at time.Duration, _ bool) tailFate {
	pauses := m.pauses[r.IntN(tailReplicas)]
	work := 2*time.Millisecond + time.Duration(r.Float64()*float64(8*time.Millisecond))
	t := at
	for i := sort.Search(len(pauses), func(i int) bool { return pauses[i].end > at }); i < len(pauses); i++ {
		p := pauses[i]
		if p.start >= t+work {
			break
		}
		if p.start > t {
			work -= p.start - t
		}
		t = p.end
	}
	return tailFate{status: http.StatusOK, wait: t + work - at}
}

// pausedShare is the share of [0, horizon) in which at least one replica
// is paused: about the share of fan-out calls that meet a pause, since a
// call of 100 keys sends some to every replica (all but 0.9^100 of the
// time).
func (m *replicaModel) pausedShare(horizon time.Duration) float64 {
	var all []tailPause
	for _, ps := range m.pauses {
		all = append(all, ps...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].start < all[j].start })
	var covered, end time.Duration
	for _, p := range all {
		if p.start > end {
			end = p.start
		}
		if p.end > end {
			covered += p.end - end
			end = p.end
		}
	}
	return float64(covered) / float64(horizon)
}

// tailServer counts what it saw and holds the model and the shift.
type tailServer struct {
	model    tailModel
	seed     uint64
	t0       time.Time
	shifted  atomic.Bool
	requests atomic.Int64
}

// tailCall is one call, carried in its requests' contexts: who made it,
// how many requests the server saw for each of its keys, and when and how
// it ended.
type tailCall struct {
	client, index int
	sent          []atomic.Int32 // per key
	latency       time.Duration
	ok            bool
	second        bool // C: started after the shift
}

type tailCallKey struct{}

func (c *tailCall) requests() int {
	n := 0
	for i := range c.sent {
		n += int(c.sent[i].Load())
	}
	return n
}

// tailConn is the Base an arm is built on: an http.RoundTripper into the
// server. With a headerTimeout, it gives up on headers after that long,
// as http.Transport's ResponseHeaderTimeout does, with the same error.
type tailConn struct {
	srv           *tailServer
	headerTimeout time.Duration
}

// errTailHeaderTimeout is what net/http returns past ResponseHeaderTimeout:
// a net.Error whose Timeout is true.
var errTailHeaderTimeout error = tailTimeoutError{}

type tailTimeoutError struct{}

func (tailTimeoutError) Error() string   { return "net/http: timeout awaiting response headers" }
func (tailTimeoutError) Timeout() bool   { return true }
func (tailTimeoutError) Temporary() bool { return true }

func (c tailConn) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return nil, err // never sent
	}
	call := ctx.Value(tailCallKey{}).(*tailCall)
	key, err := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/k/"))
	if err != nil || key < 0 || key >= len(call.sent) {
		return nil, fmt.Errorf("tail server: no key in %q", req.URL.Path)
	}
	copyOf := call.sent[key].Add(1) - 1
	c.srv.requests.Add(1)
	id := (uint64(call.client)<<24|uint64(call.index))<<16 | uint64(key)<<8 | uint64(copyOf)
	f := c.srv.model.fate(rand.New(rand.NewPCG(c.srv.seed, id)), time.Since(c.srv.t0), c.srv.shifted.Load())
	timedOut := false
	if c.headerTimeout > 0 && (f.hang || f.wait > c.headerTimeout) {
		f, timedOut = tailFate{wait: c.headerTimeout}, true
	}
	if f.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	timer := time.NewTimer(f.wait)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if timedOut {
		return nil, errTailHeaderTimeout
	}
	return &http.Response{
		StatusCode: f.status, Status: fmt.Sprintf("%d %s", f.status, http.StatusText(f.status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"text/plain"}},
		Body:    &tailBody{ctx: ctx, data: tailBodyFor(key)},
		Request: req,
	}, nil
}

// tailBodyFor is the body the server sends for key, which the caller
// checks.
func tailBodyFor(key int) []byte { return []byte("value of key " + strconv.Itoa(key) + "\n") }

// tailBody is a small response body that fails, as net/http's does, once
// its request's context is done before it is read to the end: an arm
// that cuts a body it returned cannot pass for one that does not.
type tailBody struct {
	ctx  context.Context
	data []byte
	off  int
}

func (b *tailBody) Read(p []byte) (int, error) {
	if b.off == len(b.data) {
		return 0, io.EOF
	}
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	n := copy(p, b.data[b.off:])
	b.off += n
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
