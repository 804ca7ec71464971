package benchmarks

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	retryablehttp "github.com/hashicorp/go-retryablehttp"

	"github.com/unherd/backoff/httpretry"
)

// One GET that succeeds at once, against a loopback server, through the
// bare http.Transport, httpretry on the same kind of transport, and
// go-retryablehttp's standard client: what the retrying layer adds to a
// request that needs no retry. Each contender has its own transport and
// keeps its connection alive. Rounds, interleaved:
//
//	go test -c -o bench.test . && for i in $(seq 10); do ./bench.test -test.run '^$' -test.bench 'HTTPGet' -test.benchmem; done > http.txt
//	go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da -col /client http.txt
func BenchmarkHTTPGet(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	clients := []struct {
		name  string
		build func(base *http.Transport) *http.Client
	}{
		{"bare", func(base *http.Transport) *http.Client { return &http.Client{Transport: base} }},
		{"httpretry", func(base *http.Transport) *http.Client {
			return &http.Client{Transport: &httpretry.Transport{Base: base}}
		}},
		{"retryablehttp", func(base *http.Transport) *http.Client {
			c := retryablehttp.NewClient()
			c.HTTPClient = &http.Client{Transport: base}
			c.Logger = nil
			return c.StandardClient()
		}},
	}
	for _, c := range clients {
		b.Run("client="+c.name, func(b *testing.B) {
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			client := c.build(base)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Get(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
