package httpretry_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// BenchmarkRoundTrip: a GET that succeeds at once, after the first to its
// host, through the Transport's budget for that host: compare with
// BenchmarkRoundTripNoBudget, and with Base alone (BenchmarkBase).
func BenchmarkRoundTrip(b *testing.B) {
	bench(b, &httpretry.Transport{Base: okBase})
}

func BenchmarkRoundTripNoBudget(b *testing.B) {
	tr := &httpretry.Transport{Base: okBase}
	tr.Policy.Budget = httpretry.NoBudget()
	bench(b, tr)
}

func BenchmarkBase(b *testing.B) { bench(b, okBase) }

// BenchmarkRoundTripNamed: the same under a Policy.Name, counted per host
// in retry.Stats.
func BenchmarkRoundTripNamed(b *testing.B) {
	bench(b, &httpretry.Transport{Base: okBase, Policy: retry.Policy{Name: "bench"}})
}

// BenchmarkRoundTripSlow: the same GET, with AttemptTimeout or a Hedge set
// and no hedge sent; Base makes a fresh response each time, as any real one
// does, since the Transport wraps its body.
func BenchmarkRoundTripSlow(b *testing.B) {
	adaptive := &httpretry.Transport{Base: freshBase, Hedge: &httpretry.Hedge{}}
	for _, bb := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"Base", freshBase},
		{"Transport", &httpretry.Transport{Base: freshBase}},
		{"AttemptTimeout", &httpretry.Transport{Base: freshBase, AttemptTimeout: time.Hour}},
		{"Hedge", &httpretry.Transport{Base: freshBase, Hedge: &httpretry.Hedge{Delay: time.Hour}}},
		{"HedgeAdaptive", adaptive},
		{"Both", &httpretry.Transport{Base: freshBase, AttemptTimeout: time.Hour, Hedge: &httpretry.Hedge{}}},
	} {
		b.Run(bb.name, func(b *testing.B) { benchClose(b, bb.rt) })
	}
}

// BenchmarkRoundTripLoopback: the same, through a real http.Transport to
// a loopback server, where a round trip costs tens of microseconds.
func BenchmarkRoundTripLoopback(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	for _, bb := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"Base", base},
		{"Transport", &httpretry.Transport{Base: base}},
		{"Both", &httpretry.Transport{Base: base, AttemptTimeout: time.Hour, Hedge: &httpretry.Hedge{}}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := bb.rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkRoundTripParallel: every goroutine's GETs to one host, through
// its one budget.
func BenchmarkRoundTripParallel(b *testing.B) {
	tr := &httpretry.Transport{Base: okBase}
	req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tr.RoundTrip(req)
		}
	})
}

var (
	okBase    = roundTripFunc(func(*http.Request) (*http.Response, error) { return okResponse, nil })
	freshBase = roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	})
)

func bench(b *testing.B, rt http.RoundTripper) {
	req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
	b.ReportAllocs()
	for b.Loop() {
		rt.RoundTrip(req)
	}
}

func benchClose(b *testing.B, rt http.RoundTripper) {
	req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
	for range 300 { // an adaptive Hedge's estimate
		resp, _ := rt.RoundTrip(req)
		resp.Body.Close()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, _ := rt.RoundTrip(req)
		resp.Body.Close()
	}
}
