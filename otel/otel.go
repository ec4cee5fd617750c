// Package slottedotel reports the slotted plugin's work to OpenTelemetry:
// meters read from the plugin's own counters at collection time, and spans
// for coalesced statements and Runner passes that join the caller's trace.
//
//	obs, err := slottedotel.New(slottedotel.Options{}) // the global MeterProvider and TracerProvider
//	db.Use(slotted.New(slotted.Config{Observer: obs}))
//	reg, err := obs.Watch(db) // meters over slotted.StatsOf(db); reg.Unregister() to stop
//
// It lives in a module of its own so that the library's users who do not use
// OpenTelemetry get gorm's modules only.
package slottedotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// ScopeName is the instrumentation scope of the meters and the tracer.
const ScopeName = "github.com/slotted-go/slotted"

// Options configures an Observer. The zero value uses OpenTelemetry's global providers.
type Options struct {
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
	// Attributes are added to every measurement, e.g. the database's name when several DBs are watched.
	Attributes []attribute.KeyValue
}

// Observer is a slotted.Observer that records into OpenTelemetry. One
// Observer may serve several DBs (pass it in each Config). It is safe for
// concurrent use.
type Observer struct {
	meter  metric.Meter
	tracer trace.Tracer
	attrs  attribute.Set

	conflicts   metric.Int64Counter
	batchRows   metric.Int64Histogram
	batchWrites metric.Int64Histogram
	batchTime   metric.Float64Histogram
	batchErrors metric.Int64Counter
	passTime    metric.Float64Histogram
	compacted   metric.Int64Counter
	pruned      metric.Int64Counter
	passErrors  metric.Int64Counter
}

// New creates the Observer's synchronous instruments and its tracer.
func New(opts Options) (*Observer, error) {
	mp, tp := opts.MeterProvider, opts.TracerProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	o := &Observer{meter: mp.Meter(ScopeName), tracer: tp.Tracer(ScopeName), attrs: attribute.NewSet(opts.Attributes...)}
	m := o.meter
	var errs [9]error
	o.conflicts, errs[0] = m.Int64Counter("slotted.conflicts",
		metric.WithDescription("lock conflicts met by the plugin's statements, by kind and whether they were retried (retried=false: the caller got the error)"))
	o.batchRows, errs[1] = m.Int64Histogram("slotted.batch.rows",
		metric.WithDescription("counter rows per coalesced statement"), metric.WithExplicitBucketBoundaries(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024))
	o.batchWrites, errs[2] = m.Int64Histogram("slotted.batch.writes",
		metric.WithDescription("Add calls carried per coalesced statement"), metric.WithExplicitBucketBoundaries(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024))
	o.batchTime, errs[3] = m.Float64Histogram("slotted.batch.duration", metric.WithUnit("s"),
		metric.WithDescription("time of a coalesced statement, its retries included"))
	o.batchErrors, errs[4] = m.Int64Counter("slotted.batch.errors", metric.WithDescription("coalesced statements that failed"))
	o.passTime, errs[5] = m.Float64Histogram("slotted.runner.pass.duration", metric.WithUnit("s"), metric.WithDescription("time of a Runner pass"))
	o.compacted, errs[6] = m.Int64Counter("slotted.runner.rows_removed", metric.WithDescription("slot rows removed by Runner compaction"))
	o.pruned, errs[7] = m.Int64Counter("slotted.runner.once_keys_pruned", metric.WithDescription("expired AddOnce keys deleted by the Runner"))
	o.passErrors, errs[8] = m.Int64Counter("slotted.runner.pass.errors", metric.WithDescription("Runner passes that returned an error"))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return o, nil
}

// Observe implements slotted.Observer.
func (o *Observer) Observe(ctx context.Context, e slotted.Event) {
	set := metric.WithAttributeSet(o.attrs)
	switch e.Kind {
	case slotted.EventConflict:
		o.conflicts.Add(ctx, 1, set, metric.WithAttributes(attribute.String("kind", e.Conflict.String()), attribute.Bool("retried", e.Retried)))
		// On the caller's span (the request's, or gorm's opentelemetry plugin's when the call runs inside its
		// statement): a retried conflict is a moment of the call, not a failure.
		trace.SpanFromContext(ctx).AddEvent("slotted.conflict", trace.WithTimestamp(e.End), trace.WithAttributes(
			attribute.String("slotted.conflict.kind", e.Conflict.String()), attribute.Int("slotted.attempt", e.Attempt),
			attribute.Bool("slotted.retried", e.Retried)))
	case slotted.EventBatch:
		o.batchRows.Record(ctx, int64(e.Rows), set)
		o.batchWrites.Record(ctx, int64(e.Writes), set)
		o.batchTime.Record(ctx, e.End.Sub(e.Start).Seconds(), set)
		if e.Err != nil {
			o.batchErrors.Add(ctx, 1, set)
		}
		o.span(ctx, "slotted.batch", e, attribute.Int("slotted.batch.rows", e.Rows), attribute.Int("slotted.batch.writes", e.Writes))
	case slotted.EventPass:
		o.passTime.Record(ctx, e.End.Sub(e.Start).Seconds(), set)
		attrs := []attribute.KeyValue{}
		if p := e.Pass; p != nil {
			o.compacted.Add(ctx, p.Compact.RowsRemoved, set)
			o.pruned.Add(ctx, p.Pruned, set)
			attrs = append(attrs, attribute.Int64("slotted.compact.rows_removed", p.Compact.RowsRemoved),
				attribute.Int("slotted.compact.counters", p.Compact.Counters), attribute.Int("slotted.compact.skipped", len(p.Compact.Skipped)),
				attribute.Int64("slotted.once_keys_pruned", p.Pruned))
		}
		if e.Err != nil {
			o.passErrors.Add(ctx, 1, set)
		}
		o.span(ctx, "slotted.runner.pass", e, attrs...)
	}
}

// span records a finished piece of work as a span under ctx's span.
func (o *Observer) span(ctx context.Context, name string, e slotted.Event, attrs ...attribute.KeyValue) {
	_, span := o.tracer.Start(ctx, name, trace.WithTimestamp(e.Start), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrs...), trace.WithAttributes(o.attrs.ToSlice()...))
	if e.Err != nil {
		span.RecordError(e.Err)
		span.SetStatus(codes.Error, e.Err.Error())
	}
	span.End(trace.WithTimestamp(e.End))
}

// Watch registers asynchronous instruments that read slotted.StatsOf(db) at
// each collection: retries, conflicts by kind (retried or not), coalesced
// statements, the writes they carried, statements by rows, and writes waiting.
func (o *Observer) Watch(db *gorm.DB) (metric.Registration, error) {
	if _, err := slotted.StatsOf(db); err != nil {
		return nil, err
	}
	m := o.meter
	var (
		errs                                   [7]error
		retries, seen, batches, writes, shapes metric.Int64ObservableCounter
		once                                   metric.Int64ObservableCounter
		waiting                                metric.Int64ObservableGauge
	)
	retries, errs[0] = m.Int64ObservableCounter("slotted.retries", metric.WithDescription("statements or transactions run again after a lock conflict"))
	seen, errs[1] = m.Int64ObservableCounter("slotted.conflicts.seen", metric.WithDescription("lock conflicts seen, by kind, retried or not"))
	batches, errs[2] = m.Int64ObservableCounter("slotted.batches", metric.WithDescription("statements the coalescer ran"))
	writes, errs[3] = m.Int64ObservableCounter("slotted.writes", metric.WithDescription("writes outside a transaction, each carried by a coalesced statement"))
	waiting, errs[4] = m.Int64ObservableGauge("slotted.writes.waiting", metric.WithDescription("writes queued for the next coalesced statement"))
	shapes, errs[5] = m.Int64ObservableCounter("slotted.batch.statements", metric.WithDescription("coalesced statements by counter rows written (rows: 1..8, 16, 32, ...)"))
	once, errs[6] = m.Int64ObservableCounter("slotted.once", metric.WithDescription("AddOnce calls by outcome: applied (a new key) or duplicate (a key already recorded)"))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	set := metric.WithAttributeSet(o.attrs)
	return m.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		s, err := slotted.StatsOf(db)
		if err != nil {
			return err
		}
		obs.ObserveInt64(retries, int64(s.Retries), set)
		for kind, n := range s.Conflicts {
			obs.ObserveInt64(seen, int64(n), set, metric.WithAttributes(attribute.String("kind", kind.String())))
		}
		obs.ObserveInt64(batches, int64(s.Batches), set)
		obs.ObserveInt64(writes, int64(s.BatchedWrites), set)
		obs.ObserveInt64(waiting, s.Waiting, set)
		for rows, n := range s.BatchRows {
			obs.ObserveInt64(shapes, int64(n), set, metric.WithAttributes(attribute.Int("rows", rows)))
		}
		obs.ObserveInt64(once, int64(s.OnceApplied), set, metric.WithAttributes(attribute.String("outcome", "applied")))
		obs.ObserveInt64(once, int64(s.OnceDuplicates), set, metric.WithAttributes(attribute.String("outcome", "duplicate")))
		return nil
	}, retries, seen, batches, writes, waiting, shapes, once)
}

// WatchBuffer registers asynchronous instruments over buf.Stats(), labelled
// buffer=name: pending counters and writes, flushes, flush errors, writes
// and rows written, writes refused for overflow.
func (o *Observer) WatchBuffer(buf *slotted.Buffer, name string) (metric.Registration, error) {
	m := o.meter
	var (
		errs                                      [6]error
		pending, pendingWrites                    metric.Int64ObservableGauge
		flushes, flushErrors, written, overflowed metric.Int64ObservableCounter
	)
	pending, errs[0] = m.Int64ObservableGauge("slotted.buffer.pending", metric.WithDescription("counters held in memory, not yet written"))
	pendingWrites, errs[1] = m.Int64ObservableGauge("slotted.buffer.pending_writes", metric.WithDescription("Add calls held in memory, not yet written"))
	flushes, errs[2] = m.Int64ObservableCounter("slotted.buffer.flushes", metric.WithDescription("flushes that wrote their deltas"))
	flushErrors, errs[3] = m.Int64ObservableCounter("slotted.buffer.flush_errors", metric.WithDescription("flushes that failed (their deltas went back)"))
	written, errs[4] = m.Int64ObservableCounter("slotted.buffer.written", metric.WithDescription("Add calls written"))
	overflowed, errs[5] = m.Int64ObservableCounter("slotted.buffer.overflowed", metric.WithDescription("Add calls refused with ErrOverflow"))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	set := metric.WithAttributeSet(attribute.NewSet(append(o.attrs.ToSlice(), attribute.String("buffer", name))...))
	return m.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		s := buf.Stats()
		obs.ObserveInt64(pending, int64(s.Pending), set)
		obs.ObserveInt64(pendingWrites, s.PendingWrites, set)
		obs.ObserveInt64(flushes, int64(s.Flushes), set)
		obs.ObserveInt64(flushErrors, int64(s.FlushErrors), set)
		obs.ObserveInt64(written, int64(s.Written), set)
		obs.ObserveInt64(overflowed, int64(s.Overflowed), set)
		return nil
	}, pending, pendingWrites, flushes, flushErrors, written, overflowed)
}

var _ slotted.Observer = (*Observer)(nil)
