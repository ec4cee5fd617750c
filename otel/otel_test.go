package slottedotel_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "github.com/ncruces/go-sqlite3/embed" // SQLite itself, compiled to WebAssembly
	"github.com/ncruces/go-sqlite3/gormlite"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
	slottedotel "github.com/slotted-go/slotted/otel"
)

type post struct {
	ID    uint
	Likes int64 `gorm:"-" slotted:"likes;slots:4"`
}

// points returns the values (histograms: the counts) of the data points of the named Sum or Gauge metric, by their attributes.
func points(t *testing.T, rm metricdata.ResourceMetrics, name string) map[attribute.Distinct]int64 {
	t.Helper()
	out := map[attribute.Distinct]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[p.Attributes.Equivalent()] += p.Value
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[p.Attributes.Equivalent()] += p.Value
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					out[p.Attributes.Equivalent()] += int64(p.Count)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[p.Attributes.Equivalent()] += int64(p.Count)
				}
			}
		}
	}
	return out
}

func key(kv ...attribute.KeyValue) attribute.Distinct {
	s := attribute.NewSet(kv...)
	return s.Equivalent()
}

func total(m map[attribute.Distinct]int64) (n int64) {
	for _, v := range m {
		n += v
	}
	return n
}

// TestMetricsAndSpans runs coalesced writes from 32 goroutines inside a
// request span, lock conflicts that are retried, a Buffer and a Runner pass on
// SQLite, and reads the results from an in-memory metric reader and span
// recorder: exact write counts, conflicts by kind, batch spans under the
// request's span, conflict events on it, the pass's span.
func TestMetricsAndSpans(t *testing.T) {
	dir := t.TempDir()
	dsn := "file:" + filepath.Join(dir, "otel.db") + "?_pragma=busy_timeout(0)&_pragma=journal_mode(WAL)"
	db, err := gorm.Open(gormlite.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	defer sqlDB.Close()

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	obs, err := slottedotel.New(slottedotel.Options{MeterProvider: mp, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Use(slotted.New(slotted.Config{Observer: obs, MaxRetries: 100, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 20 * time.Millisecond})); err != nil {
		t.Fatal(err)
	}
	if err := db.AutoMigrate(&post{}); err != nil {
		t.Fatal(err)
	}
	reg, err := obs.Watch(db)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	p := post{}
	if err := db.Create(&p).Error; err != nil {
		t.Fatal(err)
	}

	// Another connection holds SQLite's write lock for a while: the writers meet SQLITE_BUSY and retry.
	other, err := gorm.Open(gormlite.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	otherDB, _ := other.DB()
	defer otherDB.Close()
	otherDB.SetMaxOpenConns(1)
	if err := other.Exec("BEGIN IMMEDIATE").Error; err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(100 * time.Millisecond); other.Exec("COMMIT") }()

	ctx, request := tp.Tracer("test").Start(context.Background(), "request")
	const writers, each = 32, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if err := slotted.Increment(db.WithContext(ctx), &post{ID: p.ID}, "likes"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	request.End()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	buf, err := slotted.NewBuffer(db, slotted.BufferOptions{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	breg, err := obs.WatchBuffer(buf, "views")
	if err != nil {
		t.Fatal(err)
	}
	defer breg.Unregister()
	for range 10 {
		if err := buf.Add(&post{ID: p.ID}, "likes", 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := buf.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	for _, key := range []string{"a", "b", "a"} {
		if _, err := slotted.AddOnce(db, &post{ID: p.ID}, "likes", 1, key); err != nil {
			t.Fatal(err)
		}
	}

	runCtx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	passes := 0
	if err := (slotted.Runner{Compact: &slotted.CompactOptions{}, Interval: time.Hour, OnPass: func(slotted.Pass) { passes++ }}).Run(runCtx, db); err != nil {
		t.Fatal(err)
	}
	if passes != 1 {
		t.Fatalf("%d runner passes, want 1", passes)
	}

	n, err := slotted.Count(db, &post{ID: p.ID}, "likes")
	if err != nil {
		t.Fatal(err)
	}
	if n != writers*each+10+2 {
		t.Fatalf("count %d, want %d", n, writers*each+10+2)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	// The Increments and the three AddOnce calls: AddOnce writes are coalesced
	// writes too (once_batch.go); the Buffer's flushes are not.
	if got := total(points(t, rm, "slotted.writes")); got != writers*each+3 {
		t.Errorf("slotted.writes = %d, want %d", got, writers*each+3)
	}
	batches := total(points(t, rm, "slotted.batches"))
	if batches == 0 || batches >= writers*each {
		t.Errorf("slotted.batches = %d: want coalescing (0 < batches < %d)", batches, writers*each)
	}
	if got := total(points(t, rm, "slotted.batch.statements")); got != batches {
		t.Errorf("slotted.batch.statements = %d, want %d (one per batch)", got, batches)
	}
	retried := points(t, rm, "slotted.conflicts")[key(attribute.String("kind", "busy"), attribute.Bool("retried", true))]
	if retried == 0 {
		t.Errorf("no retried busy conflict recorded: %v", points(t, rm, "slotted.conflicts"))
	}
	if got := total(points(t, rm, "slotted.retries")); got != retried {
		t.Errorf("slotted.retries = %d, want %d (the retried conflicts)", got, retried)
	}
	once := points(t, rm, "slotted.once")
	if once[key(attribute.String("outcome", "applied"))] != 2 || once[key(attribute.String("outcome", "duplicate"))] != 1 {
		t.Errorf("slotted.once = %v, want applied 2, duplicate 1", once)
	}
	bufSet := key(attribute.String("buffer", "views"))
	if got := points(t, rm, "slotted.buffer.written")[bufSet]; got != 10 {
		t.Errorf("slotted.buffer.written = %d, want 10", got)
	}
	if got := points(t, rm, "slotted.buffer.pending")[bufSet]; got != 0 {
		t.Errorf("slotted.buffer.pending = %d, want 0", got)
	}
	if got := total(points(t, rm, "slotted.runner.pass.duration")); got != 1 {
		t.Errorf("slotted.runner.pass.duration has %d passes, want 1", got)
	}
	if got := total(points(t, rm, "slotted.runner.rows_removed")); got == 0 {
		t.Errorf("the pass compacted no rows")
	}
	batchSpans := total(points(t, rm, "slotted.batch.rows"))

	var batch, pass, underRequest int
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "slotted.batch":
			batch++
			if s.Parent().SpanID() == request.SpanContext().SpanID() {
				underRequest++
			}
		case "slotted.runner.pass":
			pass++
		}
	}
	if batch == 0 || int64(batch) != batchSpans || underRequest != batch {
		t.Errorf("batch spans: %d (%d under the request's span), batch.rows histogram %d", batch, underRequest, batchSpans)
	}
	if pass != 1 {
		t.Errorf("%d pass spans, want 1", pass)
	}
	var conflictEvents int
	for _, s := range rec.Ended() {
		if s.Name() == "request" {
			for _, e := range s.Events() {
				if e.Name == "slotted.conflict" {
					conflictEvents++
				}
			}
		}
	}
	if conflictEvents == 0 {
		t.Errorf("no slotted.conflict event on the request span")
	}
	t.Logf("%d batches (%d spans) for %d writes, %d retried conflicts, %d conflict events", batches, batch, writers*each, retried, conflictEvents)
}
