package otelretry_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/otelretry"
	"github.com/unherd/backoff/retry"
)

// TestPrometheus: as Prometheus scrapes them through the OpenTelemetry
// exporter, over HTTP: a row's counters at 0 from its first call, the
// status classes, and the per-call histograms with their buckets.
func TestPrometheus(t *testing.T) {
	table := retry.NewTable()
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithProducer(otelretry.Producer(table)))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	if _, err := otelretry.RegisterTable(mp, table); err != nil {
		t.Fatal(err)
	}
	scrape := httptest.NewServer(promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	defer scrape.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
		}
	}))
	defer api.Close()
	client := &http.Client{Transport: &httpretry.Transport{Policy: retry.Policy{Name: "api", Table: table}}}
	for _, path := range []string{"/", "/missing"} {
		resp, err := client.Get(api.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	resp, err := http.Get(scrape.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		`retry_calls_total{kind="successful_without_retry",`, // a 404 is an answer
		`retry_gave_up_total{cause="budget",`,                // at 0, from the row's first call
		`retry_http_calls_total{`,
		`retry_call_retries_bucket{`,
		`retry_call_hedges_bucket{`,
		`retry_call_retry_delay_seconds_bucket{`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the scrape has no %s", want)
		}
	}
	for _, want := range []string{
		`status_class="2xx"} 1`, `status_class="4xx"} 1`, `status_class="5xx"} 0`, `status_class="no_response"} 0`,
		`retry_call_retries_bucket{`, `le="0"} 2`, `retry_call_retries_count{`, `retry_call_retry_delay_seconds_sum{`,
		`cause="budget",otel_scope_name="github.com/unherd/backoff/otelretry"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the scrape has no line with %s:\n%s", want, grep(text, "retry_"))
		}
	}
}

// grep returns text's lines that start with prefix.
func grep(text, prefix string) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, prefix) {
			b.WriteString(line)
		}
	}
	return b.String()
}
