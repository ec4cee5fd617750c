// Package slottedprom exposes the slotted plugin's counters to Prometheus:
// a prometheus.Collector that reads slotted.StatsOf and Buffer.Stats at each
// scrape, usable on its own or as a MetricsCollector of gorm's Prometheus
// plugin (gorm.io/plugin/prometheus).
//
//	c := slottedprom.New(db, slottedprom.Options{})
//	prometheus.MustRegister(c)
//	// or, with gorm's plugin, which registers it on prometheus's default registry with its labels (db_name):
//	db.Use(gormprom.New(gormprom.Config{DBName: "app", MetricsCollector: []gormprom.MetricsCollector{c}}))
//
// A module of its own, so that the library's users get gorm's modules only.
package slottedprom

import (
	"maps"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"
	gormprom "gorm.io/plugin/prometheus"

	"github.com/slotted-go/slotted"
)

// Options configures a Collector.
type Options struct {
	// Namespace prefixes every metric name. Default: "slotted".
	Namespace string
	// Labels are constant labels of every metric (gorm's plugin adds its own, such as db_name).
	Labels prometheus.Labels
	// Registerer is where Metrics (gorm's plugin) registers the Collector. Default: prometheus.DefaultRegisterer.
	Registerer prometheus.Registerer
}

// Collector is a prometheus.Collector over the plugin's Stats and the
// Buffers added with WatchBuffer. Safe for concurrent use.
type Collector struct {
	db   *gorm.DB
	opts Options

	mu      sync.Mutex
	descs   descs
	buffers map[string]*slotted.Buffer
}

type descs struct {
	retries, conflicts, batches, writes, waiting, statements, once    *prometheus.Desc
	pending, pendingWrites, flushes, flushErrors, written, overflowed *prometheus.Desc
}

// New returns a Collector for the plugin registered on db.
func New(db *gorm.DB, opts Options) *Collector {
	if opts.Namespace == "" {
		opts.Namespace = "slotted"
	}
	if opts.Registerer == nil {
		opts.Registerer = prometheus.DefaultRegisterer
	}
	c := &Collector{db: db, opts: opts, buffers: map[string]*slotted.Buffer{}}
	c.descs = c.build(opts.Labels)
	return c
}

func (c *Collector) build(labels prometheus.Labels) descs {
	d := func(name, help string, vars ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(c.opts.Namespace, "", name), help, vars, labels)
	}
	return descs{
		retries:       d("retries_total", "Statements or transactions run again after a lock conflict."),
		conflicts:     d("conflicts_total", "Lock conflicts seen by the plugin's statements, retried or not.", "kind"),
		batches:       d("batches_total", "Statements the coalescer ran."),
		writes:        d("writes_total", "Writes outside a transaction, each carried by a coalesced statement."),
		waiting:       d("writes_waiting", "Writes queued for the next coalesced statement."),
		statements:    d("batch_statements_total", "Coalesced statements by counter rows written.", "rows"),
		once:          d("once_total", "AddOnce calls by outcome: applied (a new key) or duplicate.", "outcome"),
		pending:       d("buffer_pending", "Counters held in a write-behind buffer, not yet written.", "buffer"),
		pendingWrites: d("buffer_pending_writes", "Add calls held in a write-behind buffer, not yet written.", "buffer"),
		flushes:       d("buffer_flushes_total", "Buffer flushes that wrote their deltas.", "buffer"),
		flushErrors:   d("buffer_flush_errors_total", "Buffer flushes that failed; their deltas went back.", "buffer"),
		written:       d("buffer_written_total", "Add calls a buffer wrote.", "buffer"),
		overflowed:    d("buffer_overflowed_total", "Add calls a buffer refused with ErrOverflow.", "buffer"),
	}
}

// WatchBuffer adds buf's stats, labelled buffer=name, to the Collector.
func (c *Collector) WatchBuffer(buf *slotted.Buffer, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buffers[name] = buf
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.mu.Lock()
	d := c.descs
	c.mu.Unlock()
	for _, x := range []*prometheus.Desc{d.retries, d.conflicts, d.batches, d.writes, d.waiting, d.statements, d.once,
		d.pending, d.pendingWrites, d.flushes, d.flushErrors, d.written, d.overflowed} {
		ch <- x
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	d := c.descs
	buffers := maps.Clone(c.buffers)
	c.mu.Unlock()
	if s, err := slotted.StatsOf(c.db); err == nil {
		counter := func(desc *prometheus.Desc, v uint64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), labels...)
		}
		counter(d.retries, s.Retries)
		for kind := slotted.Deadlock; kind <= slotted.Busy; kind++ {
			counter(d.conflicts, s.Conflicts[kind], kind.String())
		}
		counter(d.batches, s.Batches)
		counter(d.writes, s.BatchedWrites)
		ch <- prometheus.MustNewConstMetric(d.waiting, prometheus.GaugeValue, float64(s.Waiting))
		for rows, n := range s.BatchRows {
			counter(d.statements, n, strconv.Itoa(rows))
		}
		counter(d.once, s.OnceApplied, "applied")
		counter(d.once, s.OnceDuplicates, "duplicate")
	} else {
		ch <- prometheus.NewInvalidMetric(d.retries, err)
	}
	for name, buf := range buffers {
		s := buf.Stats()
		ch <- prometheus.MustNewConstMetric(d.pending, prometheus.GaugeValue, float64(s.Pending), name)
		ch <- prometheus.MustNewConstMetric(d.pendingWrites, prometheus.GaugeValue, float64(s.PendingWrites), name)
		ch <- prometheus.MustNewConstMetric(d.flushes, prometheus.CounterValue, float64(s.Flushes), name)
		ch <- prometheus.MustNewConstMetric(d.flushErrors, prometheus.CounterValue, float64(s.FlushErrors), name)
		ch <- prometheus.MustNewConstMetric(d.written, prometheus.CounterValue, float64(s.Written), name)
		ch <- prometheus.MustNewConstMetric(d.overflowed, prometheus.CounterValue, float64(s.Overflowed), name)
	}
}

// Metrics implements gorm.io/plugin/prometheus's MetricsCollector: it takes
// the plugin's labels (db_name, Config.Labels) as constant labels and
// registers the Collector on Options.Registerer, as gorm's own collectors
// register themselves; gorm's plugin pushes what it returns when PushAddr is set.
func (c *Collector) Metrics(p *gormprom.Prometheus) []prometheus.Collector {
	c.mu.Lock()
	labels := prometheus.Labels{}
	maps.Copy(labels, c.opts.Labels)
	if p != nil {
		maps.Copy(labels, p.Labels)
	}
	c.descs = c.build(labels)
	c.mu.Unlock()
	_ = c.opts.Registerer.Register(c) // registered already: gorm's plugin initializes again per connection it opens
	return []prometheus.Collector{c}
}

var (
	_ prometheus.Collector      = (*Collector)(nil)
	_ gormprom.MetricsCollector = (*Collector)(nil)
)
