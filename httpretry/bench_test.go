package httpretry_test

import (
	"net/http"
	"testing"

	"github.com/unherd/backoff/httpretry"
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

var okBase = roundTripFunc(func(*http.Request) (*http.Response, error) { return okResponse, nil })

func bench(b *testing.B, rt http.RoundTripper) {
	req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
	b.ReportAllocs()
	for b.Loop() {
		rt.RoundTrip(req)
	}
}
