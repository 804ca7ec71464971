package httpretry_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// The faults an adversarial review found, each a test that failed before
// its fix.

// TestUpgradeBodyWritable: the body of a 101 Switching Protocols response
// is the connection, to read and write (httputil.ReverseProxy and
// websocket clients rely on it); AttemptTimeout and Hedge wrapped it in a
// body that only read.
func TestUpgradeBodyWritable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		brw.Flush()
		line, _ := brw.ReadString('\n')
		brw.WriteString(line)
		brw.Flush()
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	for _, tr := range []*httpretry.Transport{
		{Base: base},
		{Base: base, AttemptTimeout: time.Second},
		{Base: base, Hedge: &httpretry.Hedge{Delay: time.Second}},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "echo")
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		rwc, ok := resp.Body.(io.ReadWriteCloser)
		if !ok {
			t.Fatalf("AttemptTimeout %v, Hedge %v: a 101's Body is %T, which cannot be written", tr.AttemptTimeout, tr.Hedge != nil, resp.Body)
		}
		io.WriteString(rwc, "hello\n")
		if line, _ := bufio.NewReader(rwc).ReadString('\n'); line != "hello\n" {
			t.Fatalf("the upgraded connection echoed %q", line)
		}
		rwc.Close()
	}
}

// TestShortcutAsksPolicyRetryable: a copy's failure sends the next hedge
// at once only when Policy.Retryable would retry it; a 503 it refuses
// ends the request, with no second copy sent.
func TestShortcutAsksPolicyRetryable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSlow(func(n int) answer {
			if n == 1 {
				return answer{status: 503}
			}
			return answer{wait: time.Millisecond}
		})
		p := constant(time.Second, 3)
		p.Retryable = func(err error) bool { var se *httpretry.StatusError; return !errors.As(err, &se) }
		resp, err := get(t, context.Background(), &httpretry.Transport{Base: base, Policy: p, Hedge: &httpretry.Hedge{Delay: time.Second}})
		if err != nil || resp.StatusCode != 503 || base.requests() != 1 {
			t.Fatalf("a 503 that Policy.Retryable refuses: %v, %v after %d requests; want the 503 after 1", resp, err, base.requests())
		}
		readAll(t, resp)
	})
}

// trickle yields a byte every 10ms, n bytes, and its Close does not
// interrupt it, as io.NopCloser's does not.
type trickle struct{ n int }

func (t *trickle) Read(p []byte) (int, error) {
	if t.n == 0 {
		return 0, io.EOF
	}
	time.Sleep(10 * time.Millisecond)
	t.n--
	p[0] = 'x'
	return 1, nil
}

// TestDrainStopsAtItsCut: a body whose Close does not end a Read is read
// no further once the drain's bound has passed; it was read to its end,
// 20s past a 1s deadline.
func TestDrainStopsAtItsCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 503, Status: "503 Service Unavailable", Header: http.Header{}, Body: io.NopCloser(&trickle{n: 2000})}, nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		get(t, ctx, &httpretry.Transport{Base: base, Policy: constant(time.Second, 3)})
		if took := time.Since(start); took > 110*time.Millisecond {
			t.Fatalf("a trickling 503 held the caller %v, past the drain's 100ms", took)
		}
	})
}

// TestGivingUpOnTimeoutsIsATimeout: through http.Client, a request that
// gave up on attempt timeouts reports Timeout, as net.Error asks; the
// *url.Error over the *retry.Error did not.
func TestGivingUpOnTimeoutsIsATimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := newSlow(func(int) answer { return answer{hang: true} })
		client := &http.Client{Transport: &httpretry.Transport{Base: hang, Policy: constant(10*time.Millisecond, 2), AttemptTimeout: 100 * time.Millisecond}}
		_, err := client.Get("http://api.example/")
		var ne net.Error
		var ue *url.Error
		if !errors.As(err, &ne) || !ne.Timeout() || !errors.As(err, &ue) || !ue.Timeout() || !errors.Is(err, httpretry.ErrAttemptTimeout) {
			t.Fatalf("giving up on attempt timeouts: %v; want a net.Error that timed out, through url.Error too", err)
		}
		if (&retry.Error{Err: errFaultHTTP, Cause: retry.ErrBudget}).Timeout() {
			t.Fatalf("a *retry.Error over an error that did not time out reports Timeout")
		}
	})
}

var errFaultHTTP = errors.New("connection reset")

// TestRefusedEveryTime: a port a dial cannot take, and a URL with no host
// through any Base, go once and spend nothing: they were retried 5 times,
// spending 5 tokens.
func TestRefusedEveryTime(t *testing.T) {
	sent := 0
	wrapped := roundTripFunc(func(req *http.Request) (*http.Response, error) { // otelhttp-style
		sent++
		return http.DefaultTransport.RoundTrip(req)
	})
	b := &retry.Budget{Burst: 5}
	p := noWait(5)
	p.Budget = b
	tr := &httpretry.Transport{Base: wrapped, Policy: p}
	for _, u := range []string{"http://127.0.0.1:99999/", "http:///path"} {
		sent = 0
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.RoundTrip(req); err == nil || sent != 1 {
			t.Errorf("%s: %d sends, %v; want 1 and net/http's error", u, sent, err)
		}
	}
	if b.Tokens() < 5 {
		t.Fatalf("the refused requests spent the budget: %v left of 5", b.Tokens())
	}
}

// deadlineOnly reports a deadline its Done never enforces, which the
// Context contract allows.
type deadlineOnly struct {
	context.Context
	d time.Time
}

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.d, true }

// TestDeadlineWithNoDone: a context that reports a deadline but has no
// Done channel does not hang the drain once its deadline passes.
func TestDeadlineWithNoDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := deadlineOnly{context.Background(), time.Now().Add(50 * time.Millisecond)}
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 503, Body: newStall(context.Background())}, nil
		})
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example/", nil)
		resp, err := (&httpretry.Transport{Base: base, Policy: constant(time.Second, 3)}).RoundTrip(req)
		if err != nil || resp.StatusCode != 503 {
			t.Fatalf("%v, %v; want the 503, its drain cut at the deadline", resp, err)
		}
		if _, err := io.ReadAll(resp.Body); err == nil || !strings.Contains(err.Error(), "cut after 50ms") {
			t.Fatalf("the cut 503's body: %v", err)
		}
	})
}
