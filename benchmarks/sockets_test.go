package benchmarks

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"
	"github.com/failsafe-go/failsafe-go/timeout"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// The tail over real sockets: the host model of TestTail (10 replicas,
// 2ms + Exp(3ms), each pausing 1s every ~30s, 1% of requests hanging, 5%
// answering 503 after 1ms) served by an httptest server on loopback, in
// real time, to real http.Transports; and the cost of hedging per
// protocol, HTTP/1.1 plain and over TLS, and HTTP/2. Minutes of real
// time, so opt-in, and timings move with the machine: compare arms within
// one run, never figures across machines.
//
//	go test -run TestSocketsTail -v -sockets -timeout 40m   # 20 instances, open loop, the arms of TestTail: 20 minutes
//	go test -run TestSocketsHTTP1 -v -sockets   # 64 goroutines on one client, per protocol

var (
	socketsOn     = flag.Bool("sockets", false, "run TestSocketsTail and TestSocketsHTTP1: real loopback servers, minutes of real time")
	socketsDur    = flag.Duration("sockets-dur", 30*time.Second, "TestSocketsTail: the measured window of each run, after a 10s warm-up")
	socketsReps   = flag.Int("sockets-reps", 5, "TestSocketsTail, TestSocketsHTTP1: runs of each arm, interleaved")
	socketsProtos = flag.String("sockets-protos", "http/1.1,https/1.1,https/2", "TestSocketsHTTP1: the protocols, comma-separated")
)

// socketHost is the host model as an http.Handler, in real time. Each
// request names its logical request in the X-Call header; the n-th copy
// of it the host sees draws its replica, fate and service time from
// (seed, call, n), so that every arm meets the same fates in the same
// order of copies, though not at the same instants. The replicas' pauses
// are drawn from the seed alone, from the server's start.
type socketHost struct {
	seed     uint64
	t0       time.Time
	pauses   [][]socketPause
	mu       sync.Mutex
	copies   map[string]uint64
	requests atomic.Int64
	conns    atomic.Int64
}

type socketPause struct{ start, end time.Duration }

const (
	socketReplicas = 10
	socketPause1   = time.Second
	socketGap      = 30 * time.Second
	socketHang     = 0.01
	socketFail     = 0.05
)

func newSocketHost(seed uint64, horizon time.Duration) *socketHost {
	h := &socketHost{seed: seed, copies: map[string]uint64{}}
	for i := range socketReplicas {
		r := rand.New(rand.NewPCG(seed, 3<<40+uint64(i)))
		var ps []socketPause
		for t := 0.0; ; {
			t += r.ExpFloat64() * socketGap.Seconds()
			start := time.Duration(t * float64(time.Second))
			if start >= horizon {
				break
			}
			if n := len(ps); n > 0 && start <= ps[n-1].end {
				ps[n-1].end = max(ps[n-1].end, start+socketPause1)
			} else {
				ps = append(ps, socketPause{start, start + socketPause1})
			}
		}
		h.pauses = append(h.pauses, ps)
	}
	return h
}

// finish is when work s arriving at a on replica i is done: a pause
// freezes the replica's work.
func (h *socketHost) finish(i int, a, s time.Duration) time.Duration {
	t, rem := a, s
	for _, p := range h.pauses[i] {
		if p.end <= t {
			continue
		}
		if p.start >= t+rem {
			break
		}
		if p.start > t {
			rem -= p.start - t
		}
		t = p.end
	}
	return t + rem
}

func (h *socketHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.requests.Add(1)
	id := r.Header.Get("X-Call")
	h.mu.Lock()
	n := h.copies[id]
	h.copies[id] = n + 1
	t0 := h.t0 // TestSocketsHTTP1 moves it to the start of the measured calls
	h.mu.Unlock()
	var key uint64
	for _, c := range []byte(id) {
		key = key*131 + uint64(c)
	}
	rng := rand.New(rand.NewPCG(h.seed, key<<8|n))
	rep, u, e := rng.IntN(socketReplicas), rng.Float64(), rng.ExpFloat64()
	ctx := r.Context()
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	switch {
	case u < socketHang:
		<-ctx.Done()
		return
	case u < socketHang+socketFail:
		if wait(time.Millisecond) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		return
	}
	now := time.Since(t0)
	work := 2*time.Millisecond + time.Duration(e*float64(3*time.Millisecond))
	if !wait(h.finish(rep, now, work) - now) {
		return
	}
	w.Header().Set("Content-Length", "100")
	w.Write(make([]byte, 100))
}

// socketServer starts a server of h: plain HTTP/1.1, or TLS with HTTP/1.1
// only, or TLS with HTTP/2; and a base http.Transport for one client of
// it, as net/http's defaults make it (TLS trusting the test certificate).
func socketServer(t *testing.T, h *socketHost, proto string) (*httptest.Server, func() *http.Transport) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			h.conns.Add(1)
		}
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes cut by cancelled copies
	switch proto {
	case "http/1.1":
		srv.Start()
	case "https/1.1":
		srv.StartTLS()
	case "https/2":
		srv.EnableHTTP2 = true
		srv.StartTLS()
	}
	h.t0 = time.Now()
	base := func() *http.Transport {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if srv.TLS != nil {
			tr.TLSClientConfig = &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
			tr.ForceAttemptHTTP2 = proto == "https/2"
			if proto != "https/2" {
				tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
			}
		}
		return tr
	}
	return srv, base
}

// socketArm builds one client instance on its own base Transport.
type socketArm struct {
	name string
	new  func(base *http.Transport) http.RoundTripper
}

// socketCurve is the tail arms' Policy, named anew for each client made,
// so that the run can read its hedges in retry.Stats.
func socketCurve() retry.Policy {
	return retry.Policy{Name: "benchmarks-sockets-" + strconv.FormatInt(socketNames.Add(1), 10),
		Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: 10 * time.Millisecond, MaxDelay: 200 * time.Millisecond}}}
}

var socketNames atomic.Int64

// hedgesOf returns the hedges a client of socketCurve's sent, 0 for
// another.
func hedgesOf(rt http.RoundTripper) int64 {
	if tr, ok := rt.(*httpretry.Transport); ok && tr.Policy.Name != "" {
		return int64(retry.Stats.Of(tr.Policy.Name).Hedges)
	}
	return 0
}

func socketFailsafe(hedge failsafe.Policy[*http.Response]) func(*http.Transport) http.RoundTripper {
	return func(base *http.Transport) http.RoundTripper {
		ps := []failsafe.Policy[*http.Response]{failsafehttp.NewRetryPolicyBuilder().WithMaxRetries(5).WithBackoff(10*time.Millisecond, 200*time.Millisecond).Build()}
		if hedge != nil {
			ps = append(ps, hedge)
		}
		return failsafehttp.NewRoundTripper(base, append(ps, timeout.New[*http.Response](250*time.Millisecond))...)
	}
}

var socketTailArms = []socketArm{
	{"none", func(base *http.Transport) http.RoundTripper { return base }},
	{"failsafe-go, retry + timeout 250ms", socketFailsafe(nil)},
	{"failsafe-go, + hedgepolicy.NewWithDelay(50ms)", func(base *http.Transport) http.RoundTripper {
		return socketFailsafe(hedgepolicy.NewWithDelay[*http.Response](50 * time.Millisecond))(base)
	}},
	{"failsafe-go, + NewWithDelayQuantile(0.95, 30, 20)", func(base *http.Transport) http.RoundTripper {
		return socketFailsafe(hedgepolicy.NewWithDelayQuantile[*http.Response](0.95, 30, 20))(base)
	}},
	{"httpretry, AttemptTimeout 250ms", func(base *http.Transport) http.RoundTripper {
		return &httpretry.Transport{Base: base, AttemptTimeout: 250 * time.Millisecond, Policy: socketCurve()}
	}},
	{"httpretry, AttemptTimeout 250ms, Hedge{}", func(base *http.Transport) http.RoundTripper {
		return &httpretry.Transport{Base: base, AttemptTimeout: 250 * time.Millisecond, Hedge: &httpretry.Hedge{}, Policy: socketCurve()}
	}},
}

// socketGet is one request of a call: true on a 200 with its whole body.
func socketGet(ctx context.Context, client *http.Client, url, id string) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("X-Call", id)
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return err == nil && resp.StatusCode == http.StatusOK && n == 100
}

// socketResult is one run of one arm.
type socketResult struct {
	lat       []time.Duration // sorted; a failed call at the deadline
	ok, calls int
	requests  int64         // the measured calls'
	conns     int64         // opened in the run (TestSocketsHTTP1: while measured)
	hedges    int64         // httpretry's, sent in the run (TestSocketsHTTP1: while measured)
	cpu       time.Duration // TestSocketsHTTP1: the process's CPU time while measured, server and client together
	took      time.Duration // from the first measured call's start to the last one's end
}

func (r socketResult) q(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[max(int(math.Ceil(p*float64(len(r.lat))))-1, 0)]
}

// runSocketsTail runs one arm against a fresh server: 20 instances, each
// its own client on its own base Transport, calling at 5 a second
// (Poisson, from the seed), a 2s deadline each; the calls of the first 10s
// are sent and not measured.
func runSocketsTail(t *testing.T, arm socketArm, seed uint64, dur time.Duration) socketResult {
	const instances, rate, warm, deadline = 20, 5.0, 10 * time.Second, 2 * time.Second
	h := newSocketHost(seed, warm+dur+time.Minute)
	srv, base := socketServer(t, h, "http/1.1")
	defer srv.Close()
	var (
		mu  sync.Mutex
		res socketResult
		wg  sync.WaitGroup
	)
	var clients []http.RoundTripper
	var last time.Time
	for inst := range instances {
		b := base()
		client := &http.Client{Transport: arm.new(b)}
		clients = append(clients, client.Transport)
		arr := rand.New(rand.NewPCG(seed, 1<<40+uint64(inst)))
		wg.Go(func() {
			defer b.CloseIdleConnections()
			var calls sync.WaitGroup
			for k, at := 0, 0.0; ; k++ {
				at += arr.ExpFloat64() / rate
				d := time.Duration(at * float64(time.Second))
				if d >= warm+dur {
					break
				}
				time.Sleep(time.Until(h.t0.Add(d)))
				measured := d >= warm
				id := fmt.Sprintf("%d-%d", inst, k)
				if measured {
					id = "m" + id
				}
				calls.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), deadline)
					defer cancel()
					start := time.Now()
					ok := socketGet(ctx, client, srv.URL, id)
					el := time.Since(start)
					if !measured {
						return
					}
					mu.Lock()
					defer mu.Unlock()
					last = time.Now()
					res.calls++
					if ok {
						res.ok++
					} else {
						el = max(el, deadline)
					}
					res.lat = append(res.lat, el)
				})
			}
			calls.Wait()
		})
	}
	wg.Wait()
	res.took = last.Sub(h.t0.Add(warm))
	slices.Sort(res.lat)
	h.mu.Lock()
	for id, n := range h.copies { // the copies of the measured calls' requests
		if strings.HasPrefix(id, "m") {
			res.requests += int64(n)
		}
	}
	h.mu.Unlock()
	res.conns = h.conns.Load()
	for _, c := range clients {
		res.hedges += hedgesOf(c)
	}
	return res
}

// TestSocketsTail is TestTail's scenario A over loopback, in real time:
// each arm run socketsReps times, interleaved, each run a fresh server
// with the same seed (the same pauses and fates). It prints, per arm, the
// median and range over the runs of success, p50, p99 and p99.9, the
// requests per call and the connections opened.
func TestSocketsTail(t *testing.T) {
	if !*socketsOn {
		t.Skip("minutes of real time: run with -sockets")
	}
	runs := make([][]socketResult, len(socketTailArms))
	for rep := range *socketsReps {
		for i, arm := range socketTailArms {
			runs[i] = append(runs[i], runSocketsTail(t, arm, 1, *socketsDur))
		}
		t.Logf("run %d of %d done", rep+1, *socketsReps)
	}
	fmt.Printf("Scenario A over loopback (plain HTTP/1.1), 20 instances at 5 calls/s each, %v measured after 10s, %d runs each, interleaved; median [min–max] over runs.\n\n", *socketsDur, *socketsReps)
	fmt.Println(socketTable(socketTailArms, runs, false))
}

// socketTable prints one row per arm: medians and ranges over its runs;
// with cpu, the process's CPU time a call too.
func socketTable(arms []socketArm, runs [][]socketResult, cpu bool) string {
	var b strings.Builder
	b.WriteString("| client | calls/s | success | p50 | p99 | p99.9 | requests per call | hedges per call | connections opened |")
	if cpu {
		b.WriteString(" CPU per call |")
	}
	b.WriteString("\n|---|--:|--:|--:|--:|--:|--:|--:|--:|")
	if cpu {
		b.WriteString("--:|")
	}
	b.WriteString("\n")
	for i, arm := range arms {
		rs := runs[i]
		f := func(g func(socketResult) float64, format string) string {
			xs := make([]float64, len(rs))
			for j, r := range rs {
				xs[j] = g(r)
			}
			slices.Sort(xs)
			m := fmt.Sprintf(format, xs[len(xs)/2])
			if lo, hi := fmt.Sprintf(format, xs[0]), fmt.Sprintf(format, xs[len(xs)-1]); lo != hi {
				m += " [" + lo + "–" + hi + "]"
			}
			return m
		}
		ms := func(p float64) func(socketResult) float64 {
			return func(r socketResult) float64 { return float64(r.q(p)) / 1e6 }
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |", arm.name,
			f(func(r socketResult) float64 { return float64(r.calls) / r.took.Seconds() }, "%.0f"),
			f(func(r socketResult) float64 { return 100 * float64(r.ok) / float64(max(r.calls, 1)) }, "%.2f%%"),
			f(ms(0.5), "%.1fms"), f(ms(0.99), "%.0fms"), f(ms(0.999), "%.0fms"),
			f(func(r socketResult) float64 { return float64(r.requests) / float64(max(r.calls, 1)) }, "%.3f"),
			f(func(r socketResult) float64 { return float64(r.hedges) / float64(max(r.calls, 1)) }, "%.3f"),
			f(func(r socketResult) float64 { return float64(r.conns) }, "%.0f"))
		if cpu {
			fmt.Fprintf(&b, " %s |", f(func(r socketResult) float64 { return r.cpu.Seconds() * 1e3 / float64(max(r.calls, 1)) }, "%.2fms"))
		}
		b.WriteString("\n")
	}
	return b.String()
}

var socketHTTP1Arms = []socketArm{
	{"failsafe-go, retry + timeout 250ms", socketFailsafe(nil)},
	{"failsafe-go, + hedgepolicy.NewWithDelay(50ms)", func(base *http.Transport) http.RoundTripper {
		return socketFailsafe(hedgepolicy.NewWithDelay[*http.Response](50 * time.Millisecond))(base)
	}},
	{"failsafe-go, + NewWithDelayQuantile(0.95, 30, 20)", func(base *http.Transport) http.RoundTripper {
		return socketFailsafe(hedgepolicy.NewWithDelayQuantile[*http.Response](0.95, 30, 20))(base)
	}},
	{"httpretry, AttemptTimeout 250ms", func(base *http.Transport) http.RoundTripper {
		return &httpretry.Transport{Base: base, AttemptTimeout: 250 * time.Millisecond, Policy: socketCurve()}
	}},
	{"httpretry, AttemptTimeout 250ms, Hedge{}", func(base *http.Transport) http.RoundTripper {
		return &httpretry.Transport{Base: base, AttemptTimeout: 250 * time.Millisecond, Hedge: &httpretry.Hedge{}, Policy: socketCurve()}
	}},
	{"httpretry, AttemptTimeout 250ms, Hedge{Delay: 5ms, Max: 3}", func(base *http.Transport) http.RoundTripper {
		return &httpretry.Transport{Base: base, AttemptTimeout: 250 * time.Millisecond, Hedge: &httpretry.Hedge{Delay: 5 * time.Millisecond, Max: 3}, Policy: socketCurve()}
	}},
	// httpretry's AttemptTimeout and Hedge{} arms again, on a Transport
	// whose idle pool holds a connection for each goroutine: what the
	// default's 2 cost.
	{"httpretry, AttemptTimeout 250ms; MaxIdleConnsPerHost 64", func(base *http.Transport) http.RoundTripper {
		base.MaxIdleConnsPerHost = 64
		return &httpretry.Transport{Base: base, AttemptTimeout: 250 * time.Millisecond, Policy: socketCurve()}
	}},
	{"httpretry, AttemptTimeout 250ms, Hedge{}; MaxIdleConnsPerHost 64", func(base *http.Transport) http.RoundTripper {
		base.MaxIdleConnsPerHost = 64
		return &httpretry.Transport{Base: base, AttemptTimeout: 250 * time.Millisecond, Hedge: &httpretry.Hedge{}, Policy: socketCurve()}
	}},
}

// runSocketsClosed runs one arm on one protocol: 64 goroutines sharing
// one client, each making 20 calls one after another (2s deadline each),
// after 400 calls of warm-up in the same way (the adaptive estimate's
// samples); the host as TestSocketsTail's, its replicas' pauses timed
// from the first measured call, so that every arm's measured calls meet
// the same pauses. With a period above zero, goroutine g starts its k-th
// measured call no sooner than (k + g/64) periods after the first (paced:
// a call every period/64, the same offered load for every arm that keeps
// up); with none, at once (closed: an arm whose calls end sooner sends
// more calls a second, and its latency is measured at that higher load).
func runSocketsClosed(t *testing.T, arm socketArm, proto string, seed uint64, period time.Duration) socketResult {
	const goroutines, perGoroutine, warmCalls, deadline = 64, 20, 400, 2 * time.Second
	h := newSocketHost(seed, 10*time.Minute)
	srv, base := socketServer(t, h, proto)
	defer srv.Close()
	b := base()
	defer b.CloseIdleConnections()
	client := &http.Client{Transport: arm.new(b)}
	var next atomic.Int64
	call := func() (time.Duration, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		start := time.Now()
		ok := socketGet(ctx, client, srv.URL, strconv.FormatInt(next.Add(1), 10))
		el := time.Since(start)
		if !ok {
			el = max(el, deadline)
		}
		return el, ok
	}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range warmCalls / goroutines {
				call()
			}
		})
	}
	wg.Wait()
	time.Sleep(socketSettle) // the warm-up's losing copies end outside the measured window
	requests0, conns0, hedges0, cpu0 := h.requests.Load(), h.conns.Load(), hedgesOf(client.Transport), cpuTime()
	start := time.Now()
	h.mu.Lock()
	h.t0 = start
	h.mu.Unlock()
	var mu sync.Mutex
	var res socketResult
	for g := range goroutines {
		wg.Go(func() {
			for k := range perGoroutine {
				time.Sleep(time.Until(start.Add(time.Duration(k*goroutines+g) * period / goroutines)))
				el, ok := call()
				mu.Lock()
				res.calls++
				if ok {
					res.ok++
				}
				res.lat = append(res.lat, el)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.took = time.Since(start)
	slices.Sort(res.lat)
	time.Sleep(socketSettle) // the measured calls' losing copies end inside it
	res.requests, res.conns, res.hedges, res.cpu = h.requests.Load()-requests0, h.conns.Load()-conns0, hedgesOf(client.Transport)-hedges0, cpuTime()-cpu0
	return res
}

// socketSettle is how long TestSocketsHTTP1 waits after the warm-up and
// after the measured calls, so that the counts of the measured window
// (requests, connections, CPU) hold the work of its calls' losing copies
// and none of the warm-up's: a loser lingers for its AttemptTimeout
// (250ms) at most and drains its body for 100ms at most.
const socketSettle = 400 * time.Millisecond

// socketsPeriod is TestSocketsHTTP1's pace: 64 goroutines each starting a
// call every 100ms offer 640 calls a second, less than the closed loop
// carries on each protocol with every arm but failsafe-go's fixed hedge
// over TLS (430 a second; the others 700 to 1,200). An arm whose hung
// calls put their goroutines behind makes fewer (588 without a hedge):
// a goroutine behind sends its next calls back to back.
const socketsPeriod = 100 * time.Millisecond

// TestSocketsHTTP1 compares hedging with no hedging per protocol: 64
// goroutines on one client over plain HTTP/1.1, HTTP/1.1 over TLS and
// HTTP/2, in a closed loop and paced, each arm run socketsReps times,
// interleaved; it prints the calls a second, success, latency, requests
// per call, connections opened and the process's CPU time per call
// (server and client together) of the measured 1,280 calls.
func TestSocketsHTTP1(t *testing.T) {
	if !*socketsOn {
		t.Skip("minutes of real time: run with -sockets")
	}
	for _, proto := range strings.Split(*socketsProtos, ",") {
		for _, period := range []time.Duration{0, socketsPeriod} {
			runs := make([][]socketResult, len(socketHTTP1Arms))
			for range *socketsReps {
				for i, arm := range socketHTTP1Arms {
					runs[i] = append(runs[i], runSocketsClosed(t, arm, proto, 2, period))
				}
			}
			loop := "one after another (closed loop)"
			if period > 0 {
				loop = fmt.Sprintf("paced (a goroutine's calls no closer than %v, the goroutines' staggered: %.0f calls/s offered)", period, 64/period.Seconds())
			}
			fmt.Printf("%s: 64 goroutines on one client (net/http's default Transport, 2 idle connections a host, unless the arm says), 20 calls each %s, after 400 of warm-up; %d runs each, interleaved; median [min–max].\n\n", proto, loop, *socketsReps)
			fmt.Println(socketTable(socketHTTP1Arms, runs, true))
		}
	}
}
