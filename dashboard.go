package slotted

import (
	"fmt"
	"reflect"
	"slices"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/bucketing"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/query"

	"github.com/slotted-go/slotted/internal/tables"
)

// Dashboards: the series of many records in one statement, and windows in
// fields of their own (extras.go), so a page of 20 posts with a 7-day
// sparkline each is one query, not 20.

// SeriesMany returns the series of counter over window w for every record
// in models (a slice or array of structs or pointers, or a pointer to one),
// in the order the records appear there: out[i] is models[i]'s, oldest bucket
// first, 0 where nothing was written. One statement reads 1000 records' worth
// of buckets × records cells (10,000 cells at most), not one per record.
// A nil pointer among models is ErrUnsupportedModel.
//
//	series, err := slotted.SeriesMany(db, &posts, "views", slotted.LastDays(7))
//	// SELECT `record_type`,`record_id`,SUM(`count`) FROM `slotted_counters`
//	//   WHERE `record_type` IN ('posts.views@2026-11-19',...) AND `record_id` IN ('1',...,'20')
//	//   GROUP BY `record_type`,`record_id`
//	// series[3][6].Count: posts[3]'s views today
func SeriesMany(db *gorm.DB, models any, counter string, w Window) ([][]Bucket, error) {
	p, err := pluginOf(db)
	if err != nil {
		return nil, err
	}
	m, elem, err := p.models.ModelsArg(db, models)
	if err != nil {
		return nil, err
	}
	cs, err := m.Bucketed([]string{counter})
	if err != nil {
		return nil, err
	}
	c := cs[0]
	buckets, err := w.Buckets(c.Bucket, p.cfg.Now())
	if err != nil {
		return nil, err
	}
	if err := noNilElems(elem); err != nil {
		return nil, err
	}
	rs, err := m.Records(elem, true)
	if err != nil {
		return nil, err
	}
	series, err := p.seriesOf(db, c, buckets, rs.IDs)
	if err != nil {
		return nil, err
	}
	var out [][]Bucket
	meta.EachStruct(elem, func(s reflect.Value) {
		id, _ := m.Key.ID(s) // records checked every key
		out = append(out, slices.Clone(series[id]))
	})
	return out, nil
}

// LoadWindows fills the window: and series: fields (extras.go) of every
// record in models, the named ones (Go field or counter names) or all, as
// auto-fill does after a query: one statement per field and 1000 records. A
// name that matches no window: or series: field is ErrUnknownCounter.
//
//	type Post struct {
//		ID        uint
//		Views     int64            `gorm:"-" slotted:"views;buckets:day"`
//		ViewsWeek int64            `gorm:"-" slotted:"views;window:7d"`
//		Spark     []slotted.Bucket `gorm:"-" slotted:"views;series:7d"`
//	}
//	slotted.LoadWindows(db, &posts) // ViewsWeek and Spark of 20 posts: 2 statements; Views keeps the all-time total
func LoadWindows(db *gorm.DB, models any, fields ...string) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	m, elem, err := p.models.ModelsArg(db, models)
	if err != nil {
		return err
	}
	if err := m.ExtrasNamed(fields, meta.ExtraWindow, meta.ExtraSeries); err != nil {
		return err
	}
	return p.fillExtras(db, m, elem, "", true, fields...)
}

// noNilElems refuses a nil pointer among the records of a call whose answer
// is by position (out[i] is models[i]'s): skipping it, as Load does, would
// shift every answer after it onto the wrong record.
func noNilElems(v reflect.Value) error {
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
		return nil
	}
	for i := range v.Len() {
		if e := v.Index(i); (e.Kind() == reflect.Pointer || e.Kind() == reflect.Interface) && e.IsNil() {
			return fmt.Errorf("%w: models[%d] is nil", ErrUnsupportedModel, i)
		}
	}
	return nil
}

// seriesOf reads counter c's buckets for the records ids: one GROUP BY
// record_type, record_id per chunk of query.WindowCells cells.
func (p *Plugin) seriesOf(db *gorm.DB, c *meta.Counter, buckets []bucketing.Bucket, ids []string) (map[string][]Bucket, error) {
	types := c.BucketTypes(buckets)
	cells := make(map[[2]string]int64, len(types))
	for tchunk := range slices.Chunk(types, query.TypeChunk) {
		for ichunk := range slices.Chunk(ids, max(1, min(tables.LoadChunk, query.WindowCells/len(tchunk)))) {
			if err := p.reads.Sums(db, query.Anys(tchunk), ichunk, cells); err != nil {
				return nil, err
			}
		}
	}
	out := make(map[string][]Bucket, len(ids))
	for _, id := range ids {
		s := make([]Bucket, len(buckets))
		for i, b := range buckets {
			s[i] = Bucket{Start: b.Start, End: b.End, Count: cells[[2]string{types[i], id}]}
		}
		out[id] = s
	}
	return out, nil
}
