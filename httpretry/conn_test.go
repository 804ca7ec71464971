package httpretry_test

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// These run against a real loopback server, with real connections, and so
// outside a synctest bubble: their policies do not wait at all, so no test
// here sleeps (the hedges' 50ms delays are a real timer's, and what they
// wait for is a channel, but for the 200ms in which a copy that should
// not be cancelled is seen not to be).

// noWait retries n times without waiting, with no budget: these tests
// are of connections, which a budget's refusals would hide.
func noWait(n int) retry.Policy {
	return retry.Policy{Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}, MaxRetries: n}, Budget: httpretry.NoBudget()}
}

// newConnServer starts a server that answers each path's first fails
// requests 503 with a body of errBody bytes, then 200, and counts the
// connections opened.
func newConnServer(t *testing.T, fails, errBody int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls, conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1)%int64(fails+1) != 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write(bytes.Repeat([]byte("e"), errBody))
			return
		}
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// TestConnectionReuse: 10 requests that each fail twice, in turn, over one
// connection: every retried body is drained and closed, so its connection
// goes back to the pool.
func TestConnectionReuse(t *testing.T) {
	srv, conns := newConnServer(t, 2, 4<<10)
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: &httpretry.Transport{Base: base, Policy: noWait(5)}}
	for range 10 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if readAll(t, resp) != "ok" {
			t.Fatal("no 200")
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("30 requests, 20 of them retried 503s: %d connections opened, want 1", n)
	}
}

// TestConnectionNotReusedPastDrainLimit: a retried body above the limit is
// closed unread, and its connection is given up rather than read to the end.
func TestConnectionNotReusedPastDrainLimit(t *testing.T) {
	srv, conns := newConnServer(t, 1, 1<<20)
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: &httpretry.Transport{Base: base, Policy: noWait(5)}}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if n := conns.Load(); n != 2 {
		t.Fatalf("a 1 MiB 503 body: %d connections, want 2 (the first closed, not drained)", n)
	}
}

// TestPasswordNeverLogged: a real client, a URL with a password, retries
// that log: the logs and the error name the URL, never the password.
func TestPasswordNeverLogged(t *testing.T) {
	srv, _ := newConnServer(t, 100, 10)
	var log bytes.Buffer
	p := noWait(2)
	p.Logger = slog.New(slog.NewJSONHandler(&log, nil))
	client := &http.Client{Transport: &httpretry.Transport{Policy: p}}
	url := strings.Replace(srv.URL, "http://", "http://alice:hunter2@", 1)
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)

	// And a transport error: nothing listens on a closed server's port.
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	_, err = client.Get(strings.Replace(closed.URL, "http://", "http://alice:hunter2@", 1))
	if err == nil {
		t.Fatal("a closed port answered")
	}
	if strings.Contains(log.String(), "hunter2") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("the password reached the log or the error:\n%s\n%v", log.String(), err)
	}
	if !strings.Contains(log.String(), "alice:xxxxx@") || strings.Count(log.String(), `"msg":"retrying"`) != 4 {
		t.Fatalf("want 4 retry records naming the redacted URL:\n%s", log.String())
	}
}

// TestRealClientDeadline: through a real http.Client and server, a 429
// whose Retry-After the deadline cannot fit comes back at once, readable.
func TestRealClientDeadline(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, "slow down")
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10e9)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	client := &http.Client{Transport: &httpretry.Transport{}}
	resp, err := client.Do(req)
	if err != nil || resp.StatusCode != 429 || readAll(t, resp) != "slow down" || ctx.Err() != nil {
		t.Fatalf("Do = %v, %v; want the 429, readable, before the deadline", resp, err)
	}
}

// connEvents starts a server whose first request to /slow waits for
// release (or its context) before it answers, on answered, or reports on
// cut that its context ended first; every other request is answered at
// once. It reports each connection's states on states.
func connEvents(t *testing.T, h2 bool) (srv *httptest.Server, release chan struct{}, states chan connState, answered, cut chan struct{}) {
	t.Helper()
	release, states = make(chan struct{}), make(chan connState, 64)
	answered, cut = make(chan struct{}, 1), make(chan struct{}, 1)
	var slow atomic.Int64
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" && slow.Add(1) == 1 {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			if r.Context().Err() != nil {
				cut <- struct{}{}
				return
			}
			defer func() { answered <- struct{}{} }()
		}
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) { states <- connState{c.RemoteAddr().String(), s} }
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // a hedge's handshake cut short by its winner
	if h2 {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, release, states, answered, cut
}

// warmUp sends 10 requests, which earn a host's allowance a hedge when
// they answer before the delay, and checks that they came over HTTP/major.
func warmUp(t *testing.T, client *http.Client, url string, major int) {
	t.Helper()
	for range 10 {
		resp, err := client.Get(url)
		if err != nil || resp.ProtoMajor != major {
			t.Fatalf("warm-up: %v, %v; want an HTTP/%d answer", resp, err, major)
		}
		readAll(t, resp)
	}
}

type connState struct {
	conn  string
	state http.ConnState
}

// TestHedgeLoserKeepsItsHTTP1Connection: over HTTP/1.1, net/http closes
// the connection of a request cancelled in flight, so a losing copy is
// left to finish (within its bounds), its body drained, and its
// connection goes back to the pool: the server answers it, and sees its
// connection idle, not closed.
func TestHedgeLoserKeepsItsHTTP1Connection(t *testing.T) {
	srv, release, states, answered, cut := connEvents(t, false)
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: &httpretry.Transport{Base: base, Policy: noWait(2), Hedge: &httpretry.Hedge{Delay: 50 * time.Millisecond}}}
	warmUp(t, client, srv.URL, 1) // the host answers over HTTP/1.1, fast enough to earn a hedge
	first := (<-states).conn      // new, then active, idle
	resp, err := client.Get(srv.URL + "/slow")
	if err != nil || readAll(t, resp) != "ok" {
		t.Fatalf("a hedged request: %v, %v; want the hedge's answer", resp, err)
	}
	// A copy cancelled now would close its connection, and the server
	// would see its context end within a millisecond or so: give it 200.
	select {
	case <-cut:
		t.Fatal("the losing copy was cancelled: its connection is lost")
	case <-time.After(200 * time.Millisecond):
	}
	close(release) // the loser, on the first connection, answers now
	deadline := time.After(10 * time.Second)
	select {
	case <-answered:
	case <-cut:
		t.Fatal("the losing copy was cancelled: its connection is lost")
	case <-deadline:
		t.Fatal("the losing copy was neither answered nor cancelled")
	}
	for {
		select {
		case s := <-states:
			if s.conn != first {
				continue
			}
			switch s.state {
			case http.StateIdle:
				return // answered, and its connection kept
			case http.StateClosed, http.StateHijacked:
				t.Fatalf("the losing copy's connection was %v; want it kept, idle", s.state)
			}
		case <-deadline:
			t.Fatal("no state of the losing copy's connection after its answer")
		}
	}
}

// TestHedgeLoserCancelledOverHTTP2: over HTTP/2 a cancelled copy costs
// its stream, not the connection, so a losing copy is cancelled at once:
// its handler sees its context end.
func TestHedgeLoserCancelledOverHTTP2(t *testing.T) {
	srv, release, _, _, cut := connEvents(t, true)
	defer close(release)
	base := srv.Client().Transport.(*http.Transport).Clone()
	base.ForceAttemptHTTP2 = true
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: &httpretry.Transport{Base: base, Policy: noWait(2), Hedge: &httpretry.Hedge{Delay: 50 * time.Millisecond}}}
	warmUp(t, client, srv.URL, 2)
	start := time.Now()
	resp, err := client.Get(srv.URL + "/slow")
	if err != nil || readAll(t, resp) != "ok" {
		t.Fatalf("a hedged request: %v, %v; want the hedge's answer", resp, err)
	}
	select {
	case <-cut:
		if took := time.Since(start); took >= time.Second { // the bound of a copy left to linger
			t.Fatalf("the losing copy was cancelled after %v; want at once, not left to linger", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the losing copy was not cancelled over HTTP/2")
	}
}
