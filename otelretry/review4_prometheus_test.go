package otelretry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/unherd/backoff/otelretry"
	"github.com/unherd/backoff/retry"
)

// TestReview4HostNotUTF8KeepsTheScrape: RegisterTable "adds to mp the
// instruments that report retry.Stats, every row of it"; retry.Stats
// takes any name or host, writing one that is not valid UTF-8 as \xNN in
// its JSON "so that every row keeps a key of its own". One row whose
// Policy.Host is not UTF-8 must not take every other row out of the
// scrape: Prometheus, through the OpenTelemetry exporter, must still
// serve the row "good".
func TestReview4HostNotUTF8KeepsTheScrape(t *testing.T) {
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
	ok := func(context.Context) error { return nil }
	retry.Do(context.Background(), retry.Policy{Name: "good", Table: table}, ok)
	retry.Do(context.Background(), retry.Policy{Name: "db", Host: "r\xe9plica:5432", Table: table}, ok) // Latin-1, not UTF-8
	retry.Do(context.Background(), retry.Policy{Name: "db", Host: "r\xe8plica:5432", Table: table}, ok)

	scrape := httptest.NewServer(promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	defer scrape.Close()
	resp, err := http.Get(scrape.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `retry_name="good"`) {
		first, _, _ := strings.Cut(string(body), "\n")
		t.Errorf("the scrape, with one row's host not UTF-8: %s, the row \"good\" served: %v; first line: %s",
			resp.Status, strings.Contains(string(body), `retry_name="good"`), first)
	}
	for _, host := range []string{`r\\xe9plica`, `r\\xe8plica`} { // \xNN, its backslash escaped by the text format
		if !strings.Contains(string(body), `server_address="`+host+`"`) {
			t.Errorf("the scrape has no row for server_address=%q, each host not UTF-8 written as retry.Stats's JSON writes it", host)
		}
	}
}
