package httpretry

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"
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
