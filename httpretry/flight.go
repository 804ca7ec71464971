package httpretry

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// A flight is one attempt that AttemptTimeout or Hedge bounds: its first
// leg, sent from the caller's goroutine, and any hedges, each sent from
// the goroutine of the timer that sent it. Its first leg is part of it, so
// that an attempt with no hedge makes one object of its own.
type flight struct {
	rt    request
	ctx   context.Context // the request's
	delay time.Duration   // between copies; 0: no hedge
	sent  int             // the request's sends before this attempt's first
	first leg

	mu       sync.Mutex
	timer    *time.Timer   // for hedges and their timeouts; nil when not hedged
	next     time.Time     // when the next hedge is due; zero for none
	more     []*leg        // the hedges sent
	now      bool          // the next hedge is due at once: a copy failed
	pending  int           // legs sent whose outcome is not in
	over     bool          // decided: a leg won, or every leg sent has failed
	win      *leg          // the leg that won
	last     *leg          // the leg that failed last, while none has won
	done     chan struct{} // closed once over, made with the first hedge
	panicked *any          // a hedge's goroutine panicked with this: the caller panics with it
}

// A leg is one request sent: its own context, a child of the request's,
// and, once it has headers and is kept, the body that releases the
// context when closed or read to its end.
type leg struct {
	f        *flight
	req      http.Request
	cancel   context.CancelFunc
	start    time.Time
	deadline time.Time   // start + AttemptTimeout; zero without one
	timer    *time.Timer // AttemptTimeout's, when not hedged
	finished bool        // its outcome is in
	timedOut bool
	counted  bool // its time went to the latency estimate
	resp     *http.Response
	err      error
	body     io.ReadCloser // resp's own, which Read and Close wrap
}

// fly sends one attempt of req as a flight, with body as its body, and
// returns its outcome: when hedged (delay above 0), the answer (answer
// true) or the failure that came last, a response or a transport error;
// when not, the one leg's response or error, for the caller to judge.
func (rt *request) fly(ctx context.Context, req *http.Request, body io.ReadCloser, delay time.Duration, sent int) (resp *http.Response, answer bool, sends int, err error) {
	f := &flight{rt: *rt, ctx: ctx, delay: delay, sent: sent}
	c := &f.first
	f.start(c, req, body, time.Now())
	f.pending = 1
	defer func() {
		if r := recover(); r != nil {
			f.abort()
			panic(r)
		}
	}()
	if delay > 0 {
		f.mu.Lock() // the timer's tick may run before AfterFunc returns
		f.next = c.start.Add(delay)
		f.timer = time.AfterFunc(f.wake(c.start), f.tick)
		f.mu.Unlock()
	} else if timeout := rt.t.AttemptTimeout; timeout > 0 {
		c.timer = time.AfterFunc(timeout, c.cancel)
	}
	resp, err = send(rt.base, &c.req)
	f.finish(c, resp, err)
	f.mu.Lock()
	over, done := f.over, f.done
	f.mu.Unlock()
	if !over {
		<-done // a hedge is in flight: done was made with it
	}
	if p := f.panicked; p != nil { // read after done: catch set it before deciding
		panic(*p)
	}
	sends = 1 + len(f.more) // done, or over and read under the lock: no hedge is added after
	if w := f.win; w != nil {
		return w.resp, true, sends, nil
	}
	return f.last.resp, false, sends, f.last.err
}

// start readies c to be sent at now, with its own context and body.
func (f *flight) start(c *leg, req *http.Request, body io.ReadCloser, now time.Time) {
	ctx, cancel := context.WithCancel(f.ctx)
	n := f.sent // sends of the request before this one
	if c != &f.first {
		n += len(f.more) + 1
	}
	if n > 0 {
		ctx = withResend(ctx, n)
	}
	c.f, c.req, c.cancel, c.start = f, *req.WithContext(ctx), cancel, now
	c.req.Body = body
	if timeout := f.rt.t.AttemptTimeout; timeout > 0 {
		c.deadline = now.Add(timeout)
	}
}

// finish takes in the outcome of leg c.
func (f *flight) finish(c *leg, resp *http.Response, err error) {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending--
	c.finished = true
	if c.timer != nil && !c.timer.Stop() {
		c.timedOut = true
	}
	if c.timedOut {
		if resp != nil {
			resp.Body.Close()
		}
		resp, err = nil, ErrAttemptTimeout
		if r := f.rt.row; r != nil {
			r.AttemptTimeout()
		}
	}
	f.count(c, resp != nil, now)
	switch {
	case f.over: // another leg won: this one lost
		c.drop(resp)
	case err == nil && f.delay > 0 && f.rt.answers(f.ctx, resp): // hedged: the first answer wins
		if f.last != nil {
			f.last.drop(f.last.resp)
			f.last = nil
		}
		c.keep(resp, nil)
		f.win = c
		if r := f.rt.row; r != nil && c != &f.first {
			r.HedgeWon()
		}
		f.decide(now)
	default:
		if f.last != nil {
			f.last.drop(f.last.resp)
		}
		c.keep(resp, err)
		f.last = c
		switch {
		case f.shortcut(resp, err):
			// gRFC A6's hedging: a failure that another copy may not meet
			// sends the next hedge now, rather than after the delay.
			f.now = true
			f.timer.Reset(0)
			if f.done == nil {
				f.done = make(chan struct{})
			}
		case f.pending == 0: // every leg sent has failed: so has the attempt
			f.decide(now)
		}
	}
}

// shortcut reports whether a copy's retryable failure sends the next
// hedge at once: when the flight is hedged, a hedge is left, the request's
// context is live, the failure did not name its own wait (a Retry-After,
// which the retry obeys instead), and Policy.Retryable, when set, would
// retry it.
func (f *flight) shortcut(resp *http.Response, err error) bool {
	if f.delay <= 0 || len(f.more) >= f.rt.t.Hedge.hedges() || f.ctx.Err() != nil {
		return false
	}
	if err != nil {
		return f.rt.retryable(nil, err) && f.rt.policyRetries(err)
	}
	if _, named := f.rt.retryAfter(resp); named {
		return false
	}
	return f.rt.policyRetries(&StatusError{Response: resp})
}

// decide ends the flight: no more hedges, and every leg still in flight
// cancelled, its time counted as cut off when it had waited longer than
// the hedge delay.
func (f *flight) decide(now time.Time) {
	f.over = true
	if f.timer != nil {
		f.timer.Stop()
	}
	f.each(func(c *leg) {
		if !c.finished {
			f.count(c, false, now)
			c.cancel()
		}
	})
	if f.done != nil {
		close(f.done)
	}
}

// each calls do for every leg sent, the first first.
func (f *flight) each(do func(*leg)) {
	do(&f.first)
	for _, l := range f.more {
		do(l)
	}
}

// count gives c's time to the host's latency estimate, once: a leg with
// headers, or one cut off (timed out, or cancelled after the hedge delay)
// as long. A failure without headers tells nothing of the host's latency.
func (f *flight) count(c *leg, headers bool, now time.Time) {
	lat := f.rt.lat
	if lat == nil || c.counted {
		return
	}
	took := now.Sub(c.start)
	cut := c.timedOut || (!headers && f.delay > 0 && took >= f.delay && f.ctx.Err() == nil)
	if headers || cut {
		c.counted = true
		lat.add(took, cut, now, f.rt.t.Hedge.share())
	}
}

// tick runs on the flight's timer: it times out the copies past their
// AttemptTimeout, sends the next hedge when one is due, and sets the timer
// for what comes next. A panic on its goroutine, in Base, GetBody or
// Retryable, would end the process, where no recover reaches: it is handed
// to the caller's goroutine instead (catch).
func (f *flight) tick() {
	defer f.catch()
	if hedge := f.step(); hedge != nil {
		resp, err := send(f.rt.base, &hedge.req)
		f.finish(hedge, resp, err)
	}
}

// step is tick's work under the lock: the hedge to send, if one is due.
func (f *flight) step() *leg {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.over {
		return nil
	}
	now := time.Now()
	f.each(func(c *leg) {
		if !c.finished && !c.timedOut && !c.deadline.IsZero() && !now.Before(c.deadline) {
			c.timedOut = true
			c.cancel()
		}
	})
	var hedge *leg
	if f.now || (!f.next.IsZero() && !now.Before(f.next)) {
		f.now, f.next = false, time.Time{}
		if len(f.more) < f.rt.t.Hedge.hedges() {
			hedge = f.launch(now)
		}
		if hedge != nil && len(f.more) < f.rt.t.Hedge.hedges() {
			f.next = now.Add(f.delay) // the next, a delay after the newest
		}
	}
	if d := f.wake(now); d >= 0 {
		f.timer.Reset(d)
	}
	if hedge == nil && f.pending == 0 { // a shortcut with no hedge to send: every copy has failed
		f.decide(now)
	}
	return hedge
}

// catch recovers a panic on a hedge's goroutine, ends the flight, and
// keeps the panic for the caller, who is waiting for the flight and
// panics with it; once the flight is over, no caller waits, and the panic
// goes with its copy.
func (f *flight) catch() {
	r := recover()
	if r == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.over {
		f.panicked = &r
		f.decide(time.Now())
		f.release()
	}
}

// release lets every copy's outcome go, for a flight that ends in a
// panic: no one reads its responses.
func (f *flight) release() {
	f.each(func(c *leg) { c.drop(c.resp) })
}

// abort ends the flight when the caller's goroutine panics in it, so that
// no hedge is sent after, and no context is left.
func (f *flight) abort() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first.timer != nil {
		f.first.timer.Stop()
	}
	if !f.over {
		f.decide(time.Now())
		f.release()
	}
}

// wake returns how long from now until the flight's timer is next due: the
// next hedge, or the nearest AttemptTimeout of a leg in flight; -1 for
// none.
func (f *flight) wake(now time.Time) time.Duration {
	next := f.next
	f.each(func(c *leg) {
		if !c.finished && !c.timedOut && !c.deadline.IsZero() && (next.IsZero() || c.deadline.Before(next)) {
			next = c.deadline
		}
	})
	if next.IsZero() {
		return -1
	}
	return max(next.Sub(now), 0)
}

// launch readies a copy to be sent at now, in place of one that failed
// or for slowness, and returns it; or returns nil when there is to be
// none: the request's context is done, GetBody fails, or the budget has
// no token for it.
func (f *flight) launch(now time.Time) *leg {
	rt := &f.rt
	if f.ctx.Err() != nil {
		return nil
	}
	var body io.ReadCloser
	if b := rt.req.Body; b != nil && b != http.NoBody {
		var err error
		if body, err = rt.req.GetBody(); err != nil || body == nil {
			return nil
		}
	} else {
		body = rt.req.Body
	}
	if !rt.budget.Allow() {
		if body != nil {
			body.Close()
		}
		return nil
	}
	c := new(leg)
	f.start(c, rt.req, body, now)
	f.more = append(f.more, c)
	if rt.row != nil {
		rt.row.Hedge()
	}
	f.pending++
	if f.done == nil {
		f.done = make(chan struct{})
	}
	return c
}

// keep keeps c's outcome as the flight's: a response whose body releases
// c's context once closed or read to its end, or an error, whose context
// is released now.
func (c *leg) keep(resp *http.Response, err error) {
	c.resp, c.err = resp, err
	if resp == nil {
		c.cancel()
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
	c.cancel()
}

func (c *leg) Read(p []byte) (int, error) {
	n, err := c.body.Read(p)
	if err != nil {
		c.cancel()
	}
	return n, err
}

func (c *leg) Close() error {
	err := c.body.Close()
	c.cancel()
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
