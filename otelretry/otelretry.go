// Package otelretry reports the retries of github.com/unherd/backoff to
// OpenTelemetry: the counts of retry.Stats as metrics, and
// http.request.resend_count on the span of each resent request.
//
// Three lines wire it, once per process:
//
//	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
//	reg, err := otelretry.Register(mp) // every Policy.Name, from now on
//	client := &http.Client{Transport: &httpretry.Transport{
//		Policy: retry.Policy{Name: "payments"},
//		Base:   otelhttp.NewTransport(otelretry.Resends(http.DefaultTransport)),
//	}}
//
// # Metrics
//
// Register adds asynchronous instruments that read retry.Stats when the
// MeterProvider collects, and at no other time: the calls themselves run
// as they would without OpenTelemetry, with no allocation and no hook
// added. Each row of the table (a Policy.Name, and for httpretry each host)
// is a set of data points with the attribute retry.name, and for a row with
// a host, server.address and server.port ("api.example:443" is
// server.address "api.example" and server.port 443; a Policy.Host that is
// no host:port, and the row "other" that holds a name's hosts past 1,024,
// are server.address alone). A name or host that is not valid UTF-8, or
// holds a backslash, is written as retry.Stats's JSON writes it, each
// backslash doubled and each stray byte \xNN, so that the exporters that
// take only UTF-8 (Prometheus fails a whole scrape on one such label)
// take it, and no two rows share one. The counts are cumulative, as the table's
// are, and every one of a row's counters is reported from the row's first
// call, at 0 until it counts, each kind and each cause among them: a
// rate() in Prometheus needs two samples, so a count that first appeared
// at its first value would hide the first burst of give-ups in a process,
// and on each new host. The SDK holds at most 2,000 points an instrument
// by default, and folds the rest into one with otel.metric.overflow=true:
// a row makes 6 points of retry.gave_up (one a cause), 5 of
// retry.http.calls and 4 of retry.calls, so a process with more than 333 rows, over all its names
// and their hosts, needs sdkmetric.WithCardinalityLimit. The names, and the
// anchor each follows so that a dashboard built on it reads them:
//
//	retry.calls                   {call}     kind: successful_without_retry, successful_with_retry,
//	                                         failed_without_retry, failed_with_retry
//	                                         (resilience4j's resilience4j.retry.calls and its kind)
//	retry.attempts                {attempt}  each call of fn; for httpretry each attempt, not the
//	                                         copies of one (gRPC A66's grpc.client.attempt.started)
//	retry.retries                 {retry}    waits started (gRPC A96's grpc.client.call.retries, summed)
//	retry.delay                   s          the time waited, a wait cut short as far as it went
//	                                         (gRPC A96's grpc.client.call.retry_delay, summed)
//	retry.failing_calls.duration  s          the time taken, start to return, by the calls whose
//	                                         first attempt failed: every kind but
//	                                         successful_without_retry, which reads no clock
//	retry.gave_up                 {call}     cause: max_retries, max_elapsed, deadline, budget,
//	                                         context, not_retryable (resilience4j's failed kinds
//	                                         by why; budget is Envoy's upstream_rq_retry_overflow,
//	                                         max_retries its upstream_rq_retry_limit_exceeded)
//	retry.hedges                  {hedge}    httpretry's copies sent beyond an attempt's first
//	                                         (Finagle's backups_sent; gRPC A96's grpc.client.call.hedges)
//	retry.hedges_won              {hedge}    the copies that won (Finagle's backups_won)
//	retry.attempt_timeouts        {request}  requests past Transport.AttemptTimeout
//	                                         (Envoy's upstream_rq_per_try_timeout)
//	retry.budget.tokens           {retry}    a gauge: the retries the row's Budget would allow now
//	                                         (Finagle's retries/budget; Envoy's remaining_retries)
//	retry.http.calls              {call}     httpretry's calls, status_class: 2xx, 3xx, 4xx, 5xx,
//	                                         no_response, by what RoundTrip returned (a row with a
//	                                         host only; a 404 is a successful_without_retry kind,
//	                                         and a 4xx here)
//
// The distributions per call, retries, hedges and the time waited, are
// histograms that [Producer] reports to a Reader beside these.
//
// The counters are observable counters, cumulative, of the table's own
// sums: the mean time a failing call took is retry.failing_calls.duration
// over retry.calls without kind successful_without_retry, and the rate at
// which calls are exhausted, which a production checklist alerts on, is
// retry.gave_up with cause max_retries, max_elapsed, deadline or budget
// over retry.calls (the README writes it in PromQL). retry.retries and
// retry.delay count each wait as it ends, so that a call still waiting
// shows; the histograms of [Producer] count each call once it has
// returned. The gauge has no point for a row
// with no Budget (the table's NaN), nor for a Budget that never refuses
// (httpretry.NoBudget; +Inf in the table), which has no number of retries
// left to tell: a point there, as the largest float64, would wreck every
// sum() and avg() over hosts. The scope is this package's path: another library's
// retry.calls is told apart by otel.scope.name.
//
// # Traces
//
// Resends wraps the RoundTripper that sends each attempt, inside the span
// otelhttp starts for it, and sets http.request.resend_count on the span of
// every send but a request's first, as the stable semantic conventions
// define it: 1 for the first retry or hedge, 2 for the next, counting
// retries and hedges together (httpretry.Resend). The redirects that
// http.Client follows are requests of their own to the Transport, each
// counted from 0.
package otelretry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/unherd/backoff/retry"
)

// scope is the instrumentation scope the meter is named for.
const scope = "github.com/unherd/backoff/otelretry"

// Attribute keys: the Policy's name, resilience4j's kind, why a call gave
// up, and the semantic conventions' server.address and server.port.
const (
	keyName    = attribute.Key("retry.name")
	keyKind    = attribute.Key("kind")
	keyCause   = attribute.Key("cause")
	keyClass   = attribute.Key("status_class")
	keyAddress = semconv.ServerAddressKey
	keyPort    = semconv.ServerPortKey
)

// classes are the values of status_class, in the order of retry.Status's
// fields.
var classes = [...]string{"2xx", "3xx", "4xx", "5xx", "no_response"}

// causes are the values of cause, in the order of retry.GaveUp's fields.
var causes = [...]string{"max_retries", "max_elapsed", "deadline", "budget", "context", "not_retryable"}

// Register adds to mp the instruments that report retry.Stats, every row
// of it, at each collection: the package doc lists them. A nil mp is the
// global MeterProvider, otel.GetMeterProvider(). Unregister the result to
// stop reporting. It returns an error, and registers nothing, when mp
// refuses an instrument or the callback, and [ErrRegistered] while an
// earlier registration on the same mp is still in place: two would report
// every count twice (the SDK adds what each callback observes). Register
// is safe for concurrent use, and so are collections by several readers at
// once.
//
// A collection walks the table once (retry.Stats.Each, which reads each
// row's Budget under its lock) and makes each row's attributes once for
// the life of the registration; the calls counted run as they would
// without it.
func Register(mp metric.MeterProvider) (metric.Registration, error) {
	return RegisterTable(mp, retry.Stats)
}

// RegisterTable is Register for a table of one's own (a Policy.Table, as a
// test's), in place of retry.Stats: the same instruments, reading t. One
// MeterProvider can report several tables, each registered once; rows of
// the same name and host in two of them report as two points of one
// series, which the SDK adds.
func RegisterTable(mp metric.MeterProvider, t *retry.Table) (metric.Registration, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if t == nil {
		t = retry.Stats
	}
	key, keyed := registryKey(mp, t)
	if keyed {
		registered.mu.Lock()
		defer registered.mu.Unlock()
		if registered.by[key] {
			return nil, ErrRegistered
		}
	}
	m := mp.Meter(scope)
	var errs [11]error
	o := &observer{table: t, rows: map[rowKey]*rowAttrs{}}
	o.calls, errs[0] = m.Int64ObservableCounter("retry.calls", metric.WithUnit("{call}"),
		metric.WithDescription("Calls made under a retry Policy's Name, by kind: how they ended."))
	o.attempts, errs[1] = m.Int64ObservableCounter("retry.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts made by the calls: each call of the function retried; for an HTTP transport each attempt, not its hedged copies."))
	o.retries, errs[2] = m.Int64ObservableCounter("retry.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Retries: the waits started before another attempt."))
	o.delay, errs[3] = m.Float64ObservableCounter("retry.delay", metric.WithUnit("s"),
		metric.WithDescription("Time waited between attempts; a wait cut short counts as far as it went."))
	o.took, errs[4] = m.Float64ObservableCounter("retry.failing_calls.duration", metric.WithUnit("s"),
		metric.WithDescription("Time taken, start to return, by the calls whose first attempt failed (every kind but successful_without_retry)."))
	o.gaveUp, errs[5] = m.Int64ObservableCounter("retry.gave_up", metric.WithUnit("{call}"),
		metric.WithDescription("Calls that failed, by the cause that stopped them."))
	o.hedges, errs[6] = m.Int64ObservableCounter("retry.hedges", metric.WithUnit("{hedge}"),
		metric.WithDescription("Hedges: copies of a request sent beyond an attempt's first."))
	o.hedgesWon, errs[7] = m.Int64ObservableCounter("retry.hedges_won", metric.WithUnit("{hedge}"),
		metric.WithDescription("Hedges whose response was the answer."))
	o.timeouts, errs[8] = m.Int64ObservableCounter("retry.attempt_timeouts", metric.WithUnit("{request}"),
		metric.WithDescription("Requests cancelled for taking longer than the attempt timeout to their response headers."))
	o.tokens, errs[9] = m.Float64ObservableGauge("retry.budget.tokens", metric.WithUnit("{retry}"),
		metric.WithDescription("Retries the retry budget would allow now."))
	o.statuses, errs[10] = m.Int64ObservableCounter("retry.http.calls", metric.WithUnit("{call}"),
		metric.WithDescription("HTTP calls by what the transport returned: status_class 2xx, 3xx, 4xx, 5xx, or no_response."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	reg, err := m.RegisterCallback(o.observe, o.calls, o.attempts, o.retries, o.delay, o.took,
		o.gaveUp, o.hedges, o.hedgesWon, o.timeouts, o.tokens, o.statuses)
	if err != nil || !keyed {
		return reg, err
	}
	registered.by[key] = true
	return &registration{Registration: reg, key: key}, nil
}

// ErrRegistered is Register's error for a MeterProvider that already has
// a registration of the same table in place.
var ErrRegistered = errors.New("otelretry: already registered on this MeterProvider")

// registered holds the MeterProviders and tables with a registration in
// place.
var registered struct {
	mu sync.Mutex
	by map[any]bool
}

func init() { registered.by = map[any]bool{} }

// registryKey is mp and t as a map key, when mp's dynamic type allows one
// (a pointer, as the SDK's is; a MeterProvider of a type that cannot be
// compared is not guarded).
func registryKey(mp metric.MeterProvider, t *retry.Table) (any, bool) {
	type key struct {
		mp any
		t  *retry.Table
	}
	return key{mp, t}, reflect.TypeOf(mp).Comparable()
}

// registration frees its MeterProvider for another Register once
// unregistered.
type registration struct {
	metric.Registration
	key  any
	once sync.Once
}

func (r *registration) Unregister() error {
	err := r.Registration.Unregister()
	if err == nil {
		r.once.Do(func() {
			registered.mu.Lock()
			delete(registered.by, r.key)
			registered.mu.Unlock()
		})
	}
	return err
}

// observer is one registration's instruments, and the attributes of each
// row it has seen.
type observer struct {
	calls, attempts, retries, gaveUp metric.Int64ObservableCounter
	hedges, hedgesWon, timeouts      metric.Int64ObservableCounter
	statuses                         metric.Int64ObservableCounter
	delay, took                      metric.Float64ObservableCounter
	tokens                           metric.Float64ObservableGauge
	table                            *retry.Table
	mu                               sync.Mutex // rows, for collections that overlap
	rows                             map[rowKey]*rowAttrs
}

type rowKey struct{ name, host string }

// rowAttrs are a row's attributes as options to observe with: made once,
// so that a collection reuses them.
type rowAttrs struct {
	row    []metric.ObserveOption
	kinds  [4][]metric.ObserveOption
	causes [len(causes)][]metric.ObserveOption
	status [len(classes)][]metric.ObserveOption // a row with a host's
}

// observe reports every row of retry.Stats.
func (o *observer) observe(_ context.Context, obs metric.Observer) error {
	o.table.Each(func(name, host string, c retry.Counts) {
		a := o.attrs(name, host)
		for kind, n := range [...]uint64{c.SucceededAtOnce, c.SucceededAfterRetries, c.FailedWithoutRetry, c.FailedAfterRetries} {
			count(obs, o.calls, n, a.kinds[kind])
		}
		count(obs, o.attempts, c.Attempts, a.row)
		count(obs, o.retries, c.Retries, a.row)
		obs.ObserveFloat64(o.delay, c.Waited.Seconds(), a.row...)
		obs.ObserveFloat64(o.took, c.Took.Seconds(), a.row...)
		g := c.GaveUp
		for cause, n := range [...]uint64{g.MaxRetries, g.MaxElapsed, g.Deadline, g.Budget, g.Context, g.NotRetryable} {
			count(obs, o.gaveUp, n, a.causes[cause])
		}
		count(obs, o.hedges, c.Hedges, a.row)
		count(obs, o.hedgesWon, c.HedgesWon, a.row)
		count(obs, o.timeouts, c.AttemptTimeouts, a.row)
		if t, ok := gauge(c.Tokens); ok {
			obs.ObserveFloat64(o.tokens, t, a.row...)
		}
		if host != "" {
			s := c.Status
			for class, n := range [...]uint64{s.S2xx, s.S3xx, s.S4xx, s.S5xx, s.NoResponse} {
				count(obs, o.statuses, n, a.status[class])
			}
		}
	})
	return nil
}

// count observes n, zero too, saturating at the largest int64.
func count(obs metric.Observer, inst metric.Int64Observable, n uint64, opts []metric.ObserveOption) {
	obs.ObserveInt64(inst, int64(min(n, math.MaxInt64)), opts...)
}

// gauge is a Budget's tokens as a gauge holds them: no point for NaN (a
// row with no Budget) or an infinity (a Budget that never refuses).
func gauge(x float64) (float64, bool) {
	return x, !math.IsNaN(x) && !math.IsInf(x, 0)
}

// attrs returns the attributes of the row of name and host, making them
// on first sight.
func (o *observer) attrs(name, host string) *rowAttrs {
	o.mu.Lock()
	defer o.mu.Unlock()
	if a := o.rows[rowKey{name, host}]; a != nil {
		return a
	}
	base := rowAttrsOf(name, host)
	with := func(kv attribute.KeyValue) []metric.ObserveOption {
		set := attribute.NewSet(append(base[:len(base):len(base)], kv)...)
		return []metric.ObserveOption{metric.WithAttributeSet(set)}
	}
	a := &rowAttrs{row: []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(base...))}}
	for kind := range a.kinds {
		a.kinds[kind] = with(keyKind.String(retry.Outcome(kind).String()))
	}
	for cause := range a.causes {
		a.causes[cause] = with(keyCause.String(causes[cause]))
	}
	if host != "" {
		for class := range a.status {
			a.status[class] = with(keyClass.String(classes[class]))
		}
	}
	o.rows[rowKey{name, host}] = a
	return a
}

// rowAttrsOf are the attributes of the row of name and host: retry.name,
// and hostAttrs, each value a label.
func rowAttrsOf(name, host string) []attribute.KeyValue {
	return append([]attribute.KeyValue{keyName.String(label(name))}, hostAttrs(host)...)
}

// label is s as retry.Stats's JSON writes a name or host: as it is when
// it is valid UTF-8 with no backslash; otherwise each backslash doubled,
// each byte that is not UTF-8 \xNN. The mapping is one to one, so rows
// keep their attributes apart.
func label(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// hostAttrs are a row's host as the semantic conventions name a server:
// server.address and server.port for "host:port" (the brackets of an IPv6
// address dropped), server.address alone for anything else, and nothing
// for the rows of retry.Do and a Loop, which have no host.
func hostAttrs(host string) []attribute.KeyValue {
	if host == "" {
		return nil
	}
	if h, p, err := net.SplitHostPort(host); err == nil {
		if port, err := strconv.ParseUint(p, 10, 16); err == nil && h != "" {
			return []attribute.KeyValue{keyAddress.String(label(h)), keyPort.Int(int(port))}
		}
	}
	return []attribute.KeyValue{keyAddress.String(label(host))}
}
