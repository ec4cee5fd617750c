package slotted

import (
	"fmt"
	"math"
	"time"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/bucketing"

	"github.com/slotted-go/slotted/internal/meta"
)

// MaxTrendBuckets bounds TrendOptions.Buckets: each bucket is one branch of
// the score's CASE.
const MaxTrendBuckets = 1000

// trendScale is the weight of a write in the current bucket. Weights are
// integers so that scores sum, compare and page exactly and alike on every
// database (no floating point in SQL, no POW/EXP dialect functions).
const trendScale = 1_000_000

// TrendOptions is one page of Trending.
type TrendOptions struct {
	// Buckets is the window: the current bucket and the Buckets-1 before it, 1..MaxTrendBuckets.
	// A window reaching past a keep:N counter's retention is ErrPastRetention,
	// as for CountIn: its pruned buckets would drop out of the scores silently.
	Buckets int
	// HalfLife, in buckets (> 0): a write HalfLife buckets older than the
	// current bucket weighs half as much as one in it, 2×HalfLife a quarter.
	// Ages count buckets, not hours, so a 23- or 25-hour day (daylight saving
	// time) weighs as any day.
	HalfLife float64
	// At places the current bucket: the bucket holding At. Zero: Config.Now().
	// Pages after the first (After) keep their first page's current bucket, so
	// a listing paged across midnight does not reshuffle.
	At time.Time
	// Limit, Offset and After page as in ListOptions.
	Limit  int
	Offset int
	After  string
}

// Trending returns one page of model's records ranked by a bucketed counter's
// decayed score, highest first (ties: the larger key first):
//
//	score = Σ count(bucket) × 0.5^(age(bucket) / HalfLife)
//
// over the last Buckets buckets, age 0 being the current one:
//
//	hot, err := slotted.Trending(db, &Post{}, "views", slotted.TrendOptions{Buckets: 7, HalfLife: 1, Limit: 10})
//	// hot.Items: []Post, their Views holding the 7 days' plain total; hot.Scores: the decayed scores
//	// SELECT `posts`.`id`, COALESCE(`slotted_views_rank`.`slotted_total`, 0) AS slotted_sort FROM `posts`
//	// LEFT JOIN (SELECT `record_id` AS slotted_id, SUM(CASE `record_type` WHEN 'posts.views@2026-11-23' THEN 1000000 * `count`
//	//   WHEN 'posts.views@2026-11-22' THEN 500000 * `count` ... END) AS slotted_total FROM `slotted_counters`
//	//   WHERE `record_type` IN (...) GROUP BY `record_id`) `slotted_views_rank` ON ... ORDER BY slotted_sort DESC, `posts`.`id` DESC LIMIT 11
//
// The weights are computed in Go (0.5^(age/HalfLife), scaled to integers of
// 1,000,000 and rounded; buckets whose weight rounds to 0 are left out) and
// bound as parameters, so the SQL is the same on every database. Scores are
// exact sums of those integers divided by 1,000,000; a record's weighted sum
// must stay within int64 (over 9×10^12 writes in the window).
//
// Pagination (After, Offset), db's conditions and the two statements are
// List's. Cost: one pass over every row of the window's buckets plus a sort
// of one score per record, as TopBetween (BENCHMARKS.md); compacting closed
// buckets (MaintainBuckets) keeps that to one row per record and bucket.
func Trending[T any](db *gorm.DB, model *T, counter string, opts ...TrendOptions) (*Page[T], error) {
	o, err := optionsOf(opts)
	if err != nil {
		return nil, err
	}
	p, m, c, err := rankArgs(db, model, counter, max(o.Limit, 1), "Trending")
	if err != nil {
		return nil, err
	}
	switch {
	case c.Bucket == nil:
		return nil, meta.NotBucketed(c)
	case o.Buckets < 1 || o.Buckets > MaxTrendBuckets:
		return nil, fmt.Errorf("%w: TrendOptions.Buckets %d (want 1..%d)", ErrInvalidArgument, o.Buckets, MaxTrendBuckets)
	case !(o.HalfLife > 0) || math.IsInf(o.HalfLife, 1):
		return nil, fmt.Errorf("%w: TrendOptions.HalfLife %v (want > 0 buckets)", ErrInvalidArgument, o.HalfLife)
	}
	r := ranking{m: m, c: c, read: ReadExact, limit: o.Limit, offset: o.Offset, after: o.After}
	r.fingerprint = fmt.Sprintf("trend|%s|%d|%g", c.RecordType, o.Buckets, o.HalfLife)
	if err := r.check(); err != nil {
		return nil, err
	}
	cur, err := r.cursor()
	if err != nil {
		return nil, err
	}
	at := o.At
	switch {
	case cur != nil && cur.Anchor != 0:
		at = time.Unix(0, cur.Anchor)
	case at.IsZero():
		at = p.cfg.Now()
	}
	now := c.Bucket.Of(at)
	if cur == nil { // later pages keep their anchor, even as retention moves past it
		if err := c.Bucket.Retained([]bucketing.Bucket{c.Bucket.Back(now, o.Buckets-1)}, p.cfg.Now()); err != nil {
			return nil, err
		}
	}
	r.anchor = now.Start.UnixNano()
	types, weights := trendWeights(c, now, o.Buckets, o.HalfLife)
	r.sub = p.reads.Scores(db, types, weights)
	page, err := rank(p, db, model, &r)
	if err != nil {
		return nil, err
	}
	page.Scores = make([]float64, len(page.Totals))
	for i, t := range page.Totals {
		page.Scores[i] = float64(t) / trendScale
	}
	page.Totals = nil
	if len(page.Items) == 0 {
		return page, nil
	}
	oldest := c.Bucket.Back(now, o.Buckets-1)
	return page, LoadBetween(db, &page.Items, oldest.Start, now.End, counter)
}

// trendWeights lists the window's bucket record_types, newest first, and
// their integer weights; it stops at the first weight that rounds to 0.
func trendWeights(c *meta.Counter, now bucketing.Bucket, n int, halfLife float64) ([]string, []int64) {
	var (
		types   []string
		weights []int64
	)
	b := now
	for age := range n {
		w := int64(math.Round(trendScale * math.Exp2(-float64(age)/halfLife)))
		if w == 0 {
			break
		}
		types, weights = append(types, bucketing.Type(c.RecordType, b.Label)), append(weights, w)
		b = c.Bucket.Back(b, 1)
	}
	return types, weights
}
