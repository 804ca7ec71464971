package httpretry_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// Each test counts under a name of its own, made anew for each run, so
// that -count=N runs it N times against the process's one table.
var runs atomic.Int64

// unique returns name with this run's number.
func unique(name string) string { return fmt.Sprintf("%s-%d", name, runs.Add(1)) }

// statsOf returns the row of name and host in retry.Stats.
func statsOf(name, host string) (c retry.Counts) {
	retry.Stats.Each(func(n, h string, row retry.Counts) {
		if n == name && h == host {
			c = row
		}
	})
	return c
}

// TestStatsPerHost: a named Transport counts in retry.Stats per host (as
// "host:port"), each outcome as it made it, the budget's refusals and
// tokens, hedges sent and won, and attempt timeouts; the name's total is
// its hosts'.
func TestStatsPerHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		name := unique("httpretry-test-per-host")
		script := map[string][]answer{
			"/at-once":  {{wait: time.Millisecond}},
			"/retried":  {{status: 503}, {wait: time.Millisecond}},
			"/hedged":   {{wait: time.Second}, {wait: time.Millisecond}},
			"/timeout":  {{hang: true}, {hang: true}, {wait: time.Millisecond}},
			"/refused":  {{status: 503}, {status: 503}},
			"/notfound": {{status: 404}},
		}
		var mu sync.Mutex
		sent := map[string]int{}
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			n := sent[req.URL.Host+req.URL.Path]
			sent[req.URL.Host+req.URL.Path]++
			mu.Unlock()
			a := script[req.URL.Path][min(n, len(script[req.URL.Path])-1)]
			return newSlow(func(int) answer { return a }).RoundTrip(req)
		})
		p := constant(time.Second, 3)
		p.Name, p.Budget = name, nil // the budget per host
		h := &httpretry.Hedge{Delay: 50 * time.Millisecond}
		for range 10 { // a hedge earned for the host, uncounted (no Name): a new one holds one
			readAll(t, getURL(t, &httpretry.Transport{Base: base, Hedge: h}, "http://a.example/at-once"))
		}
		tr := &httpretry.Transport{Base: base, Policy: p, AttemptTimeout: 100 * time.Millisecond, Hedge: h}
		for _, path := range []string{"/at-once", "/retried", "/hedged", "/timeout", "/notfound"} {
			readAll(t, getURL(t, tr, "http://a.example"+path))
		}
		// Drain b's budget to one token: the second 503 of /refused is not retried.
		b := &retry.Budget{Burst: 1}
		tr2 := &httpretry.Transport{Base: base, Policy: p}
		tr2.Policy.Budget = b
		readAll(t, getURL(t, tr2, "https://b.example/refused"))
		readAll(t, getURL(t, tr2, "https://b.example:443/refused"))

		a := statsOf(name, "a.example:80")
		// /retried: attempt 1's 503 fails it, and the retry answers;
		// /hedged: the hedge wins; /timeout: both copies of attempt 1 time
		// out, and attempt 2 answers; a 404 is an answer.
		if a.SucceededAtOnce != 3 || a.SucceededAfterRetries != 2 || a.Attempts != 7 || a.Hedges != 2 || a.HedgesWon != 1 || a.AttemptTimeouts != 2 || a.Retries != 2 {
			t.Errorf("a.example: %+v; want 3 at once, 2 after a retry, 7 attempts, 2 hedges of which 1 won, 2 timeouts, 2 retries", a)
		}
		// By what each returned, and per call: /timeout's hedge, of an
		// attempt whose copies both failed, counts as /hedged's does.
		if want := (retry.Status{S2xx: 4, S4xx: 1}); a.Status != want {
			t.Errorf("a.example's status classes %+v, want %+v", a.Status, want)
		}
		if want := (retry.PerCall{Counts: [6]uint64{3, 2}, Sum: 2}); a.RetriesPerCall != want {
			t.Errorf("a.example's retries per call %+v, want %+v (/retried, /timeout)", a.RetriesPerCall, want)
		}
		if want := (retry.PerCall{Counts: [6]uint64{3, 2}, Sum: 2}); a.HedgesPerCall != want {
			t.Errorf("a.example's hedges per call %+v, want %+v (/hedged, /timeout)", a.HedgesPerCall, want)
		}
		if want := (retry.Delays{Counts: [16]uint64{0: 3, 9: 2}, Sum: 2 * time.Second}); a.RetryDelay != want {
			t.Errorf("a.example's retry delay per call %+v, want %+v", a.RetryDelay, want)
		}
		bc := statsOf(name, "b.example:443")
		if want := (retry.Status{S5xx: 2}); bc.Status != want {
			t.Errorf("b.example's status classes %+v, want %+v: each returned its last 503", bc.Status, want)
		}
		if bc.FailedAfterRetries != 1 || bc.FailedWithoutRetry != 1 || bc.GaveUp.Budget != 2 || bc.Tokens != 0 {
			t.Errorf("b.example: %+v; want one call failed after its retry and one without, both ended by the budget, 0 tokens", bc)
		}
		if total := retry.Stats.Of(name); total.Calls() != a.Calls()+bc.Calls() || total.Attempts != a.Attempts+bc.Attempts {
			t.Errorf("the name's total %+v is not its hosts' sum", total)
		}
	})
}

// TestStatsStatusClasses: a call counts once, by what RoundTrip returned
// to its caller: a response by its status class, whether retried or not,
// or no response, when every attempt failed without one, a wait began
// after the last response, or the context ended before any attempt.
func TestStatsStatusClasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		name := unique("httpretry-test-status")
		codes := map[string][]int{ // 0: a transport error
			"/200": {200}, "/204": {204}, "/101": {101}, "/301": {301}, "/304": {304},
			"/404": {404}, "/501": {501}, "/503-then-200": {503, 200}, "/503s": {503},
			"/429s": {429}, "/refused": {0}, "/refused-then-200": {0, 200}, "/too-long": {503, 200},
		}
		var mu sync.Mutex
		sent := map[string]int{}
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			script := codes[req.URL.Path]
			code := script[min(sent[req.URL.Path], len(script)-1)]
			sent[req.URL.Path]++
			mu.Unlock()
			if code == 0 {
				return nil, errors.New("connection refused")
			}
			h := http.Header{}
			if req.URL.Path == "/too-long" {
				h.Set("Retry-After", "3600") // past MaxRetryAfter: returned as is
			}
			return &http.Response{StatusCode: code, Header: h, Body: http.NoBody, Request: req}, nil
		})
		p := constant(time.Second, 2)
		p.Name, p.Budget = name, httpretry.NoBudget()
		tr := &httpretry.Transport{Base: base, Policy: p}
		want := map[string]retry.Status{}
		for path, class := range map[string]string{
			"/200": "2xx", "/204": "2xx", "/101": "2xx", "/301": "3xx", "/304": "3xx", "/404": "4xx",
			"/501": "5xx", "/503-then-200": "2xx", "/503s": "5xx", "/429s": "4xx", "/refused": "none",
			"/refused-then-200": "2xx", "/too-long": "5xx",
		} {
			req, _ := http.NewRequest(http.MethodGet, "http://"+strings.Trim(path, "/")+".example"+path, nil)
			resp, err := tr.RoundTrip(req)
			if (err == nil) != (class != "none") {
				t.Fatalf("%s: %v, %v; want a response of %s", path, resp, err, class)
			}
			if resp != nil {
				resp.Body.Close()
			}
			var s retry.Status
			switch class {
			case "2xx":
				s.S2xx = 1
			case "3xx":
				s.S3xx = 1
			case "4xx":
				s.S4xx = 1
			case "5xx":
				s.S5xx = 1
			case "none":
				s.NoResponse = 1
			}
			want[req.URL.Host+":80"] = s
		}
		// A 503 whose wait the context cut: its response was closed for the
		// wait, and the caller gets the context's error.
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(500*time.Millisecond, cancel) // no deadline, so that the wait starts
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://cut.example/503s", nil)
		if resp, err := tr.RoundTrip(req); err == nil {
			t.Fatalf("a 503 whose wait the context cut: %v, want an error", resp.Status)
		}
		want["cut.example:80"] = retry.Status{NoResponse: 1}
		// A context done before the first attempt.
		done, cancel := context.WithCancel(context.Background())
		cancel()
		req, _ = http.NewRequestWithContext(done, http.MethodGet, "http://done.example/200", nil)
		if _, err := tr.RoundTrip(req); err == nil {
			t.Fatal("a context done before the first attempt: no error")
		}
		want["done.example:80"] = retry.Status{NoResponse: 1}

		for host, w := range want {
			if got := statsOf(name, host); got.Status != w || got.Calls() != 1 {
				t.Errorf("%s: %d calls, status %+v; want 1, %+v", host, got.Calls(), got.Status, w)
			}
		}
		total := retry.Stats.Of(name).Status
		if n := total.S2xx + total.S3xx + total.S4xx + total.S5xx + total.NoResponse; n != uint64(len(want)) {
			t.Errorf("the name's status classes %+v: %d calls, want %d", total, n, len(want))
		}
	})
}

// TestOnDoneSeesTheRequest: the Transport's hooks see the request, and a
// retry the budget refused shows as the Cause of a response given back.
func TestOnDoneSeesTheRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []string
		p := constant(time.Second, 3)
		p.Budget = &retry.Budget{Burst: 1}
		tr := &httpretry.Transport{Base: newServer(s503, s503, s503), Policy: p,
			OnRetry: func(req *http.Request, e retry.Event) {
				got = append(got, fmt.Sprintf("retry %s %d %v", req.URL.Host, e.Attempt, e.Err))
			},
			OnDone: func(req *http.Request, d retry.Done) {
				var se *httpretry.StatusError
				errors.As(d.Err, &se)
				got = append(got, fmt.Sprintf("done %s %v after %d: %d, budget %v", req.URL.Host, d.Outcome, d.Attempts, se.Response.StatusCode, errors.Is(d.Cause, retry.ErrBudget)))
			}}
		resp, err := get(t, context.Background(), tr)
		if err != nil || resp.StatusCode != 503 {
			t.Fatalf("%v, %v; want the last 503", resp, err)
		}
		readAll(t, resp)
		want := "[retry api.example 1 503 Service Unavailable done api.example failed_with_retry after 2: 503, budget true]"
		if fmt.Sprint(got) != want {
			t.Fatalf("hooks heard %v, want %v", got, want)
		}
	})
}

// TestResend: each send's context says how many sends of the request came
// before it, retries and hedges together, as http.request.resend_count
// counts; the first carries nothing.
func TestResend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var resends []int
		base := newSlow(func(n int) answer {
			switch n {
			case 1:
				return answer{status: 503}
			case 2:
				return answer{wait: time.Second}
			}
			return answer{wait: time.Millisecond}
		})
		seen := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			resends = append(resends, httpretry.Resend(req.Context()))
			mu.Unlock()
			return base.RoundTrip(req)
		})
		tr := &httpretry.Transport{Base: seen, Policy: constant(time.Second, 3), Hedge: &httpretry.Hedge{Delay: 50 * time.Millisecond}}
		readAll(t, getURL(t, tr, "http://api.example/"))
		synctest.Wait()
		// The 503 fails the first attempt; the retry (1) is slow, and its
		// hedge (2) answers.
		if fmt.Sprint(resends) != "[0 1 2]" {
			t.Fatalf("resends seen %v, want [0 1 2]", resends)
		}
		resends = nil
		tr = &httpretry.Transport{Base: seen, Policy: constant(time.Millisecond, 3)}
		srv := newServer(s503, s503)
		seen2 := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resends = append(resends, httpretry.Resend(req.Context()))
			return srv.RoundTrip(req)
		})
		tr.Base = seen2
		readAll(t, getURL(t, tr, "http://api.example/"))
		if fmt.Sprint(resends) != "[0 1 2]" {
			t.Fatalf("retries' resends %v, want [0 1 2]", resends)
		}
		if httpretry.Resend(context.Background()) != 0 {
			t.Fatal("Resend of a context that carries none is not 0")
		}
	})
}

// TestStatsNotRetryable: a certificate that fails verification counts as
// a call failed without a retry, not retryable.
func TestStatsNotRetryable(t *testing.T) {
	name := unique("httpretry-test-cert")
	bad := &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}
	p := constant(time.Second, 3)
	p.Name = name
	tr := &httpretry.Transport{Base: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, bad }), Policy: p}
	req, _ := http.NewRequest(http.MethodGet, "https://api.example/", nil)
	tr.RoundTrip(req)
	if c := statsOf(name, "api.example:443"); c.FailedWithoutRetry != 1 || c.GaveUp.NotRetryable != 1 {
		t.Fatalf("a bad certificate: %+v; want one call failed without a retry, not retryable", c)
	}
}

// TestStatsTwoTransportsOneRow: two named Transports to one host share a
// row but not a budget: a request that succeeds at once still allocates
// nothing (the row's gauge is the budget its last call used, stored
// without allocating).
func TestStatsTwoTransportsOneRow(t *testing.T) {
	ok := roundTripFunc(func(*http.Request) (*http.Response, error) { return okResponse, nil })
	name := unique("httpretry-test-two")
	a := &httpretry.Transport{Base: ok, Policy: retry.Policy{Name: name}}
	b := &httpretry.Transport{Base: ok, Policy: retry.Policy{Name: name}}
	req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
	a.RoundTrip(req)
	b.RoundTrip(req)
	if n := testing.AllocsPerRun(100, func() { a.RoundTrip(req); b.RoundTrip(req) }); n != 0 {
		t.Fatalf("two Transports of one name to one host: %v allocations a pair, want 0", n)
	}
}

// TestStatsGaugeAfterHostForgotten: past 1,024 hosts a Transport forgets
// budgets and gives a host that comes back a new one; the host's gauge
// reads the new one, which its requests spend, not the one forgotten.
func TestStatsGaugeAfterHostForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		name := unique("httpretry-test-gauge-forgotten")
		tr := &httpretry.Transport{Policy: retry.Policy{Name: name, Schedule: constant(time.Millisecond, 1000).Schedule},
			Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				code := http.StatusOK
				if r.URL.Path == "/down" {
					code = http.StatusServiceUnavailable
				}
				return &http.Response{StatusCode: code, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
			})}
		send := func(url string) {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			if resp, err := tr.RoundTrip(req); err == nil {
				resp.Body.Close()
			}
		}
		send("http://victim.example/ok")
		for i := range 1024 {
			send(fmt.Sprintf("http://h%d.example/ok", i))
		}
		var done retry.Done
		tr.OnDone = func(_ *http.Request, d retry.Done) { done = d }
		send("http://victim.example/down") // a new budget, spent
		if !errors.Is(done.Cause, retry.ErrBudget) {
			t.Fatalf("the victim's failing request ended with %v, want the budget spent", done.Cause)
		}
		if tokens := statsOf(name, "victim.example:80").Tokens; tokens >= 1 {
			t.Errorf("the victim's gauge: %v retries allowed, after its budget refused one", tokens)
		}
	})
}

// TestStatsAttemptTimeoutNotReplayable: a request the Transport does not
// retry (a POST without a key) that times out awaiting its headers counts
// as an attempt timeout too.
func TestStatsAttemptTimeoutNotReplayable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		name := unique("httpretry-test-timeout-post")
		tr := &httpretry.Transport{Policy: retry.Policy{Name: name}, AttemptTimeout: 100 * time.Millisecond,
			Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				<-r.Context().Done()
				return nil, r.Context().Err()
			})}
		req, _ := http.NewRequest(http.MethodPost, "http://api.example/", strings.NewReader("x"))
		if _, err := tr.RoundTrip(req); !errors.Is(err, httpretry.ErrAttemptTimeout) {
			t.Fatalf("RoundTrip: %v, want ErrAttemptTimeout", err)
		}
		if c := statsOf(name, "api.example:80"); c.AttemptTimeouts != 1 || c.Calls() != 0 {
			t.Errorf("a POST past its AttemptTimeout: %d attempt timeouts, %d calls; want 1 and 0", c.AttemptTimeouts, c.Calls())
		}
	})
}

// TestStatsPolicyTable: a Transport whose Policy has a Table of its own
// counts each host's row there, hedges and attempt timeouts too, and
// nothing in retry.Stats.
func TestStatsPolicyTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := retry.NewTable()
		base := newSlow(func(n int) answer {
			if n == 1 {
				return answer{hang: true}
			}
			return answer{}
		})
		tr := &httpretry.Transport{Base: base, AttemptTimeout: 100 * time.Millisecond,
			Policy: retry.Policy{Name: "httpretry-test-own-table", Table: tb}}
		if _, err := get(t, context.Background(), tr); err != nil {
			t.Fatal(err)
		}
		var got retry.Counts
		tb.Each(func(n, h string, c retry.Counts) {
			if n == tr.Policy.Name && h == "api.example:80" {
				got = c
			}
		})
		if got.SucceededAfterRetries != 1 || got.AttemptTimeouts != 1 || got.Attempts != 2 {
			t.Errorf("the Policy's table, its host's row: %+v", got)
		}
		if c := retry.Stats.Of(tr.Policy.Name); c.Calls() != 0 || c.AttemptTimeouts != 0 {
			t.Errorf("retry.Stats counted a Transport whose Policy has a table of its own: %+v", c)
		}
	})
}
