package httpretry

import (
	"net/http"
	"time"
)

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
