package httpretry

import (
	"context"
	"io"
	"net/http"
	"sync"
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
