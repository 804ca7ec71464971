package httpretry

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// review3H2 serves h over unencrypted HTTP/2 on net.Pipe, in a synctest
// bubble: a real *http.Transport and http.Server.
func review3H2(h http.Handler) (*http.Server, *http.Transport, func()) {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	conns, done := make(chan net.Conn), make(chan struct{})
	srv := &http.Server{Handler: h, Protocols: &p}
	l := &review3Listener{conns: conns, done: done}
	go srv.Serve(l)
	tr := &http.Transport{Protocols: &p, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		c, s := net.Pipe()
		select {
		case conns <- s:
			return c, nil
		case <-done:
			return nil, net.ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	return srv, tr, func() { tr.CloseIdleConnections(); srv.Close(); l.Close() }
}

type review3Listener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *review3Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}
func (l *review3Listener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *review3Listener) Addr() net.Addr { return pipeAddr{} }

// TestReview3H2LoserCancelledAtOnce: doc.go, "A losing copy is cancelled
// at once, and its goroutine ends when Base returns it, with one
// exception ...: through an *http.Transport to a host whose last answer
// was not HTTP/2 ... a losing copy is left to finish, for at most 1s";
// "Over HTTP/2 a cancelled copy costs its stream only". SPEC: "once
// RoundTrip returns, the losing copies are cancelled". An adaptive Hedge
// sends its first requests unhedged (no estimate yet), through flight.once,
// which never notes the protocol (hedgeHost.saw): so the first hedged
// request to a host whose every answer came over HTTP/2 treats it as
// HTTP/1.1, and its losing copy is left running for a second.
func TestReview3H2LoserCancelledAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slow atomic.Bool
		var loserEnded atomic.Int64 // ns after t0 the loser's server context ended
		var sends atomic.Int64
		t0 := time.Now()
		_, base, closeAll := review3H2(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor != 2 {
				w.WriteHeader(500)
				return
			}
			if slow.Load() && sends.Add(1) == 1 { // the slow request's first copy hangs
				<-r.Context().Done()
				loserEnded.Store(int64(time.Since(t0)))
				return
			}
			time.Sleep(5 * time.Millisecond)
			io.WriteString(w, "ok")
		}))
		defer closeAll()
		h := &Hedge{}
		tr := &Transport{Base: base, Hedge: h}
		get := func() time.Time {
			req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.ProtoMajor != 2 {
				t.Fatalf("answer over HTTP/%d.%d, want HTTP/2", resp.ProtoMajor, resp.ProtoMinor)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return time.Now()
		}
		key := hostKey{"http", "api.example", "80"}
		for i := 0; ; i++ {
			get()
			if hh := h.hosts.m[key]; hh != nil && hh.lat.estimate() > 0 {
				break
			}
			if i > 200 {
				t.Fatal("no estimate after 200 requests")
			}
		}
		slow.Store(true)
		returned := get()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		ended := t0.Add(time.Duration(loserEnded.Load()))
		if loserEnded.Load() == 0 || ended.Sub(returned) > 10*time.Millisecond {
			t.Fatalf("over HTTP/2, the losing first copy was cancelled %v after RoundTrip returned; want at once (its stream only)", ended.Sub(returned))
		}
	})
}
