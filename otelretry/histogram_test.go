package otelretry_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/otelretry"
	"github.com/unherd/backoff/retry"
)

// TestProducer: through the SDK's ManualReader, each row's three
// histograms, cumulative, with its attributes, A96's bounds and each
// call's bucket; a row's first call at once reports it in bucket 0 of
// each; the counts only grow from one collection to the next.
func TestProducer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		table := retry.NewTable()
		reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(otelretry.Producer(table)))
		sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		ctx := context.Background()
		p := retry.Policy{Name: "n", Table: table, Schedule: constant(time.Second, 4)}
		retry.Do(ctx, p, func(context.Context) error { return nil })
		first := histograms(t, reader)
		if h := first["retry.call.retries{retry.name=n}"]; h.Count != 1 || h.BucketCounts[0] != 1 || h.Sum != 0 {
			t.Fatalf("one call at once: retries %+v, want 1 call in bucket 0", h)
		}

		n := 0
		retry.Do(ctx, p, func(context.Context) error { // 3 retries, 3s waited
			if n++; n <= 3 {
				return errFault
			}
			return nil
		})
		retry.Do(ctx, p, func(context.Context) error { return errFault }) // 4 retries, 4s: MaxRetries
		tr := &httpretry.Transport{Policy: retry.Policy{Name: "h", Table: table, Budget: httpretry.NoBudget(), Schedule: constant(time.Second, 1)},
			Base: roundTrip(func(req *http.Request) (*http.Response, error) {
				return nil, errors.New("refused")
			})}
		req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
		tr.RoundTrip(req) // 1 retry, 1s

		got := histograms(t, reader)
		want := map[string]struct {
			buckets []uint64
			sum     float64
		}{
			"retry.call.retries{retry.name=n}":                                               {[]uint64{1, 0, 0, 1, 1, 0}, 7},
			"retry.call.hedges{retry.name=n}":                                                {[]uint64{3, 0, 0, 0, 0, 0}, 0},
			"retry.call.retry_delay{retry.name=n}":                                           {[]uint64{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0}, 7},
			"retry.call.retries{retry.name=h,server.address=api.example,server.port=80}":     {[]uint64{0, 1, 0, 0, 0, 0}, 1},
			"retry.call.hedges{retry.name=h,server.address=api.example,server.port=80}":      {[]uint64{1, 0, 0, 0, 0, 0}, 0},
			"retry.call.retry_delay{retry.name=h,server.address=api.example,server.port=80}": {[]uint64{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}, 1},
		}
		if len(got) != len(want) {
			t.Errorf("%d histograms, want %d: %v", len(got), len(want), got)
		}
		for k, w := range want {
			h, ok := got[k]
			if !ok {
				t.Errorf("%s: none", k)
				continue
			}
			if !slices.Equal(h.BucketCounts, w.buckets) || h.Sum != w.sum || h.Count != sum(w.buckets) {
				t.Errorf("%s: buckets %v, sum %v, count %d; want %v, %v, %d", k, h.BucketCounts, h.Sum, h.Count, w.buckets, w.sum, sum(w.buckets))
			}
			wantBounds := retry.PerCallBounds[:]
			if k[:len("retry.call.retry_delay")] == "retry.call.retry_delay" {
				wantBounds = retry.DelayBounds[:]
			}
			if !slices.Equal(h.Bounds, wantBounds) {
				t.Errorf("%s: bounds %v, want %v", k, h.Bounds, wantBounds)
			}
			if f, ok := first[k]; ok && f.Count > h.Count {
				t.Errorf("%s: its count went back from %d to %d", k, f.Count, h.Count)
			}
		}
	})
}

func sum(n []uint64) (s uint64) {
	for _, v := range n {
		s += v
	}
	return s
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// histograms collects reader once, and returns each histogram point of
// this package's scope by name and attributes, its values as float64.
func histograms(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.HistogramDataPoint[float64]{}
	key := func(name string, set attribute.Set) string {
		k := name + "{"
		for i, kv := range set.ToSlice() {
			if i > 0 {
				k += ","
			}
			k += string(kv.Key) + "=" + kv.Value.String()
		}
		return k + "}"
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/unherd/backoff/otelretry" {
			continue
		}
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[int64]:
				if d.Temporality != metricdata.CumulativeTemporality {
					t.Errorf("%s: %v, want cumulative", m.Name, d.Temporality)
				}
				for _, p := range d.DataPoints {
					out[key(m.Name, p.Attributes)] = metricdata.HistogramDataPoint[float64]{
						Count: p.Count, Bounds: p.Bounds, BucketCounts: p.BucketCounts, Sum: float64(p.Sum)}
				}
			case metricdata.Histogram[float64]:
				if d.Temporality != metricdata.CumulativeTemporality || m.Unit != "s" {
					t.Errorf("%s: %v, %q; want cumulative, in seconds", m.Name, d.Temporality, m.Unit)
				}
				for _, p := range d.DataPoints {
					out[key(m.Name, p.Attributes)] = p
				}
			}
		}
	}
	return out
}
