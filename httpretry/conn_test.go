package httpretry_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// These run against a real loopback server, with real connections, and so
// outside a synctest bubble: their policies do not wait at all, so no test
// here sleeps.

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
