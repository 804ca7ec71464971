package httpretry

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

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

// detached is a request's context without its cancellation, for a copy
// that may be left to finish after its flight is decided.
type detached struct{ context.Context }

func (detached) Done() <-chan struct{} { return nil }
func (detached) Err() error            { return nil }

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
