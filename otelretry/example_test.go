package otelretry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/unherd/backoff"
	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/otelretry"
	"github.com/unherd/backoff/retry"
)

// The three lines: a MeterProvider with a reader (here the SDK's
// ManualReader; in production a PeriodicReader with an exporter),
// Register, and the Transport whose Base is otelhttp's around Resends.
// A server answers 503 once, then 200: the request's two sends are two
// spans, the second with http.request.resend_count 1, and the Policy's
// Name counts one call that succeeded after a retry (beside it, at 0,
// every other kind and cause).
func Example() {
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))

	reader := sdkmetric.NewManualReader()
	// Each row makes 10 points of retry.calls and retry.gave_up together:
	// a process with hundreds of rows lifts the SDK's 2,000 an instrument.
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithCardinalityLimit(100_000))
	reg, err := otelretry.Register(mp)
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()
	client := &http.Client{Transport: &httpretry.Transport{
		Policy: retry.Policy{Name: "example", Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}}}, // no wait, for the example
		Base:   otelhttp.NewTransport(otelretry.Resends(http.DefaultTransport), otelhttp.WithTracerProvider(tp)),
	}}
	defer client.CloseIdleConnections()

	resp, err := client.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	for _, s := range spans.Ended() {
		count := "none"
		for _, kv := range s.Attributes() {
			if kv.Key == semconv.HTTPRequestResendCountKey {
				count = kv.Value.String()
			}
		}
		fmt.Printf("span %q: resend_count %s\n", s.Name(), count)
	}
	var rm metricdata.ResourceMetrics
	reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		sum, ok := m.Data.(metricdata.Sum[int64])
		if !ok {
			continue
		}
		for _, p := range sum.DataPoints {
			// Every counter of a row is reported from its first call; the
			// zeros are left out here.
			if name, _ := p.Attributes.Value("retry.name"); name.AsString() == "example" && p.Value != 0 {
				kind, _ := p.Attributes.Value("kind")
				class, _ := p.Attributes.Value("status_class")
				fmt.Printf("%s{%s%s} %d\n", m.Name, kind.AsString(), class.AsString(), p.Value)
			}
		}
	}
	// Output:
	// span "HTTP GET": resend_count none
	// span "HTTP GET": resend_count 1
	// retry.calls{successful_with_retry} 1
	// retry.attempts{} 2
	// retry.retries{} 1
	// retry.http.calls{2xx} 1
}

// A test reports a table of its own, beside any registration of
// retry.Stats; a second registration of one table on one MeterProvider is
// refused, since it would report every count twice.
func ExampleRegisterTable() {
	table := retry.NewTable()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	reg, err := otelretry.RegisterTable(mp, table)
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()
	if _, err := otelretry.RegisterTable(mp, table); errors.Is(err, otelretry.ErrRegistered) {
		fmt.Println("again:", err)
	}
	retry.Do(context.Background(), retry.Policy{Name: "checkout", Table: table}, func(context.Context) error { return nil })
	var rm metricdata.ResourceMetrics
	reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == "retry.attempts" {
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				name, _ := p.Attributes.Value("retry.name")
				fmt.Printf("%s{retry.name=%s} %d\n", m.Name, name.AsString(), p.Value)
			}
		}
	}
	// Output:
	// again: otelretry: already registered on this MeterProvider
	// retry.attempts{retry.name=checkout} 1
}

// The histograms per call come from a producer given to the Reader: here,
// how many retries each call of a table needed.
func ExampleProducer() {
	table := retry.NewTable()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(otelretry.Producer(table)))
	sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	p := retry.Policy{Name: "checkout", Table: table, Schedule: backoff.Schedule{Curve: backoff.Value{BaseDelay: -1}}}
	busy := 2 // the first call fails twice, then succeeds; the next two at once
	for range 3 {
		retry.Do(context.Background(), p, func(context.Context) error {
			if busy > 0 {
				busy--
				return errors.New("busy")
			}
			return nil
		})
	}

	var rm metricdata.ResourceMetrics
	reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == "retry.call.retries" {
			p := m.Data.(metricdata.Histogram[int64]).DataPoints[0]
			fmt.Println(p.Bounds, p.BucketCounts, p.Sum)
		}
	}
	// Output:
	// [0 1 2 3 4] [2 0 1 0 0 0] 2
}
