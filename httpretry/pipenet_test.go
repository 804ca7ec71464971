package httpretry

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/retry"
)

// pipeNet is a network in memory for a real *http.Transport and a real
// http.Server inside a synctest bubble: each dial is a net.Pipe, whose
// reads and writes block durably, where a socket's would not. So the
// paths that only net/http's own Transport takes (a losing copy left to
// linger over HTTP/1.1 for its connection) run in virtual time.
type pipeNet struct {
	srv   *http.Server
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// newPipeNet serves h over a pipeNet, and returns it with a Transport that
// dials it; close both with close. The server and the Transport speak
// HTTP/1.1, or with h2 unencrypted HTTP/2 only.
func newPipeNet(h http.Handler, h2 bool) (*pipeNet, *http.Transport) {
	n := &pipeNet{srv: &http.Server{Handler: h}, conns: make(chan net.Conn), done: make(chan struct{})}
	tr := &http.Transport{}
	if h2 {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		n.srv.Protocols, tr.Protocols = &p, &p
	}
	go n.srv.Serve(n)
	tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		c, s := net.Pipe()
		select {
		case n.conns <- s:
			return c, nil
		case <-n.done:
			return nil, net.ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return n, tr
}

func (n *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-n.conns:
		return c, nil
	case <-n.done:
		return nil, net.ErrClosed
	}
}

func (n *pipeNet) Close() error {
	n.once.Do(func() { close(n.done) })
	return nil
}

func (n *pipeNet) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// close shuts the server and the Transport's idle connections.
func (n *pipeNet) close(tr *http.Transport) {
	tr.CloseIdleConnections()
	n.srv.Close()
}

// TestLingeringLoserCounts: over HTTP/1.1 a first copy that lost to a
// hedge is left to finish for its connection; one that never answers is
// cut at its AttemptTimeout, after its caller has read the answer and
// cancelled the request's context, as callers do. It is known to be
// longer than the time it ran, and goes to the host's estimate as cut
// off: had it been left out, as a copy cut by the request's own context
// was, every such hang would go uncounted, and the estimate would think
// the host faster than it is (on loopback, with a replica paused, a
// twelfth of the first copies went uncounted, and the delay hedged twice
// ExtraLoad).
func TestLingeringLoserCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hang sync.Mutex
		hangNext := false
		n, base := newPipeNet(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hang.Lock()
			h := hangNext
			hangNext = false
			hang.Unlock()
			if h {
				<-r.Context().Done()
				return
			}
			time.Sleep(5 * time.Millisecond)
			io.WriteString(w, "ok")
		}), false)
		defer n.close(base)
		h := &Hedge{}
		tr := &Transport{Base: base, Hedge: h, AttemptTimeout: 250 * time.Millisecond}
		get := func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example/", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil && !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		for range 100 { // 5ms each: the estimate's delay, about 5ms
			get()
		}
		synctest.Wait()
		l := &h.hosts.m[hostKey{"http", "api.example", "80"}].lat
		if d := l.estimate(); d < 5*time.Millisecond || d > 6*time.Millisecond {
			t.Fatalf("after 100 answers in 5ms: estimate %v, want about 5ms", d)
		}
		l.mu.Lock()
		cut := sum(l.cut[:])
		l.mu.Unlock()
		hang.Lock()
		hangNext = true
		hang.Unlock()
		start := time.Now()
		get()
		if took := time.Since(start); took > 20*time.Millisecond {
			t.Fatalf("a hedged request took %v, want the hedge's answer at about 10ms", took)
		}
		time.Sleep(time.Second) // past the loser's AttemptTimeout, which cuts it
		synctest.Wait()
		l.mu.Lock()
		defer l.mu.Unlock()
		if sum(l.cut[:]) <= cut {
			t.Fatalf("a first copy that hung, left to linger, cut at its AttemptTimeout after the caller was done: cut-off weight %v (was %v); want it counted as cut off", sum(l.cut[:]), cut)
		}
		if i := bucket(250 * time.Millisecond); l.cut[i] == 0 {
			t.Fatalf("the lingering loser was not counted as cut off at its AttemptTimeout of 250ms (bucket %d): %v", i, l.cut)
		}
	})
}

// pipeGet GETs path from the pipeNet through tr with ctx, and reads the
// answer's body to its end.
func pipeGet(t *testing.T, ctx context.Context, tr http.RoundTripper, path string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example"+path, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", path, err)
	}
	return string(b)
}

// noWaitPolicy retries n times without waiting, with no budget.
func noWaitPolicy(n int) retry.Policy {
	return retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: n}, Budget: NoBudget()}
}

// TestLingerTimerRace: over HTTP/1.1 a losing copy is left to linger;
// decide marks it lingering (CAS) and only then stores its bound timer in
// leg.timer, while the loser's own goroutine, once Base returns, does
// CAS(lingering→returned) and reads leg.timer without the flight's lock.
// Nothing orders the store before the read unless the lock does: run
// under -race, the race detector reported it (and a loser returning
// between the CAS and the store would call Stop on a nil *time.Timer, a
// panic that catch then swallowed, leaving the loser's body open).
func TestLingerTimerRace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		pn, base := newPipeNet(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" && n.Add(1) == 1 {
				time.Sleep(150 * time.Millisecond) // the loser answers on its own, not released by the test
			}
			io.WriteString(w, "ok")
		}), false)
		defer pn.close(base)
		tr := &Transport{Base: base, Policy: noWaitPolicy(2), Hedge: &Hedge{Delay: 30 * time.Millisecond}}
		for range 10 {
			pipeGet(t, context.Background(), tr, "/")
		}
		if got := pipeGet(t, context.Background(), tr, "/slow"); got != "ok" {
			t.Fatalf("hedged request: %q", got)
		}
		time.Sleep(400 * time.Millisecond) // the loser answers, and settles, meanwhile
		synctest.Wait()
	})
}

// TestLingerOutlivesDeadline: SPEC, "The request's deadline bounds every
// copy"; doc.go, a losing copy left to finish over HTTP/1.1 has "a context
// of its own (the request's values and deadline, not its cancellation)".
// The detached context reports the deadline but never enforces it (Done
// is nil, Err stays nil past it), so a loser lingered past the request's
// 300ms deadline until the 1s linger bound cut it.
func TestLingerOutlivesDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		cut := make(chan time.Time, 1)
		pn, base := newPipeNet(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" && n.Add(1) == 1 {
				select {
				case <-r.Context().Done():
					cut <- time.Now()
					return
				case <-time.After(3 * time.Second):
				}
			}
			io.WriteString(w, "ok")
		}), false)
		defer pn.close(base)
		tr := &Transport{Base: base, Policy: noWaitPolicy(2), Hedge: &Hedge{Delay: 30 * time.Millisecond}}
		for range 10 {
			pipeGet(t, context.Background(), tr, "/")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		if got := pipeGet(t, ctx, tr, "/slow"); got != "ok" {
			t.Fatalf("hedged request: %q", got)
		}
		select {
		case at := <-cut:
			if took := at.Sub(start); took > 300*time.Millisecond {
				t.Fatalf("the losing copy ran %v, past the request's 300ms deadline; want it bounded by the deadline", took)
			}
		case <-time.After(4 * time.Second):
			t.Fatal("the losing copy was never cut")
		}
	})
}
