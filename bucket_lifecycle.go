package slotted

import (
	"context"
	"database/sql"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/bucketing"

	"github.com/slotted-go/slotted/internal/meta"
)

// BucketOptions configures MaintainBuckets, and Runner.Buckets.
type BucketOptions struct {
	// Models lists the models whose bucketed counters a Runner maintains
	// (Runner.Buckets only: MaintainBuckets takes its model as an argument).
	Models []any
	// Closed is how many of each counter's most recent closed buckets are
	// compacted per run, newest first. A bucket keeps receiving late writes
	// for a moment after it closes (a request that read the clock just before
	// midnight); 2 covers those, and compacting a bucket again only costs a
	// scan of its rows. Default: 2.
	Closed int
	// BatchSize is how many counters one compaction transaction folds, and
	// how many slot rows one retention DELETE removes. Default: 500.
	BatchSize int
}

// MaintainBuckets compacts and expires the buckets of model's bucketed counters:
//
//   - the Closed (default 2) most recent closed buckets of each counter are
//     compacted to one row per record, as CompactAll does (exact under
//     concurrent writes; a late write into a compacted bucket adds a slot row
//     and stays counted);
//   - with the keep:N tag option, buckets older than the N most recent (the
//     current one included) are deleted, BatchSize slot rows per DELETE.
//     The all-time total is a row set of its own and is not affected.
//
// Which buckets are closed or expired is decided by Config.Now. A Runner with
// Buckets set calls it every pass; it is safe to run from several processes.
//
//	slotted.MaintainBuckets(db, &Post{})
//	// compaction: CompactAll of record_type 'posts.views@2026-11-22', then '...@2026-11-21'
//	// retention (keep:90), per expired bucket:
//	// SELECT MIN(record_type) FROM slotted_counters WHERE record_type > 'posts.views@' AND record_type < 'posts.views@2026-08-26'
//	// SELECT record_id, slot FROM slotted_counters WHERE record_type = 'posts.views@2026-08-25' ORDER BY record_id, slot LIMIT 500
//	// DELETE FROM slotted_counters WHERE record_type = 'posts.views@2026-08-25' AND record_id = '1' AND slot IN (0,3) OR ...
func MaintainBuckets(db *gorm.DB, model any, opts ...BucketOptions) (BucketProgress, error) {
	var prog BucketProgress
	o, err := optionsOf(opts)
	if err != nil {
		return prog, err
	}
	p, err := liveOf(db)
	if err != nil {
		return prog, err
	}
	if o.Closed, err = batchSize(o.Closed, 2, "BucketOptions.Closed"); err != nil {
		return prog, err
	}
	if o.BatchSize, err = batchSize(o.BatchSize, 500, "BucketOptions.BatchSize"); err != nil {
		return prog, err
	}
	m, err := p.models.ModelArg(db, model)
	if err != nil {
		return prog, err
	}
	counters, err := m.Bucketed(nil)
	if err != nil {
		return prog, err
	}
	now := p.cfg.Now()
	ctx := session.Context(db)
	for _, c := range counters {
		cur := c.Bucket.Of(now)
		closed := cur
		for range o.Closed {
			if err := ctx.Err(); err != nil {
				return prog, err
			}
			closed = c.Bucket.Back(closed, 1)
			cp, err := CompactAll(db, CompactOptions{RecordType: bucketing.Type(c.RecordType, closed.Label), BatchSize: o.BatchSize})
			prog.Compacted += cp.Counters
			prog.RowsRemoved += cp.RowsRemoved
			if err != nil {
				return prog, err
			}
		}
		if c.Bucket.Keep > 0 {
			oldest := c.Bucket.Back(cur, c.Bucket.Keep-1)
			if err := p.expire(ctx, db, c, oldest.Label, o.BatchSize, &prog); err != nil {
				return prog, err
			}
		}
	}
	return prog, nil
}

// expire deletes counter c's buckets older than the bucket labelled keep.
// It walks the bucket record_types below keep one index seek at a time
// (MIN(record_type) after the last one), and checks each in Go: it must be a
// label c writes and older than keep. So a record_type that sorts into the
// range only under the database's collation (another counter's "posts.views2"
// under a natural-language collation) is never touched.
func (p *Plugin) expire(ctx context.Context, db *gorm.DB, c *meta.Counter, keep string, batch int, prog *BucketProgress) error {
	prefix := c.RecordType + "@"
	rt := clause.Column{Name: "record_type"}
	after, below := prefix, bucketing.Type(c.RecordType, keep)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var next sql.NullString
		err := session.Primary(db, p.cfg.Table).Table(p.cfg.Table).Select("MIN(?)", rt).
			Where(clause.Gt{Column: rt, Value: after}).Where(clause.Lt{Column: rt, Value: below}).
			Row().Scan(&next)
		if err != nil {
			return err
		}
		if !next.Valid {
			return nil
		}
		after = next.String
		label, ok := strings.CutPrefix(next.String, prefix)
		if !ok || !c.Bucket.Valid(label) || label >= keep {
			continue
		}
		rows, err := p.maint.DeleteBucket(ctx, db, next.String, batch)
		prog.RowsExpired += rows
		if err != nil {
			return err
		}
		prog.Expired++
	}
}
