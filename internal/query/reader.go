// Package query reads counters: one counter's sum, the totals of many
// records in one GROUP BY per 1000 ids (Load and auto-fill), the sums of a
// window's buckets, AddOnce keys present for records, and the grouped sums
// that rankings join to a model's table (OrderBy, Top, List) or weigh
// (Trending). Reads go through the caller's routing (session.Routed): a
// replica is fine for them, and none of them decides a write.
package query

import (
	"time"

	"github.com/slotted-go/slotted/internal/dialect"
	"github.com/slotted-go/slotted/internal/session"
	"github.com/slotted-go/slotted/internal/write"
)

// Config is the part of slotted.Config reads use.
type Config struct {
	Table, OnceTable string
	// CausalReads: on Galera, sums wait for the node to catch up first.
	CausalReads bool
	// Now is slotted.Config.Now, the clock once keys expire by (nil: time.Now).
	Now func() time.Time
}

// Reader runs the plugin's reads; one per Plugin.
type Reader struct {
	cfg      Config
	dialect  dialect.Dialect
	sessions *session.Sessions
	sql      write.Statements // the rendered sum
}

// New returns the reader of one Plugin.
func New(cfg Config, d dialect.Dialect, s *session.Sessions, st write.Statements) *Reader {
	return &Reader{cfg: cfg, dialect: d, sessions: s, sql: st}
}

// now is the clock once keys expire by.
func (p *Reader) now() time.Time {
	if p.cfg.Now == nil {
		return time.Now()
	}
	return p.cfg.Now()
}

func (p *Reader) causalReads() bool { return p.cfg.CausalReads }
