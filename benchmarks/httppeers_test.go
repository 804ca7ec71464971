package benchmarks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/failsafe-go/failsafe-go/failsafehttp"
	retryablehttp "github.com/hashicorp/go-retryablehttp"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// The HTTP clients side by side: httpretry.Transport, hashicorp's
// go-retryablehttp (its standard client) and failsafe-go's failsafehttp,
// each at its defaults, as its README sets it up. Every cell of the table
// in benchmarks/README.md is observed here, from the library itself:
//
//	go test -run TestHTTPClients -v

// httpPeer builds one library's client around a transport; logs go to w.
type httpPeer struct {
	name  string
	build func(base http.RoundTripper, logs io.Writer) *http.Client
}

var httpPeers = []httpPeer{
	{"unherd/backoff httpretry.Transport", func(base http.RoundTripper, logs io.Writer) *http.Client {
		return &http.Client{Transport: &httpretry.Transport{Base: base, Policy: retry.Policy{Logger: slog.New(slog.NewTextHandler(logs, nil))}}}
	}},
	{"hashicorp/go-retryablehttp v0.7.8", func(base http.RoundTripper, logs io.Writer) *http.Client {
		c := retryablehttp.NewClient()
		c.HTTPClient = &http.Client{Transport: base}
		c.Logger = log.New(logs, "", 0)
		return c.StandardClient()
	}},
	{"failsafe-go v0.9.8 failsafehttp", func(base http.RoundTripper, logs io.Writer) *http.Client {
		return &http.Client{Transport: failsafehttp.NewRoundTripper(base, failsafehttp.NewRetryPolicyBuilder().Build())}
	}},
}

// scripted is an in-memory server: it reads and discards each request's
// body, then answers with the status for that call (the last one given
// repeats), a Retry-After if set, and a small body.
type scripted struct {
	statuses   []int
	retryAfter string
	calls      atomic.Int64
	methods    []string
}

func (s *scripted) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	n := int(s.calls.Add(1))
	s.methods = append(s.methods, req.Method)
	status := s.statuses[min(n, len(s.statuses))-1]
	h := http.Header{}
	if s.retryAfter != "" && status != http.StatusOK {
		h.Set("Retry-After", s.retryAfter)
	}
	return &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Header: h, Body: io.NopCloser(strings.NewReader("body")), Request: req}, nil
}

// httpRow is what one library did.
type httpRow struct {
	postSends      int
	bufferedBytes  uint64
	retryAfterWait time.Duration // how long a 429 with Retry-After: 3600 held the caller
	retryAfterOK   bool          // ... and whether it then got the 200
	final          string        // what a client that gets only 503s returns
	deadlineAfter  time.Duration // when it returned under a 1.5s deadline, told to wait 2s
	deadline       string
	conns          int64
	logsPassword   string
}

func runHTTPPeer(t *testing.T, p httpPeer) httpRow {
	var r httpRow
	// POST with a body that can be rewound: 503, then 200.
	synctest.Test(t, func(t *testing.T) {
		srv := &scripted{statuses: []int{503, 200}}
		resp, err := p.build(srv, io.Discard).Post("http://api.example/orders", "application/json", bytes.NewReader([]byte(`{"buy":1}`)))
		if err == nil {
			resp.Body.Close()
		}
		r.postSends = int(srv.calls.Load())
	})
	// A 64 MiB PUT from a stream, answered 200: the bytes allocated.
	synctest.Test(t, func(t *testing.T) {
		srv := &scripted{statuses: []int{200}}
		client := p.build(srv, io.Discard)
		req, _ := http.NewRequest(http.MethodPut, "http://api.example/blob", io.NopCloser(&zeros{left: 64 << 20}))
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		resp, err := client.Do(req)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("%s: PUT: %v", p.name, err)
		}
		resp.Body.Close()
		r.bufferedBytes = after.TotalAlloc - before.TotalAlloc
	})
	// 429 with Retry-After: 3600, then 200.
	synctest.Test(t, func(t *testing.T) {
		srv := &scripted{statuses: []int{429, 200}, retryAfter: "3600"}
		start := time.Now()
		resp, err := p.build(srv, io.Discard).Get("http://api.example/")
		r.retryAfterWait = time.Since(start)
		if err == nil {
			r.retryAfterOK = resp.StatusCode == 200
			resp.Body.Close()
		}
	})
	// Only 503s: what comes back when it gives up.
	synctest.Test(t, func(t *testing.T) {
		srv := &scripted{statuses: []int{503}}
		resp, err := p.build(srv, io.Discard).Get("http://api.example/")
		r.final = outcome(resp, err)
	})
	// A 1.5s deadline, a 503 that says Retry-After: 2.
	synctest.Test(t, func(t *testing.T) {
		srv := &scripted{statuses: []int{503}, retryAfter: "2"}
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example/", nil)
		start := time.Now()
		resp, err := p.build(srv, io.Discard).Do(req)
		r.deadlineAfter = time.Since(start)
		r.deadline = outcome(resp, err)
	})
	r.conns = countConns(t, p)
	r.logsPassword = passwordInLogs(t, p)
	return r
}

// zeros is an unseekable stream of n zero bytes.
type zeros struct{ left int }

func (z *zeros) Read(b []byte) (int, error) {
	if z.left == 0 {
		return 0, io.EOF
	}
	n := min(len(b), z.left)
	clear(b[:n])
	z.left -= n
	return n, nil
}

// outcome says what a client call returned, in a table cell.
func outcome(resp *http.Response, err error) string {
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		msg := pointer.ReplaceAllString(strings.ReplaceAll(err.Error(), "\n", " "), "0x…")
		if len(msg) > 70 {
			msg = msg[:70] + "…"
		}
		return "error `" + msg + "`"
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("the %d, body readable (%q)", resp.StatusCode, b)
}

// pointer matches an address in a message, which changes from run to run.
var pointer = regexp.MustCompile(`0x[0-9a-f]+`)

// countConns: 10 GETs against a real server, each answered 503 (with 1 KiB
// of body) twice and then 200, every wait cut to zero: connections opened.
func countConns(t *testing.T, p httpPeer) int64 {
	var calls, conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1)%3 != 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write(bytes.Repeat([]byte("e"), 1<<10))
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
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := zeroWaits(p, base)
	for range 10 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %s after retries", p.name, resp.Status)
		}
	}
	return conns.Load()
}

// zeroWaits is p's client with every wait zero, for runs against a real
// server, which cannot run in virtual time; httpretry's without a budget,
// which 20 retries to one host in a row would exhaust (the count of
// connections is the point here, not the storm).
func zeroWaits(p httpPeer, base http.RoundTripper) *http.Client {
	switch {
	case strings.HasPrefix(p.name, "unherd"):
		return &http.Client{Transport: &httpretry.Transport{Base: base, Policy: retry.Policy{Schedule: backoff.Schedule{
			Curve: backoff.Value{BaseDelay: -1}, MaxRetries: 5}, Budget: httpretry.NoBudget()}}}
	case strings.HasPrefix(p.name, "hashicorp"):
		c := retryablehttp.NewClient()
		c.HTTPClient = &http.Client{Transport: base}
		c.RetryWaitMin, c.RetryWaitMax, c.Logger = 0, 0, nil
		return c.StandardClient()
	default:
		return &http.Client{Transport: failsafehttp.NewRoundTripper(base, failsafehttp.NewRetryPolicyBuilder().WithDelay(0).Build())}
	}
}

// passwordInLogs: a URL with a password, a server that fails twice, the
// library's logger at its default level: does the password reach the log?
func passwordInLogs(t *testing.T, p httpPeer) string {
	var logs bytes.Buffer
	var ok bool
	synctest.Test(t, func(t *testing.T) {
		srv := &scripted{statuses: []int{503, 503, 200}}
		resp, err := p.build(srv, &logs).Get("http://alice:hunter2@api.example/")
		if err == nil {
			ok = resp.StatusCode == 200
			resp.Body.Close()
		}
	})
	switch {
	case !ok:
		t.Fatalf("%s: no 200 after two 503s", p.name)
	case logs.Len() == 0:
		return "– (logs nothing)"
	case strings.Contains(logs.String(), "hunter2"):
		return "**yes**"
	}
	return "no (redacted)"
}

// TestHTTPClients prints the table and asserts each cell.
func TestHTTPClients(t *testing.T) {
	fmt.Println("| client | POST retried? | 64 MiB streaming PUT: bytes allocated | `Retry-After: 3600` obeyed? | only 503s: what comes back | 1.5s deadline, `503` + `Retry-After: 2` | connections for 10 requests that each fail twice | password in logs? |")
	fmt.Println("|---|---|--:|---|---|---|--:|---|")
	rows := map[string]httpRow{}
	for _, p := range httpPeers {
		r := runHTTPPeer(t, p)
		rows[p.name] = r
		post := "no (sent once)"
		if r.postSends > 1 {
			post = fmt.Sprintf("**yes** (sent %d times)", r.postSends)
		}
		ra := fmt.Sprintf("no: the 429 returned after %v", r.retryAfterWait)
		if r.retryAfterOK {
			ra = fmt.Sprintf("**yes**: the caller held %v", r.retryAfterWait)
		}
		dl := fmt.Sprintf("returns at once: %s", r.deadline)
		if r.deadlineAfter > 0 {
			dl = fmt.Sprintf("sleeps %v into it: %s", r.deadlineAfter, r.deadline)
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %d | %s |\n", p.name, post, mib(r.bufferedBytes), ra, r.final, dl, r.conns, r.logsPassword)
	}

	ours := rows["unherd/backoff httpretry.Transport"]
	if ours.postSends != 1 || ours.bufferedBytes > 1<<20 || ours.retryAfterOK || ours.retryAfterWait != 0 ||
		!strings.HasPrefix(ours.final, "the 503") || ours.deadlineAfter != 0 || !strings.HasPrefix(ours.deadline, "the 503") ||
		ours.conns != 1 || ours.logsPassword != "no (redacted)" {
		t.Errorf("httpretry: %+v", ours)
	}
	rh := rows["hashicorp/go-retryablehttp v0.7.8"]
	if rh.postSends < 2 || rh.bufferedBytes < 64<<20 || !rh.retryAfterOK || rh.retryAfterWait != time.Hour ||
		strings.HasPrefix(rh.final, "the 503") || rh.deadlineAfter != 1500*time.Millisecond {
		t.Errorf("go-retryablehttp no longer does what the table says: %+v", rh)
	}
	fs := rows["failsafe-go v0.9.8 failsafehttp"]
	if fs.postSends < 2 || fs.bufferedBytes < 64<<20 || !fs.retryAfterOK || fs.deadlineAfter != 1500*time.Millisecond {
		t.Errorf("failsafehttp no longer does what the table says: %+v", fs)
	}
}

// mib writes bytes in MiB to one decimal: a figure that repeats from run
// to run (the runtime's own allocations move the KiB).
func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
