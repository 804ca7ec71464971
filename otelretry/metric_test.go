package otelretry_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/otelretry"
	"github.com/unherd/backoff/retry"
)

// Each test counts under names of its own: retry.Stats is the process's,
// and every test reads only its own names' points.

var errFault = errors.New("fault")

// constant is a Schedule of n retries, each a wait of exactly d.
func constant(d time.Duration, n int) backoff.Schedule {
	return backoff.Schedule{Curve: backoff.Value{BaseDelay: d, MaxDelay: d, Multiplier: 1, JitterMode: backoff.JitterNone}, MaxRetries: n}
}

// register returns a ManualReader on a MeterProvider that otelretry
// reports to, unregistered at the end of the test.
func register(t *testing.T) *sdkmetric.ManualReader {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	reg, err := otelretry.Register(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), roomy))
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	t.Cleanup(func() {
		if err := reg.Unregister(); err != nil {
			t.Errorf("Unregister: %v", err)
		}
	})
	return reader
}

// roomy lifts the SDK's 2,000 points an instrument: retry.Stats is the
// process's, so every test's registration reports every row of the tests
// before it, TestHosts's 1,025 hosts among them.
var roomy = sdkmetric.WithCardinalityLimit(1 << 20)

// points collects reader and returns the points of the rows named name,
// each keyed by its metric and its other attributes, sorted:
// `retry.calls{kind=successful_with_retry}`,
// `retry.attempts{server.address=api.example,server.port=443}`.
func points(t *testing.T, reader *sdkmetric.ManualReader, name string) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	got := map[string]float64{}
	add := func(metric string, set attribute.Set, v float64) {
		if n, _ := set.Value("retry.name"); n.AsString() != name {
			return
		}
		var kv, last []string // the host first, then kind or cause
		for _, a := range set.ToSlice() {
			switch a.Key {
			case "retry.name":
			case "server.port":
				if a.Value.Type() != attribute.INT64 {
					t.Errorf("%s: server.port is a %v, want an int", metric, a.Value.Type())
				}
				kv = append(kv, string(a.Key)+"="+a.Value.String())
			case "kind", "cause":
				last = append(last, string(a.Key)+"="+a.Value.String())
			default:
				kv = append(kv, string(a.Key)+"="+a.Value.String())
			}
		}
		kv = append(kv, last...)
		key := metric + "{" + strings.Join(kv, ",") + "}"
		if _, dup := got[key]; dup {
			t.Errorf("two points for %s", key)
		}
		got[key] = v
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/unherd/backoff/otelretry" {
			continue
		}
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					add(m.Name, p.Attributes, float64(p.Value))
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					add(m.Name, p.Attributes, p.Value)
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					add(m.Name, p.Attributes, p.Value)
				}
			default:
				t.Errorf("%s: data of type %T", m.Name, m.Data)
			}
		}
	}
	return got
}

// same reports, with t.Errorf, every point of got that is not want's.
func same(t *testing.T, what string, got, want map[string]float64) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: no point %s, want %v", what, k, want[k])
		case math.Abs(g-want[k]) > 1e-9:
			t.Errorf("%s: %s = %v, want %v", what, k, g, want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok && got[k] != 0 { // a count not yet counted is reported at 0 (TestZeroFromFirstCall)
			t.Errorf("%s: a point %s = %v, want none or 0", what, k, got[k])
		}
	}
}

// TestZeroFromFirstCall: a row reports every counter from its first call,
// each kind and cause at 0 until it counts, so that rate() over the first
// give-ups of a process, or of a new host, has a sample before them.
func TestZeroFromFirstCall(t *testing.T) {
	reader := register(t)
	name := unique(t)
	retry.Do(context.Background(), retry.Policy{Name: name}, func(context.Context) error { return nil })
	want := map[string]float64{
		"retry.calls{kind=successful_without_retry}": 1,
		"retry.calls{kind=successful_with_retry}":    0,
		"retry.calls{kind=failed_without_retry}":     0,
		"retry.calls{kind=failed_with_retry}":        0,
		"retry.attempts{}":                           1,
		"retry.retries{}":                            0,
		"retry.delay{}":                              0,
		"retry.failing_calls.duration{}":             0,
		"retry.hedges{}":                             0,
		"retry.hedges_won{}":                         0,
		"retry.attempt_timeouts{}":                   0,
	}
	for _, cause := range []string{"max_retries", "max_elapsed", "deadline", "budget", "context", "not_retryable"} {
		want["retry.gave_up{cause="+cause+"}"] = 0
	}
	got := points(t, reader, name)
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok || g != want[k] {
			t.Errorf("after the first call: %s = %v (reported: %v), want %v", k, g, ok, want[k])
		}
	}
	if len(got) != len(want) {
		t.Errorf("after the first call: %d points, want %d: %v", len(got), len(want), got)
	}
}

// TestRegisterTwice: a second Register on a MeterProvider with one in
// place is ErrRegistered, and reports nothing twice; once the first is
// unregistered, Register works again.
func TestRegisterTwice(t *testing.T) {
	name := unique(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), roomy)
	reg, err := otelretry.Register(mp)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := otelretry.Register(mp); !errors.Is(err, otelretry.ErrRegistered) || again != nil {
		t.Fatalf("Register again: %v, %v; want nil, ErrRegistered", again, err)
	}
	retry.Do(context.Background(), retry.Policy{Name: name}, func(context.Context) error { return nil })
	if got := points(t, reader, name)["retry.calls{kind=successful_without_retry}"]; got != 1 {
		t.Errorf("one call, registered once and refused once: counted %v, want 1", got)
	}
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	reg, err = otelretry.Register(mp)
	if err != nil {
		t.Fatalf("Register after Unregister: %v", err)
	}
	reg.Unregister()
}

func seconds(d time.Duration) float64 { return d.Seconds() }

var runs atomic.Int64

// unique returns a Policy name for this run of the test alone, so that
// -count above 1 counts each run apart.
func unique(t testing.TB) string {
	return fmt.Sprintf("otelretry-%s-%d", t.Name(), runs.Add(1))
}

// TestDo: a mix of outcomes through retry.Do and DoValue, every limit,
// the budget and the context among them, and every point is what was
// made, none else: the waits are virtual, so the times are exact.
func TestDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := register(t)
		name := unique(t)
		p := retry.Policy{Name: name, Schedule: constant(time.Second, 2)}
		ok := func(context.Context) error { return nil }
		fail := func(context.Context) error { return errFault }
		ctx := context.Background()

		for range 3 { // at once
			retry.Do(ctx, p, ok)
		}
		retry.DoValue(ctx, p, func(context.Context) (int, error) { return 1, nil }) // at once
		n := 0
		retry.Do(ctx, p, func(context.Context) error { // after 2 retries: 3 attempts, 2 waits of 1s
			if n++; n < 3 {
				return errFault
			}
			return nil
		})
		retry.Do(ctx, p, func(context.Context) error { return retry.Permanent(errFault) }) // not retryable
		retry.Do(ctx, p, func(context.Context) error { return retry.GiveUp(errFault) })    // not retryable
		retry.Do(ctx, p, fail)                                                             // MaxRetries: 3 attempts, 2 waits
		elapsed := p
		elapsed.Schedule = backoff.Schedule{Curve: constant(time.Second, 0).Curve, MaxElapsed: time.Second}
		retry.Do(ctx, elapsed, fail) // MaxElapsed: 2 attempts, 1 wait
		soon, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		retry.Do(soon, p, fail) // the deadline rule: 2 attempts, 1 wait
		cancel()
		broke := p
		broke.Budget = &retry.Budget{Burst: -1}
		retry.Do(ctx, broke, fail) // the budget: 1 attempt, no wait; the row's gauge is its 0
		done, cancel := context.WithCancel(ctx)
		cancel()
		retry.Do(done, p, ok) // the context, before fn: no attempt
		mid, cancel := context.WithCancel(ctx)
		go func() { time.Sleep(300 * time.Millisecond); cancel() }()
		retry.Do(mid, p, fail) // the context, mid-wait: 1 attempt, a wait of 300ms

		same(t, "retry.Do", points(t, reader, name), map[string]float64{
			"retry.calls{kind=successful_without_retry}": 4,
			"retry.calls{kind=successful_with_retry}":    1,
			"retry.calls{kind=failed_without_retry}":     4, // Permanent, GiveUp, the budget, the context before fn
			"retry.calls{kind=failed_with_retry}":        4, // MaxRetries, MaxElapsed, the deadline, the context mid-wait (a wait started)
			"retry.attempts{}":                           4 + 3 + 1 + 1 + 3 + 2 + 2 + 1 + 0 + 1,
			"retry.retries{}":                            2 + 2 + 1 + 1 + 1,
			"retry.delay{}":                              seconds(6300 * time.Millisecond),
			"retry.failing_calls.duration{}":             seconds(6300 * time.Millisecond),
			"retry.gave_up{cause=max_retries}":           1,
			"retry.gave_up{cause=max_elapsed}":           1,
			"retry.gave_up{cause=deadline}":              1,
			"retry.gave_up{cause=budget}":                1,
			"retry.gave_up{cause=context}":               2,
			"retry.gave_up{cause=not_retryable}":         2,
			"retry.budget.tokens{}":                      0,
		})
	})
}

// TestLoop: a Loop's runs count as calls, one Reset ended and one Wait's
// false ended, with their waits.
func TestLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := register(t)
		name := unique(t)
		ctx := context.Background()
		loop := retry.NewLoop(retry.Policy{Name: name, Schedule: constant(time.Second, 2)})
		loop.Wait(ctx)      // attempt 1
		loop.Wait(ctx)      // a wait of 1s, attempt 2
		loop.Reset()        // a run that succeeded after a retry
		loop.Wait(ctx)      // a wait of 1s: the run that had succeeded ended, attempt 1 again
		loop.Wait(ctx)      // a wait of 1s, attempt 2
		if loop.Wait(ctx) { // MaxRetries: a run that failed after retries
			t.Fatal("a Loop of 2 retries waited a third time")
		}
		same(t, "a Loop", points(t, reader, name), map[string]float64{
			"retry.calls{kind=successful_with_retry}": 1,
			"retry.calls{kind=failed_with_retry}":     1,
			"retry.attempts{}":                        2 + 2,
			"retry.retries{}":                         1 + 2,
			"retry.delay{}":                           3,
			"retry.failing_calls.duration{}":          3,
			"retry.gave_up{cause=max_retries}":        1,
		})
	})
}

// script answers each request to a path in turn, the last answer again
// once they run out: a status after wait, or, with hang, nothing until
// the request's context ends. It is an in-memory Base, for a bubble.
type script struct {
	mu      sync.Mutex
	answers map[string][]answer
	sent    map[string]int
}

type answer struct {
	status int
	wait   time.Duration
	hang   bool
	err    error
}

func (s *script) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	path := req.URL.Host + req.URL.Path
	n := s.sent[path]
	if s.sent == nil {
		s.sent = map[string]int{}
	}
	s.sent[path]++
	as := s.answers[req.URL.Path]
	a := as[min(n, len(as)-1)]
	s.mu.Unlock()
	if a.hang {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	select {
	case <-time.After(a.wait):
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	if a.err != nil {
		return nil, a.err
	}
	return &http.Response{StatusCode: a.status, Status: http.StatusText(a.status), Header: http.Header{},
		Body: io.NopCloser(strings.NewReader("body")), Request: req}, nil
}

// get sends a GET to url through rt on ctx, and reads the response whole.
func get(t *testing.T, ctx context.Context, rt http.RoundTripper, url string) error {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return err
}

// TestTransport: a named httpretry.Transport's rows, per host: success at
// once, after a retry, hedges sent and won, attempt timeouts, MaxRetries,
// a status not retryable, a cancelled context, the budget refusing, and
// each host's budget as the gauge; server.address and server.port name the
// host.
func TestTransport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := register(t)
		name := unique(t)
		bad := &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}
		base := &script{answers: map[string][]answer{
			"/at-once":  {{status: 200, wait: time.Millisecond}},
			"/retried":  {{status: 503}, {status: 200, wait: time.Millisecond}},
			"/hedged":   {{status: 200, wait: time.Second}, {status: 200, wait: time.Millisecond}},
			"/timeout":  {{hang: true}, {hang: true}, {status: 200, wait: time.Millisecond}},
			"/notfound": {{status: 404}},
			"/down":     {{status: 503}},
			"/cert":     {{err: bad}},
		}}
		p := retry.Policy{Name: name, Schedule: constant(time.Second, 2)}
		ctx := context.Background()

		// a.example: a budget of its own (the default), hedged after 50ms,
		// attempts cut at 100ms.
		a := &httpretry.Transport{Base: base, Policy: p, AttemptTimeout: 100 * time.Millisecond, Hedge: &httpretry.Hedge{Delay: 50 * time.Millisecond}}
		for _, path := range []string{"/at-once", "/retried", "/hedged", "/timeout", "/notfound"} {
			if err := get(t, ctx, a, "http://a.example"+path); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		const hostA = "server.address=a.example,server.port=80"
		// A new host holds one hedge, and each attempt whose first copy
		// answers before the delay earns it 2×ExtraLoad (0.2): /at-once
		// earns; /retried's 503 is retried after 1s (no hedge on a
		// failure), and both its attempts earn; /hedged's hedge is sent at
		// 50ms and wins, spending the one hedge it holds (1.6 → 0.6);
		// /timeout is not hedged (0.6 is less than a hedge), its first two
		// attempts are cut at 100ms, and the third, after waits of 1s,
		// answers in 1ms.
		wantA := map[string]float64{
			"retry.calls{" + hostA + ",kind=successful_without_retry}": 3,
			"retry.calls{" + hostA + ",kind=successful_with_retry}":    2,
			"retry.attempts{" + hostA + "}":                            1 + 2 + 1 + 3 + 1,
			"retry.retries{" + hostA + "}":                             1 + 2,
			"retry.delay{" + hostA + "}":                               3,
			"retry.failing_calls.duration{" + hostA + "}":              seconds(1001*time.Millisecond + 2201*time.Millisecond),
			"retry.hedges{" + hostA + "}":                              1,
			"retry.hedges_won{" + hostA + "}":                          1,
			"retry.attempt_timeouts{" + hostA + "}":                    2,
			"retry.http.calls{" + hostA + ",status_class=2xx}":         4,
			"retry.http.calls{" + hostA + ",status_class=4xx}":         1, // a 404: successful_without_retry, by kind
		}
		// The budget's gauge is what the table says (retry.Budget's rule,
		// tested in retry): the retries that succeeded were given back, so
		// it holds more than 10 less 3 retries.
		retry.Stats.Each(func(n, host string, c retry.Counts) {
			if n == name && host == "a.example:80" {
				wantA["retry.budget.tokens{"+hostA+"}"] = c.Tokens
				if !(c.Tokens > 10-3 && c.Tokens <= 10) {
					t.Errorf("a.example's budget: %v tokens, want more than 7 and at most 10", c.Tokens)
				}
			}
		})
		same(t, "a.example", points(t, reader, name), wantA)

		// b.example: a budget of one retry, shared by both requests.
		b := &httpretry.Transport{Base: base, Policy: p}
		b.Policy.Budget = &retry.Budget{Burst: 1}
		get(t, ctx, b, "https://b.example/down")     // a retry, then the budget refuses: failed after it
		get(t, ctx, b, "https://b.example:443/down") // the budget refuses at once: failed without a retry
		// c.example: the limits, a certificate no retry fixes, a context
		// cancelled mid-wait.
		c := &httpretry.Transport{Base: base, Policy: p}
		get(t, ctx, c, "http://c.example:8080/cert")
		get(t, ctx, c, "http://c.example:8080/down") // MaxRetries: 3 attempts, 2 waits; the last 503 returned
		mid, cancel := context.WithCancel(ctx)
		go func() { time.Sleep(300 * time.Millisecond); cancel() }()
		if err := get(t, mid, c, "http://c.example:8080/down"); !errors.Is(err, context.Canceled) {
			t.Fatalf("a request cancelled mid-wait: %v", err)
		}
		// [::1]:8080: no budget, whose gauge has no point (+Inf in the table).
		d := &httpretry.Transport{Base: base, Policy: p}
		d.Policy.Budget = httpretry.NoBudget()
		get(t, ctx, d, "http://[::1]:8080/at-once")

		const (
			hostB = "server.address=b.example,server.port=443"
			hostC = "server.address=c.example,server.port=8080"
			hostD = "server.address=::1,server.port=8080"
		)
		// c.example's budget: 10, less 3 retries; the certificate earned
		// while it was full.
		want := maps.Clone(wantA)
		// a.example's budget, seconds after its first use, is bound by a
		// room that fades from 10 by e every 10s (retry.Budget): what the
		// table says, below what it held before.
		held := wantA["retry.budget.tokens{"+hostA+"}"]
		retry.Stats.Each(func(n, host string, c retry.Counts) {
			if n == name && host == "a.example:80" {
				want["retry.budget.tokens{"+hostA+"}"] = c.Tokens
				if !(c.Tokens < held) {
					t.Errorf("a.example's budget later: %v tokens, want less than the %v it held", c.Tokens, held)
				}
			}
		})
		maps.Copy(want, map[string]float64{
			"retry.calls{" + hostB + ",kind=failed_with_retry}":    1,
			"retry.calls{" + hostB + ",kind=failed_without_retry}": 1,
			"retry.attempts{" + hostB + "}":                        3,
			"retry.retries{" + hostB + "}":                         1,
			"retry.delay{" + hostB + "}":                           1,
			"retry.failing_calls.duration{" + hostB + "}":          1,
			"retry.gave_up{" + hostB + ",cause=budget}":            2,
			"retry.budget.tokens{" + hostB + "}":                   0,
			"retry.http.calls{" + hostB + ",status_class=5xx}":     2, // each its last 503

			"retry.calls{" + hostC + ",kind=failed_without_retry}":     1, // the certificate
			"retry.calls{" + hostC + ",kind=failed_with_retry}":        2, // MaxRetries; the context, cancelled mid-wait
			"retry.attempts{" + hostC + "}":                            1 + 3 + 1,
			"retry.retries{" + hostC + "}":                             2 + 1,
			"retry.delay{" + hostC + "}":                               seconds(2300 * time.Millisecond),
			"retry.failing_calls.duration{" + hostC + "}":              seconds(2300 * time.Millisecond),
			"retry.gave_up{" + hostC + ",cause=not_retryable}":         1,
			"retry.gave_up{" + hostC + ",cause=max_retries}":           1,
			"retry.gave_up{" + hostC + ",cause=context}":               1,
			"retry.budget.tokens{" + hostC + "}":                       10 - 3,
			"retry.http.calls{" + hostC + ",status_class=5xx}":         1, // MaxRetries: the last 503
			"retry.http.calls{" + hostC + ",status_class=no_response}": 2, // the certificate; mid-wait

			"retry.calls{" + hostD + ",kind=successful_without_retry}": 1,
			"retry.attempts{" + hostD + "}":                            1,
			"retry.http.calls{" + hostD + ",status_class=2xx}":         1,
			// no budget.tokens point: NoBudget never refuses, and has no count to tell
		})
		same(t, "httpretry", points(t, reader, name), want)
	})
}

// TestHosts: a row's host becomes server.address and server.port when it
// is host:port, server.address alone otherwise: a Policy.Host of one's
// own, a port that is no port, the row "other" past 1,024 hosts.
func TestHosts(t *testing.T) {
	reader := register(t)
	name := unique(t)
	ok := func(context.Context) error { return nil }
	for _, host := range []string{"", "db-primary", "[2001:db8::1]:5432", "h:http", ":80", "h:65536"} {
		retry.Do(context.Background(), retry.Policy{Name: name, Host: host}, ok)
	}
	// One name for every run, so that -count above 1 adds no rows.
	const many = "otelretry-TestHosts-many"
	for i := range 1025 {
		retry.Do(context.Background(), retry.Policy{Name: many, Host: fmt.Sprint("h", i)}, ok)
	}
	kind := ",kind=successful_without_retry}"
	same(t, "hosts", points(t, reader, name), map[string]float64{
		"retry.calls{kind=successful_without_retry}":                     1,
		"retry.attempts{}":                                               1,
		"retry.calls{server.address=db-primary" + kind:                   1,
		"retry.attempts{server.address=db-primary}":                      1,
		"retry.calls{server.address=2001:db8::1,server.port=5432" + kind: 1,
		"retry.attempts{server.address=2001:db8::1,server.port=5432}":    1,
		"retry.calls{server.address=h:http" + kind:                       1,
		"retry.attempts{server.address=h:http}":                          1,
		"retry.calls{server.address=:80" + kind:                          1,
		"retry.attempts{server.address=:80}":                             1,
		"retry.calls{server.address=h:65536" + kind:                      1,
		"retry.attempts{server.address=h:65536}":                         1,
	})
	got := points(t, reader, many)
	maps.DeleteFunc(got, func(_ string, v float64) bool { return v == 0 })
	if n := got["retry.attempts{server.address=h0}"]; len(got) != 2*1025 || n == 0 || got["retry.calls{server.address=other"+kind] != n || got["retry.attempts{server.address=h1023}"] != n {
		t.Errorf("1,025 hosts: %d points not 0, %v under other, %v under h0; want 2,050, as many under other as under each host", len(got), got["retry.calls{server.address=other"+kind], n)
	}
}

// TestInstruments: each instrument's unit and description, counters
// cumulative and monotonic, the budget a gauge.
func TestInstruments(t *testing.T) {
	reader := register(t)
	b := &retry.Budget{}
	retry.Do(context.Background(), retry.Policy{Name: unique(t), Budget: b, Schedule: constant(-1, 1)},
		func(context.Context) error { return errFault })
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"retry.calls": "{call}", "retry.attempts": "{attempt}", "retry.retries": "{retry}", "retry.delay": "s",
		"retry.failing_calls.duration": "s", "retry.gave_up": "{call}", "retry.hedges": "{hedge}",
		"retry.hedges_won": "{hedge}", "retry.attempt_timeouts": "{request}", "retry.budget.tokens": "{retry}",
		"retry.http.calls": "{call}",
	}
	got := map[string]string{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/unherd/backoff/otelretry" {
			continue
		}
		for _, m := range sm.Metrics {
			got[m.Name] = m.Unit
			if m.Description == "" {
				t.Errorf("%s has no description", m.Name)
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if !d.IsMonotonic || d.Temporality != metricdata.CumulativeTemporality {
					t.Errorf("%s: monotonic %v, %v; want a cumulative counter", m.Name, d.IsMonotonic, d.Temporality)
				}
			case metricdata.Sum[float64]:
				if !d.IsMonotonic || d.Temporality != metricdata.CumulativeTemporality {
					t.Errorf("%s: monotonic %v, %v; want a cumulative counter", m.Name, d.IsMonotonic, d.Temporality)
				}
			case metricdata.Gauge[float64]:
				if m.Name != "retry.budget.tokens" {
					t.Errorf("%s is a gauge", m.Name)
				}
			}
		}
	}
	// One retry without a wait: every instrument but the hedges', the
	// timeouts' and the delay's has a point, and the duration may read 0.
	// retry.http.calls has points only from other tests' hosts.
	for _, m := range []string{"retry.hedges", "retry.hedges_won", "retry.attempt_timeouts", "retry.delay", "retry.failing_calls.duration", "retry.http.calls"} {
		got[m] = want[m]
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("instruments and units:\n%v\nwant\n%v", got, want)
	}
}

// TestUnregister: once unregistered, a collection reports nothing from
// the table; a registration again reports it all.
func TestUnregister(t *testing.T) {
	name := unique(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), roomy)
	reg, err := otelretry.Register(mp)
	if err != nil {
		t.Fatal(err)
	}
	retry.Do(context.Background(), retry.Policy{Name: name}, func(context.Context) error { return nil })
	want := map[string]float64{"retry.calls{kind=successful_without_retry}": 1, "retry.attempts{}": 1}
	same(t, "registered", points(t, reader, name), want)
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	same(t, "unregistered", points(t, reader, name), nil)
	reg, err = otelretry.Register(mp)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	same(t, "registered again", points(t, reader, name), want)
}

// TestRegisterGlobal: a nil MeterProvider is the global one.
func TestRegisterGlobal(t *testing.T) {
	name := unique(t)
	reader := sdkmetric.NewManualReader()
	before := otel.GetMeterProvider()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), roomy))
	defer otel.SetMeterProvider(before)
	reg, err := otelretry.Register(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	retry.Do(context.Background(), retry.Policy{Name: name}, func(context.Context) error { return nil })
	same(t, "Register(nil)", points(t, reader, name), map[string]float64{"retry.calls{kind=successful_without_retry}": 1, "retry.attempts{}": 1})
}

// refusing is the SDK's MeterProvider with one instrument, or the
// callback, refused: Register's error path, on a real SDK otherwise.
type refusing struct {
	*sdkmetric.MeterProvider
	instrument string // the name of the instrument refused, or "" for the callback
}

func (r refusing) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return refusingMeter{r.MeterProvider.Meter(name, opts...), r.instrument}
}

type refusingMeter struct {
	metric.Meter
	instrument string
}

var errRefused = errors.New("refused")

func (m refusingMeter) Int64ObservableCounter(name string, opts ...metric.Int64ObservableCounterOption) (metric.Int64ObservableCounter, error) {
	c, _ := m.Meter.Int64ObservableCounter(name, opts...)
	if name == m.instrument {
		return c, errRefused
	}
	return c, nil
}

func (m refusingMeter) Float64ObservableGauge(name string, opts ...metric.Float64ObservableGaugeOption) (metric.Float64ObservableGauge, error) {
	g, _ := m.Meter.Float64ObservableGauge(name, opts...)
	if name == m.instrument {
		return g, errRefused
	}
	return g, nil
}

func (m refusingMeter) RegisterCallback(f metric.Callback, instruments ...metric.Observable) (metric.Registration, error) {
	if m.instrument == "" {
		return nil, errRefused
	}
	return m.Meter.RegisterCallback(f, instruments...)
}

// TestRegisterRefused: an instrument or the callback refused is Register's
// error, and nothing is registered.
func TestRegisterRefused(t *testing.T) {
	name := unique(t)
	retry.Do(context.Background(), retry.Policy{Name: name}, func(context.Context) error { return nil })
	for _, instrument := range []string{"retry.calls", "retry.attempt_timeouts", "retry.budget.tokens", ""} {
		reader := sdkmetric.NewManualReader()
		reg, err := otelretry.Register(refusing{sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), roomy), instrument})
		if !errors.Is(err, errRefused) || reg != nil {
			t.Errorf("Register with %q refused = %v, %v; want nil, the refusal", instrument, reg, err)
		}
		same(t, "refused", points(t, reader, name), nil)
	}
}

// TestCollectConcurrent: two readers collecting at once, while calls
// count, under -race.
func TestCollectConcurrent(t *testing.T) {
	name := unique(t)
	r1, r2 := register(t), register(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				retry.Do(context.Background(), retry.Policy{Name: name, Host: "h:1"}, func(context.Context) error { return nil })
			}
		})
	}
	for _, r := range []*sdkmetric.ManualReader{r1, r2} {
		wg.Go(func() {
			for range 20 {
				points(t, r, name)
			}
		})
	}
	wg.Wait()
	want := map[string]float64{"retry.calls{server.address=h,server.port=1,kind=successful_without_retry}": 400, "retry.attempts{server.address=h,server.port=1}": 400}
	same(t, "reader 1", points(t, r1, name), want)
	same(t, "reader 2", points(t, r2, name), want)
}

// TestRegisterAddsNothing: a named call that succeeds at once allocates
// nothing with the instruments registered and collected.
func TestRegisterAddsNothing(t *testing.T) {
	reader := register(t)
	p := retry.Policy{Name: unique(t)}
	ok := func(context.Context) error { return nil }
	retry.Do(context.Background(), p, ok)
	points(t, reader, p.Name)
	if n := testing.AllocsPerRun(1000, func() { retry.Do(context.Background(), p, ok) }); n != 0 {
		t.Errorf("a named call that succeeds at once, registered: %v allocations, want 0", n)
	}
}

// BenchmarkCollect: one collection of 100 rows, each with a budget, all
// counted.
func BenchmarkCollect(b *testing.B) {
	reader := sdkmetric.NewManualReader()
	reg, err := otelretry.Register(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), roomy))
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Unregister()
	budget := &retry.Budget{}
	for i := range 100 {
		retry.Do(context.Background(), retry.Policy{Name: "otelretry-bench-collect", Host: fmt.Sprintf("h%d:443", i), Budget: budget, Schedule: constant(-1, 1)},
			func(context.Context) error { return errFault })
	}
	var rm metricdata.ResourceMetrics
	b.ReportAllocs()
	for b.Loop() {
		if err := reader.Collect(context.Background(), &rm); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRegisterTable: a table of one's own, registered beside retry.Stats
// on one MeterProvider, reports its rows alone, from zero; registering it
// twice is ErrRegistered.
func TestRegisterTable(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), roomy)
	tb := retry.NewTable()
	reg, err := otelretry.RegisterTable(mp, tb)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	if _, err := otelretry.RegisterTable(mp, tb); !errors.Is(err, otelretry.ErrRegistered) {
		t.Fatalf("RegisterTable twice: %v, want ErrRegistered", err)
	}
	p := retry.Policy{Name: "otelretry-own-table", Table: tb}
	retry.Do(context.Background(), p, func(context.Context) error { return nil })
	got := points(t, reader, p.Name)
	if got["retry.calls{kind=successful_without_retry}"] != 1 || got["retry.attempts{}"] != 1 {
		t.Errorf("the table's row: %v", got)
	}
	var rows int
	rm := metricdata.ResourceMetrics{}
	reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == "retry.attempts" {
			rows = len(m.Data.(metricdata.Sum[int64]).DataPoints)
		}
	}
	if rows != 1 {
		t.Errorf("retry.attempts: %d points, want the table's one row", rows)
	}
}
