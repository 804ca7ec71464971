package httpretry

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// A flight is one attempt that AttemptTimeout or Hedge bounds. Unhedged,
// its one copy goes from the caller's goroutine, and AttemptTimeout's
// timer cuts it. Hedged, every copy goes from a goroutine of its own and
// the caller waits for the first answer, so that no copy holds the
// caller once another has answered, however long Base takes to return a
// cancelled one; one timer sends the hedges and times the copies out.
//
// The copies' outcomes are judged (Retryable, GetBody: the caller's code)
// outside the flight's lock, and a copy's place in the race is claimed
// once, by an atomic state, the moment Base returns it: so a copy that
// answered in time is never judged timed out because another held the
// lock, and no copy's callback holds the winner.
type flight struct {
	rt     request
	ctx    context.Context // the request's
	delay  time.Duration   // between copies; 0: not hedged
	sent   int             // the request's sends before this attempt's first
	linger bool            // losers are left to finish, for their connections: net/http's Transport, to a host not known to speak HTTP/2
	first  leg

	mu       sync.Mutex
	timer    *time.Timer   // hedged: the hedges and the copies' timeouts
	next     time.Time     // when the next hedge is due; zero for none
	more     []*leg        // the hedges, sent or being readied
	sends    int           // copies sent
	pending  int           // copies sent, or being readied, whose outcome is not in
	over     bool          // decided: a copy won, every copy has failed, or the context ended
	win      *leg          // the copy that won
	last     *leg          // the copy that failed last, while none has won
	done     chan struct{} // closed once over
	panicked *any          // a copy's goroutine panicked with this: the caller panics with it
	gone     []*leg        // outcomes let go, closed once the lock is let go (unlock)
}

// The states of a copy: sent, then exactly one of the others, claimed
// with a compare-and-swap by whichever comes first.
const (
	unsent    int32 = iota // a hedge being readied (its body from GetBody)
	flying                 // sent; Base has not returned it
	returned               // Base returned it in time: its outcome counts
	timedOut               // AttemptTimeout passed before Base returned it
	lost                   // the flight was decided before it returned: cancelled
	lingering              // the same, left to finish for its connection, within bounds
)

// A leg is one copy sent: its own context, and, once it has headers and
// is kept, the body that releases the context when closed or read to its
// end.
type leg struct {
	f        *flight
	req      http.Request
	cancel   context.CancelFunc
	unwatch  func() bool // ends the watch that cancels a detached copy with the request
	start    time.Time
	deadline time.Time   // start + AttemptTimeout; zero without one
	timer    *time.Timer // unhedged: AttemptTimeout's, which cancels it; lingering: its bound
	state    atomic.Int32
	counted  bool        // its time went to the latency estimate
	in       bool        // its outcome was taken in, under the flight's lock (arrive)
	ended    time.Time   // when it failed, as the flight's last
	dropped  atomic.Bool // its kept outcome was let go (dropKept)
	resp     *http.Response
	err      error
	body     io.ReadCloser // resp's own, which Read and Close wrap
}

// lingerTime bounds how long a losing copy is left to finish, beside its
// AttemptTimeout: longer than a host's pause is seldom worth a goroutine,
// and a connection costs a handshake, a few round trips.
const lingerTime = time.Second

// fly sends one attempt of req as a flight, with body as its body, and
// returns its outcome: when hedged (delay above 0), the answer (answer
// true) or the failure that came last, a response or a transport error;
// when not, the one copy's response or error, for the caller to judge.
func (rt *request) fly(ctx context.Context, req *http.Request, body io.ReadCloser, delay time.Duration, sent int) (resp *http.Response, answer bool, sends int, err error) {
	f := &flight{rt: *rt, ctx: ctx, delay: delay, sent: sent}
	if delay <= 0 {
		resp, err = f.once(req, body)
		return resp, false, 1, err
	}
	return f.hedged(req, body)
}

// once sends the flight's one copy from the caller's goroutine, timed out
// by AttemptTimeout's timer, which cancels it: a timer that Stop finds
// already fired timed it out, whenever Base returned.
func (f *flight) once(req *http.Request, body io.ReadCloser) (*http.Response, error) {
	c := &f.first
	f.start(c, req, body, 0, time.Now())
	c.state.Store(flying)
	if timeout := f.rt.t.AttemptTimeout; timeout > 0 {
		c.timer = time.AfterFunc(timeout, c.cancel)
	}
	defer func() {
		if r := recover(); r != nil { // Base panicked: nothing is left behind
			if c.timer != nil {
				c.timer.Stop()
			}
			c.release()
			panic(r)
		}
	}()
	resp, err := send(f.rt.base, &c.req)
	now := time.Now()
	if c.timer != nil && !c.timer.Stop() {
		c.state.Store(timedOut)
		if resp != nil {
			resp.Body.Close()
		}
		resp, err = nil, ErrAttemptTimeout
		if r := f.rt.row; r != nil {
			r.AttemptTimeout()
		}
	} else {
		c.state.Store(returned)
	}
	f.count(c, resp != nil, now)
	if resp != nil && f.rt.hedge != nil { // an adaptive Hedge still without its delay
		f.rt.hedge.earn(f.rt.t.Hedge.share())
		f.rt.hedge.saw(resp) // so that its first hedged attempt knows an HTTP/2 host
	}
	c.keep(resp, err)
	return resp, err
}

// hedged sends the flight's first copy, and its hedges as they come due,
// each from a goroutine of its own, and waits for the flight to be
// decided or the request's context to end.
func (f *flight) hedged(req *http.Request, body io.ReadCloser) (resp *http.Response, answer bool, sends int, err error) {
	_, netHTTP := f.rt.base.(*http.Transport)
	f.linger = netHTTP && !f.rt.hedge.h2.Load()
	f.done = make(chan struct{})
	now := time.Now()
	c := &f.first
	f.start(c, req, body, 0, now)
	f.mu.Lock() // the timer's tick may run before AfterFunc returns
	f.pending, f.sends = 1, 1
	c.state.Store(flying)
	f.next = now.Add(f.delay)
	f.timer = time.AfterFunc(f.wake(now, false), f.tick)
	f.mu.Unlock()
	go f.run(c)
	select {
	case <-f.done:
	case <-f.ctx.Done():
		f.mu.Lock()
		if !f.over { // a copy that failed is kept: the attempt's outcome, as an unhedged one's would be
			f.decide(time.Now())
		}
		f.unlockElsewhere()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.panicked; p != nil {
		panic(*p)
	}
	switch {
	case f.win != nil:
		return f.win.resp, true, f.sends, nil
	case f.last != nil:
		return f.last.resp, false, f.sends, f.last.err
	}
	return nil, false, f.sends, f.ctx.Err()
}

// start readies c, the copy after idx others of this flight, to be sent at now, with its
// own context and body. A copy of a flight whose losers may linger has a
// context of its own, detached from the request's cancellation (the
// request's values and deadline are still there): the flight cancels it
// while the request waits for it, and, for the copy kept, a watch on the
// request's context.
func (f *flight) start(c *leg, req *http.Request, body io.ReadCloser, idx int, now time.Time) {
	parent := f.ctx
	if f.linger {
		parent = detached{f.ctx}
	}
	ctx, cancel := context.WithCancel(parent)
	if n := f.sent + idx; n > 0 { // sends of the request before this one
		ctx = withResend(ctx, n)
	}
	c.f, c.req, c.cancel, c.start = f, *req.WithContext(ctx), cancel, now
	c.req.Body = body
	if timeout := f.rt.t.AttemptTimeout; timeout > 0 {
		c.deadline = now.Add(timeout)
	}
}

// detached is a request's context without its cancellation, for a copy
// that may be left to finish after its flight is decided.
type detached struct{ context.Context }

func (detached) Done() <-chan struct{} { return nil }
func (detached) Err() error            { return nil }

// run sends c from a goroutine of its own, and takes in its outcome.
func (f *flight) run(c *leg) {
	defer f.catch()
	resp, err := send(f.rt.base, &c.req)
	f.arrive(c, resp, err)
}

// arrive takes in what Base returned for c: its outcome, if Base returned
// it before it timed out or lost; else what is left to do with it.
func (f *flight) arrive(c *leg, resp *http.Response, err error) {
	now := time.Now()
	if !c.state.CompareAndSwap(flying, returned) {
		f.late(c, resp, now)
		return
	}
	// Judged before the lock is taken: Retryable is the caller's code.
	answer := err == nil && f.rt.answers(f.ctx, resp)
	if resp != nil {
		f.rt.hedge.saw(resp)
		if c == &f.first && now.Sub(c.start) < f.delay { // an attempt that needed no hedge earns one
			f.rt.hedge.earn(f.rt.t.Hedge.share())
		}
	}
	f.mu.Lock()
	c.in = true
	f.pending--
	f.count(c, resp != nil, now)
	if f.over { // decided after Base returned it, before the lock: another copy won, or the context ended
		f.mu.Unlock()
		if f.linger {
			c.settle(resp)
		} else {
			c.drop(resp)
		}
		return
	}
	switch {
	case answer:
		f.letGo(f.last)
		c.keep(resp, nil)
		f.win = c
		if r := f.rt.row; r != nil && c != &f.first {
			r.HedgeWon()
		}
		f.decide(now)
	case f.last != nil && (f.last.ended.After(now) || err != nil && f.ctx.Err() != nil):
		// judged after a copy that failed later, which stays the last; or
		// cut by the request's own context, which is no failure of the host
		c.resp = resp
		f.letGo(c)
		if f.pending == 0 {
			f.decide(now)
		}
	default:
		f.letGo(f.last)
		c.keep(resp, err)
		c.ended, f.last = now, c
		if f.pending == 0 { // every copy sent has failed: so has the attempt
			f.decide(now)
		}
	}
	if !f.over { // a hedge held while c was judged may be due now
		f.rearm(time.Now())
	}
	f.unlock()
}

// letGo drops c's outcome, once the lock is let go (unlock): c is no
// longer the flight's last. A body's Close is Base's code, which may take
// its time or panic, so it never runs under the lock.
func (f *flight) letGo(c *leg) {
	if c == nil {
		return
	}
	if c == f.last {
		f.last = nil
	}
	f.gone = append(f.gone, c)
}

// unlock lets the flight's lock go, then drops the outcomes let go under
// it, on this goroutine: a copy's own, which has nothing else to do.
func (f *flight) unlock() {
	gone := f.gone
	f.gone = nil
	f.mu.Unlock()
	for _, c := range gone {
		c.dropKept()
	}
}

// unlockElsewhere is unlock for a goroutine that has more to do, the
// timer's (a hedge to send) or the caller's (its answer): the outcomes
// let go are dropped from a goroutine of their own, so that a slow Close
// holds no copy and no caller. A panic in such a Close goes with it: the
// outcome was let go.
func (f *flight) unlockElsewhere() {
	gone := f.gone
	f.gone = nil
	f.mu.Unlock()
	if len(gone) > 0 {
		go func() {
			for _, c := range gone {
				func() {
					defer func() { recover() }()
					c.dropKept()
				}()
			}
		}()
	}
}

// late handles a copy Base returned after it timed out or lost: a copy
// left to linger settles, its time counted and its body drained so that
// its connection is kept; any other is let go.
func (f *flight) late(c *leg, resp *http.Response, now time.Time) {
	if c.state.CompareAndSwap(lingering, returned) {
		if resp != nil {
			f.rt.hedge.saw(resp)
		}
		f.mu.Lock() // decide sets the timer under it, after the state
		c.timer.Stop()
		f.count(c, resp != nil, now)
		f.mu.Unlock()
		c.settle(resp)
		return
	}
	c.drop(resp)
}

// settle drains what a copy that is not kept returned, within the bounds
// of a retried body's drain, and closes it, so that its connection can be
// reused; then releases its context.
func (c *leg) settle(resp *http.Response) {
	if resp != nil {
		cut := time.AfterFunc(drainTime, c.cancel)
		io.CopyN(io.Discard, resp.Body, drainLimit)
		cut.Stop()
		resp.Body.Close()
	}
	c.release()
}

// decide ends the flight: no more hedges, and every copy still in flight
// cancelled, its time counted as cut off; or, when a copy has won and the
// losers may linger, left to finish within their bounds. The copy kept of
// a flight whose copies are detached gets a watch that cancels it with the
// request's context.
func (f *flight) decide(now time.Time) {
	f.over = true
	if f.timer != nil {
		f.timer.Stop()
	}
	linger := f.linger && f.win != nil
	f.each(func(c *leg) {
		switch {
		case linger && c.state.CompareAndSwap(flying, lingering):
			bound := lingerTime
			if !c.deadline.IsZero() {
				bound = min(bound, c.deadline.Sub(now))
			}
			if d, ok := f.ctx.Deadline(); ok { // the detached context keeps it, but nothing enforces it
				bound = min(bound, d.Sub(now))
			}
			c.timer = time.AfterFunc(bound, c.unlinger)
		case c.state.CompareAndSwap(flying, lost):
			f.count(c, false, now)
			c.cancel()
		}
	})
	if kept := f.kept(); kept != nil && kept.resp != nil && f.linger {
		kept.unwatch = context.AfterFunc(f.ctx, kept.cancel)
	}
	close(f.done)
}

// kept is the copy whose outcome the flight keeps: the winner, or the
// copy that failed last.
func (f *flight) kept() *leg {
	if f.win != nil {
		return f.win
	}
	return f.last
}

// unlinger cuts a losing copy left to finish once its bound has passed.
func (c *leg) unlinger() {
	if c.state.CompareAndSwap(lingering, lost) {
		f := c.f
		f.mu.Lock()
		f.count(c, false, time.Now())
		f.mu.Unlock()
		c.cancel()
	}
}

// each calls do for every copy, the first first.
func (f *flight) each(do func(*leg)) {
	do(&f.first)
	for _, l := range f.more {
		do(l)
	}
}

// count gives c's time to the host's latency estimate, once: the time to
// its headers, or, for a copy cut off (timed out, cancelled as a loser or
// with the request, or at the end of its linger, whenever that comes), the
// time it ran, which its headers were known to take longer than. A
// failure without headers tells nothing of the host's latency.
func (f *flight) count(c *leg, headers bool, now time.Time) {
	lat := f.rt.lat
	if lat == nil || c.counted {
		return
	}
	took, cut := now.Sub(c.start), false
	switch st := c.state.Load(); {
	case headers:
	case st == timedOut:
		took, cut = min(took, f.rt.t.AttemptTimeout), true
	case st == lost:
		cut = true
	default:
		return
	}
	c.counted = true
	lat.add(took, cut, now, f.rt.t.Hedge.share())
}

// tick runs on the flight's timer: it times out the copies past their
// AttemptTimeout, and sends the next hedge when one is due. A panic on its
// goroutine, in Base, GetBody or Retryable, would end the process, where
// no recover reaches: it is handed to the caller's goroutine instead
// (catch).
func (f *flight) tick() {
	defer f.catch()
	hedge := f.step()
	if hedge == nil || !f.ready(hedge) {
		return
	}
	resp, err := send(f.rt.base, &hedge.req)
	f.arrive(hedge, resp, err)
}

// step is tick's work under the lock: the copies timed out, and the hedge
// to ready, if one is due and allowed.
func (f *flight) step() *leg {
	f.mu.Lock()
	defer f.unlockElsewhere()
	if f.over {
		return nil
	}
	now := time.Now()
	f.each(func(c *leg) {
		if !c.deadline.IsZero() && !now.Before(c.deadline) && c.state.CompareAndSwap(flying, timedOut) {
			f.timedOut(c, now)
		}
	})
	if f.over { // every copy has timed out
		return nil
	}
	var hedge *leg
	if !f.next.IsZero() && !now.Before(f.next) && !f.judging() {
		f.next = time.Time{}
		if hedge = f.reserve(); hedge != nil && len(f.more) < f.rt.t.Hedge.hedges() {
			f.next = now.Add(f.delay) // the next, a delay after the newest
		}
	}
	f.rearm(now)
	return hedge
}

// judging reports whether a copy has returned, its headers or its error
// in, and is being judged outside the lock: no hedge is sent meanwhile,
// since a copy that has its headers needs none (arrive, taking it in,
// sends one then if it is still due).
func (f *flight) judging() bool {
	j := false
	f.each(func(c *leg) { j = j || c.state.Load() == returned && !c.in })
	return j
}

// rearm sets the flight's timer for when it is next due (wake): the next
// hedge, unless one is held while a copy is judged, or a copy's timeout.
func (f *flight) rearm(now time.Time) {
	if d := f.wake(now, f.judging()); d >= 0 {
		f.timer.Reset(d)
	}
}

// timedOut takes in the timeout of c, which has failed: its context
// cancelled, its time counted as cut off, its outcome the flight's last.
func (f *flight) timedOut(c *leg, now time.Time) {
	f.pending--
	if r := f.rt.row; r != nil {
		r.AttemptTimeout()
	}
	f.count(c, false, now)
	f.letGo(f.last)
	c.keep(nil, ErrAttemptTimeout)
	c.ended, f.last = now, c
	if f.pending == 0 {
		f.decide(now)
	}
}

// reserve readies a hedge, if one may be sent: the request's context is
// live, a hedge is left, the host's budget has a retry left (none is
// overload, and hedging stops), and the Hedge's allowance for the host
// has a hedge. It is sent once ready has its body.
func (f *flight) reserve() *leg {
	rt := &f.rt
	if f.ctx.Err() != nil || len(f.more) >= rt.t.Hedge.hedges() || rt.budget.Tokens() < 1 || !rt.hedge.take() {
		return nil
	}
	c := new(leg)
	f.more = append(f.more, c)
	f.pending++
	return c
}

// ready gives the reserved hedge c its body, from GetBody, outside the
// lock (it is the caller's code), and sends it unless the flight was
// decided meanwhile or GetBody failed, which sends no hedge.
func (f *flight) ready(c *leg) bool {
	rt := &f.rt
	body := rt.req.Body
	if body != nil && body != http.NoBody {
		var err error
		if body, err = rt.req.GetBody(); err != nil || body == nil {
			body = nil
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.over || body == nil && rt.req.Body != nil {
		if body != nil {
			body.Close()
		}
		f.pending--
		if !f.over && f.pending == 0 {
			f.decide(time.Now())
		}
		return false
	}
	f.start(c, rt.req, body, f.sends, time.Now()) // after every copy sent before it
	c.state.Store(flying)
	f.sends++
	f.rearm(time.Now()) // its own timeout may be the nearest
	if rt.row != nil {
		rt.row.Hedge()
	}
	return true
}

// catch recovers a panic on a copy's or the timer's goroutine, ends the
// flight, and keeps the panic for the caller, who is waiting for the
// flight and panics with it; once the flight is over, no caller waits,
// and the panic goes with its copy.
func (f *flight) catch() {
	r := recover()
	if r == nil {
		return
	}
	f.mu.Lock()
	if f.over {
		f.mu.Unlock()
		return
	}
	p := r // only a panic escapes to the heap
	f.panicked = &p
	f.linger = false // nothing is left behind
	f.decide(time.Now())
	f.mu.Unlock()
	f.each(func(c *leg) {
		defer func() { recover() }() // a second panic, in a body's Close: the caller has the first
		c.dropKept()
	})
}

// wake returns how long from now until the flight's timer is next due: the
// next hedge (unless held), or the nearest AttemptTimeout of a copy in
// flight; -1 for none.
func (f *flight) wake(now time.Time, held bool) time.Duration {
	next := f.next
	if held {
		next = time.Time{}
	}
	f.each(func(c *leg) {
		if c.state.Load() == flying && !c.deadline.IsZero() && (next.IsZero() || c.deadline.Before(next)) {
			next = c.deadline
		}
	})
	if next.IsZero() {
		return -1
	}
	return max(next.Sub(now), 0)
}

// keep keeps c's outcome as the flight's: a response whose body releases
// c's context once closed or read to its end, or an error, whose context
// is released now.
func (c *leg) keep(resp *http.Response, err error) {
	c.resp, c.err = resp, err
	if resp == nil {
		c.release()
		return
	}
	c.body, resp.Body = resp.Body, c
	if rw, ok := c.body.(io.ReadWriteCloser); ok && resp.StatusCode == http.StatusSwitchingProtocols {
		resp.Body = &upgraded{c, rw} // the connection itself: it must stay writable
	}
}

// upgraded is the body of a 101 Switching Protocols response, which
// net/http makes the connection, to read and write: written through, and
// read and closed as a leg's body is.
type upgraded struct {
	*leg
	w io.Writer
}

func (u *upgraded) Write(p []byte) (int, error) { return u.w.Write(p) }

// drop lets c's outcome go: its body closed, its context released.
func (c *leg) drop(resp *http.Response) {
	if resp != nil {
		resp.Body.Close()
	}
	c.release()
}

// dropKept drops the outcome c kept, once, however many of the flight's
// paths let it go.
func (c *leg) dropKept() {
	if !c.dropped.Swap(true) {
		c.drop(c.resp)
	}
}

// release cancels c's context, and ends the watch on the request's.
func (c *leg) release() {
	if c.cancel != nil {
		c.cancel()
	}
	if c.unwatch != nil {
		c.unwatch()
	}
}

func (c *leg) Read(p []byte) (int, error) {
	n, err := c.body.Read(p)
	if err != nil {
		c.release()
	}
	return n, err
}

func (c *leg) Close() error {
	err := c.body.Close()
	c.release()
	return err
}

// hedgeDelay returns the delay before the first hedge of an attempt, or 0
// for none: Hedge.Delay, or the host's estimate, 0 until it has enough
// samples.
func (rt *request) hedgeDelay() time.Duration {
	h := rt.t.Hedge
	switch {
	case h == nil || h.hedges() == 0:
		return 0
	case h.Delay > 0:
		return h.Delay
	}
	return rt.lat.estimate()
}
