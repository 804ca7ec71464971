package otelretry

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/unherd/backoff/retry"
)

// Producer returns the per-call histograms of t (retry.Stats for a nil
// t) as a producer for the SDK's readers, so that a collection reports
// them beside Register's instruments:
//
//	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(otelretry.Producer(nil)))
//
// (a PeriodicReader, and the Prometheus exporter's prometheus.WithProducer,
// take it alike). The OpenTelemetry API has no asynchronous histogram,
// and recording each call into a synchronous one would add a hook to the
// happy path; the table keeps each histogram's buckets as it counts the
// call, and the producer reports them as they are, cumulative, each row
// with the attributes Register gives it:
//
//	retry.call.retries      {retry}  retries per call, the waits started (gRPC A96's
//	                                 grpc.client.call.retries, bounds 0, 1, 2, 3, 4)
//	retry.call.hedges       {hedge}  httpretry's hedges per call, 0 for retry's
//	                                 (A96's hedge attempts, apart)
//	retry.call.retry_delay  s        the time each call waited, in all (A96's
//	                                 grpc.client.call.retry_delay; bounds retry.DelayBounds)
//
// A call counts once it has returned. The series start when the producer
// is made, though the table's counts are the process's: make it once, as
// the process starts. It is safe for concurrent use.
func Producer(t *retry.Table) sdkmetric.Producer {
	if t == nil {
		t = retry.Stats
	}
	return &producer{table: t, start: time.Now(), rows: map[rowKey]attribute.Set{}}
}

type producer struct {
	table *retry.Table
	start time.Time
	mu    sync.Mutex // rows, for collections that overlap
	rows  map[rowKey]attribute.Set
}

// Produce reads the table once, and reports each row's three histograms.
func (p *producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	now := time.Now()
	var retries, hedges []metricdata.HistogramDataPoint[int64]
	var delay []metricdata.HistogramDataPoint[float64]
	perCall := func(attrs attribute.Set, h retry.PerCall) metricdata.HistogramDataPoint[int64] {
		return metricdata.HistogramDataPoint[int64]{
			Attributes: attrs, StartTime: p.start, Time: now, Count: total(h.Counts[:]),
			Bounds: retry.PerCallBounds[:], BucketCounts: h.Counts[:], Sum: int64(min(h.Sum, 1<<63-1)),
		}
	}
	p.table.Each(func(name, host string, c retry.Counts) {
		attrs := p.attrs(name, host)
		retries = append(retries, perCall(attrs, c.RetriesPerCall))
		hedges = append(hedges, perCall(attrs, c.HedgesPerCall))
		d := c.RetryDelay
		delay = append(delay, metricdata.HistogramDataPoint[float64]{
			Attributes: attrs, StartTime: p.start, Time: now, Count: total(d.Counts[:]),
			Bounds: retry.DelayBounds[:], BucketCounts: d.Counts[:], Sum: d.Sum.Seconds(),
		})
	})
	if len(retries) == 0 {
		return nil, nil
	}
	cumulative := metricdata.CumulativeTemporality
	return []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: scope},
		Metrics: []metricdata.Metrics{
			{Name: "retry.call.retries", Unit: "{retry}", Description: "Retries per call: the waits it started before another attempt.",
				Data: metricdata.Histogram[int64]{DataPoints: retries, Temporality: cumulative}},
			{Name: "retry.call.hedges", Unit: "{hedge}", Description: "Hedges per call: the copies it sent beyond each attempt's first.",
				Data: metricdata.Histogram[int64]{DataPoints: hedges, Temporality: cumulative}},
			{Name: "retry.call.retry_delay", Unit: "s", Description: "Time per call waited between attempts, in all.",
				Data: metricdata.Histogram[float64]{DataPoints: delay, Temporality: cumulative}},
		},
	}}, nil
}

// attrs returns the attribute set of the row of name and host, made on
// first sight.
func (p *producer) attrs(name, host string) attribute.Set {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.rows[rowKey{name, host}]; ok {
		return a
	}
	a := attribute.NewSet(rowAttrsOf(name, host)...)
	p.rows[rowKey{name, host}] = a
	return a
}

func total(n []uint64) (s uint64) {
	for _, v := range n {
		s += v
	}
	return s
}
