package slotted

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/bucketing"
	"github.com/slotted-go/slotted/internal/keyset"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/query"
)

// Sorted listings: a page of records ordered by a counter, read in two
// statements. The first ranks keys only,
//
//	SELECT `posts`.`id`, <sort key> AS slotted_sort FROM `posts` [LEFT JOIN (<totals>) ...]
//	WHERE <caller's conditions> [AND <sort key> <= ? AND (<sort key> < ? OR `posts`.`id` < ?)]
//	ORDER BY <sort key> DESC, `posts`.`id` DESC LIMIT <Limit+1> [OFFSET ?]
//
// and the second loads those records by primary key through the caller's
// *gorm.DB (its Preload, soft deletes and auto-fill apply), put back in rank
// order. The sort key of each item is the value the first statement sorted
// by, so a cursor names a position in that order, (sort key, primary key),
// not a row number: the next page starts strictly after it. A composite key
// sorts and compares by its columns in order, (a, b) < (?, ?) spelled out
// where the database needs it (keyset.Before); its cursor carries the
// record_id, parsed back into the columns.
//
// Stability, precisely: a record whose sort key does not change while a
// client pages through a listing with cursors appears exactly once, in its
// place; a record whose key changes may be seen twice or not at all (it moved
// across the cursor), as in any keyset pagination. Offset pages give no such
// guarantee (a record moving up shifts every later page by one).

// Read chooses where a listing reads the totals it sorts by.
type Read int

const (
	// ReadAuto is ReadFast when the counter has a cache: column and the listing
	// has no window, ReadExact otherwise: what Top does.
	ReadAuto Read = iota
	// ReadExact sorts by the live total: the counter's slot rows summed per
	// record by the database on every page. Exact, and costs a pass over all the
	// counter's rows (or the window's) per page, whatever the page: seconds at
	// 100,000 records × 100 slots (BENCHMARKS.md).
	ReadExact
	// ReadFast sorts by the counter's cache: column, read from the parent table
	// alone (with an index on (cache column, primary key): milliseconds per page).
	// The totals are as fresh as the last RollUp/RollUpAll of each record (with a
	// Runner: at most its Interval plus one pass behind). The items' counter
	// fields are still filled live by auto-fill; Page.Totals hold the cached values.
	ReadFast
)

func (r Read) String() string {
	switch r {
	case ReadExact:
		return "exact"
	case ReadFast:
		return "fast"
	}
	return "auto"
}

// MaxPageSize bounds a listing's Limit.
const MaxPageSize = 1000

// ListOptions is one page of a sorted listing (List).
type ListOptions struct {
	// Limit is the page size, 1..MaxPageSize.
	Limit int
	// Offset skips that many records (offset pagination). Not with After.
	Offset int
	// After is the previous page's Page.Next: the page starts right after it
	// (keyset pagination). A cursor of another listing (counter, read path,
	// direction, window) is ErrInvalidArgument.
	After string
	// Read chooses exact or fast totals; the zero value is ReadAuto.
	Read Read
	// Ascending sorts smallest first (ties: the smaller key first). Default:
	// largest first, ties the larger key first, as Top.
	Ascending bool
	// From and To, when set, sort by a bucketed counter's total over the
	// buckets overlapping [From, To) (as CountBetween); the items' counter
	// field then holds that window's total. Windows are always exact.
	From, To time.Time
}

// Page is one page of a listing.
type Page[T any] struct {
	Items []T
	// Totals are the items' sort keys as the ranking statement read them: the
	// live totals (ReadExact), the cache column (ReadFast), or the window's
	// totals. Trending fills Scores instead.
	Totals []int64
	// Scores are Trending's decayed scores (nil for List).
	Scores []float64
	// Next is the cursor of the following page (ListOptions.After,
	// TrendOptions.After), or "" when this page is the last.
	Next string
	// Read is the path that served the page: ReadExact or ReadFast.
	Read Read
}

// List returns one page of model's records sorted by a counter:
//
//	page, err := slotted.List(db, &Post{}, "likes", slotted.ListOptions{Limit: 20})                        // the first page
//	page, err = slotted.List(db, &Post{}, "likes", slotted.ListOptions{Limit: 20, After: page.Next})       // the next one
//	page, err = slotted.List(db, &Post{}, "likes", slotted.ListOptions{Limit: 20, Read: slotted.ReadExact}) // live totals
//	page, err = slotted.List(db.Where("author_id = ?", 7), &Post{}, "views", slotted.ListOptions{Limit: 10, From: weekAgo, To: now})
//
// db may carry conditions (Where, Joins, Preload, soft deletes); its Order,
// Limit and Offset are replaced by the listing's. Records without counter
// rows (ReadExact) count as 0. Costs: see ReadExact and ReadFast. Bad options
// (Limit outside 1..MaxPageSize, a negative Offset, Offset with After, a
// foreign or malformed cursor, ReadFast on a counter without a cache: column
// or with a window) are ErrInvalidArgument, and nothing is sent; two
// ListOptions values are ErrInvalidConfig, as for every call's options. Rows
// whose key has no record_id (a zero key part, an id longer than MaxKeyLen)
// cannot hold counters and are not listed.
func List[T any](db *gorm.DB, model *T, counter string, opts ...ListOptions) (*Page[T], error) {
	o, err := optionsOf(opts)
	if err != nil {
		return nil, err
	}
	p, m, c, err := rankArgs(db, model, counter, max(o.Limit, 1), "List")
	if err != nil {
		return nil, err
	}
	windowed := !o.From.IsZero() || !o.To.IsZero()
	read := o.Read
	switch {
	case read == ReadAuto && c.Cache != "" && !windowed:
		read = ReadFast
	case read == ReadAuto:
		read = ReadExact
	case read == ReadFast && c.Cache == "":
		return nil, fmt.Errorf("%w: ReadFast: counter %q has no cache: column", ErrInvalidArgument, c.Name)
	case read == ReadFast && windowed:
		return nil, fmt.Errorf("%w: ReadFast: a window has no cache column; use ReadExact", ErrInvalidArgument)
	case read != ReadFast && read != ReadExact:
		return nil, fmt.Errorf("%w: Read %d", ErrInvalidArgument, read)
	}
	r := ranking{m: m, c: c, limit: o.Limit, offset: o.Offset, after: o.After, asc: o.Ascending, read: read}
	fp := fmt.Sprintf("list|%s|%s|%t", c.RecordType, read, o.Ascending)
	var buckets []bucketing.Bucket
	switch {
	case windowed:
		if c.Bucket == nil {
			return nil, meta.NotBucketed(c)
		}
		if buckets, err = c.Bucket.Between(o.From, o.To); err != nil {
			return nil, err
		}
		if len(buckets) > 0 {
			fp += "|" + buckets[0].Label + "|" + buckets[len(buckets)-1].Label
		}
		r.sub = p.reads.Totals(db, query.Anys(c.BucketTypes(buckets)))
	case read == ReadExact:
		r.sub = p.reads.Totals(db, []any{c.RecordType})
	}
	r.fingerprint = fp
	if err := r.check(); err != nil {
		return nil, err
	}
	if _, err := r.cursor(); err != nil {
		return nil, err
	}
	page, err := rank(p, db, model, &r)
	if err != nil || !windowed || len(page.Items) == 0 {
		return page, err
	}
	return page, LoadBetween(db, &page.Items, o.From, o.To, counter)
}

// ranking is one page of a listing or of Trending, ready to run.
type ranking struct {
	m           *meta.Model
	c           *meta.Counter
	read        Read
	sub         *gorm.DB // the grouped totals joined to the model (nil: the cache column)
	limit       int
	offset      int
	after       string
	asc         bool
	fingerprint string // names the listing in its cursors
	anchor      int64  // Trending's current bucket, carried by its cursors
}

func (r *ranking) check() error {
	switch {
	case r.limit < 1 || r.limit > MaxPageSize:
		return fmt.Errorf("%w: page Limit %d (want 1..%d)", ErrInvalidArgument, r.limit, MaxPageSize)
	case r.offset < 0:
		return fmt.Errorf("%w: page Offset %d", ErrInvalidArgument, r.offset)
	case r.offset > 0 && r.after != "":
		return fmt.Errorf("%w: a page takes Offset or After, not both", ErrInvalidArgument)
	}
	return nil
}

// cursor is a position in a listing: the sort key and record_id of the last
// item of a page. It travels as URL-safe base64 of its JSON.
type cursor struct {
	Listing string `json:"l"`
	Sort    int64  `json:"s"`
	ID      string `json:"k"`
	Anchor  int64  `json:"a,omitempty"`
}

// cursor decodes r.after (nil when there is none) and checks that it belongs to this listing.
func (r *ranking) cursor() (*cursor, error) {
	if r.after == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(r.after)
	var cur cursor
	if err == nil {
		err = json.Unmarshal(raw, &cur)
	}
	if err != nil || cur.ID == "" {
		return nil, fmt.Errorf("%w: malformed page cursor", ErrInvalidArgument)
	}
	if cur.Listing != fingerprint(r.fingerprint) {
		return nil, fmt.Errorf("%w: the page cursor belongs to another listing", ErrInvalidArgument)
	}
	if err := meta.CheckKey("record id", cur.ID); err != nil {
		return nil, fmt.Errorf("%w: page cursor: %v", ErrInvalidArgument, err)
	}
	if _, ok := r.m.Key.Parse(cur.ID); !ok {
		return nil, fmt.Errorf("%w: page cursor key %q", ErrInvalidArgument, cur.ID)
	}
	return &cur, nil
}

func fingerprint(s string) string {
	h := fnv.New64a()
	h.Write([]byte(s))
	return strconv.FormatUint(h.Sum64(), 36)
}

func (r *ranking) encode(sort int64, id string) string {
	raw, _ := json.Marshal(cursor{Listing: fingerprint(r.fingerprint), Sort: sort, ID: id, Anchor: r.anchor})
	return base64.RawURLEncoding.EncodeToString(raw)
}

// paged sets q's LIMIT and OFFSET, replacing the caller's: gorm's Limit
// clause keeps an earlier offset whenever the new one is 0 (every cursor
// page), and Offset(-1) is the only way to clear it.
func paged(q *gorm.DB, limit, offset int) *gorm.DB {
	return q.Limit(limit).Offset(-1).Offset(offset)
}

// rank runs a page: the ranking statement, then the records by key.
func rank[T any](p *Plugin, db *gorm.DB, model *T, r *ranking) (*Page[T], error) {
	if model == nil { // gorm would refuse it with an untyped error
		return nil, fmt.Errorf("%w: nil %T; pass &%s{}", ErrUnsupportedModel, model, r.m.Type.Name())
	}
	cur, err := r.cursor()
	if err != nil {
		return nil, err
	}
	m := r.m
	if err := m.Key.Textual(); r.sub != nil && err != nil {
		return nil, err
	}
	db = db.Session(&gorm.Session{}) // two statements from the caller's conditions: neither may see the other's clauses
	// Ties are broken by the key's columns (a composite key's in order, as
	// Top does), not by record_id: the database orders and compares them
	// alike, and an index on (cache column, key columns) serves ReadFast.
	pk := m.Key.ColumnsIn(clause.CurrentTable)
	q := session.WithoutFill(db).Model(model).Where(m.Key.Countable(p.dialect, clause.CurrentTable))
	var sort string
	if r.sub != nil {
		alias := "slotted_" + identifier(r.c.Name) + "_rank"
		quoted := q.Statement.Quote(alias)
		key, keyVars := m.Key.TextSQL(p.dialect, clause.CurrentTable)
		q = q.Joins("LEFT JOIN (?) "+quoted+" ON "+quoted+".slotted_id = "+key, append([]any{r.sub}, keyVars...)...)
		sort = "COALESCE(" + q.Statement.Quote(clause.Column{Table: alias, Name: "slotted_total"}) + ", 0)"
	} else {
		sort = q.Statement.Quote(clause.Column{Table: m.Table, Name: r.c.Cache})
	}
	if cur != nil {
		key, _ := m.Key.Parse(cur.ID)
		lt, le, past := "<", "<=", keyset.Before
		if r.asc {
			lt, le, past = ">", ">=", keyset.After
		}
		q = q.Where(clause.Expr{SQL: sort + " " + le + " ? AND (" + sort + " " + lt + " ? OR ?)",
			Vars: []any{cur.Sort, cur.Sort, past(pk, m.Key.PartsOf(key), p.dialect.RowCompare)}})
	}
	order := []clause.OrderByColumn{{Column: clause.Column{Name: sort, Raw: true}, Desc: !r.asc, Reorder: true}}
	sel := make([]any, len(pk))
	for i, col := range pk {
		order, sel[i] = append(order, clause.OrderByColumn{Column: col, Desc: !r.asc}), col
	}
	q = q.Select(strings.Repeat("?, ", len(pk))+sort+" AS slotted_sort", sel...).
		Order(clause.OrderBy{Columns: order})
	rows, err := paged(q, r.limit+1, r.offset).Rows()
	if q.DryRun { // rendered and logged; an empty page would claim there are no records
		return nil, ErrDryRun
	}
	if err != nil {
		return nil, err
	}
	var (
		keys  []any
		ids   []string
		sorts = map[string]int64{}
	)
	for rows.Next() {
		var s int64
		key, id, err := m.ScanKey(rows.Scan, &s)
		if err != nil {
			rows.Close()
			return nil, err
		}
		keys, ids = append(keys, key), append(ids, id)
		sorts[id] = s
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	page := &Page[T]{Read: r.read}
	if len(ids) > r.limit {
		ids, keys = ids[:r.limit], keys[:r.limit]
		last := ids[len(ids)-1]
		page.Next = r.encode(sorts[last], last)
	}
	if len(keys) == 0 {
		return page, nil
	}
	var found []T
	if err := db.Where(m.Key.In(clause.CurrentTable, keys)).Limit(-1).Offset(-1).Find(&found).Error; err != nil {
		return nil, err
	}
	byID := make(map[string]int, len(found))
	for i := range found {
		id, err := m.Key.ID(reflect.ValueOf(&found[i]).Elem())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Type, err)
		}
		byID[id] = i
	}
	// A record deleted between the two statements is left out; the cursor still follows the ranking.
	for _, id := range ids {
		if i, ok := byID[id]; ok {
			page.Items = append(page.Items, found[i])
			page.Totals = append(page.Totals, sorts[id])
		}
	}
	return page, nil
}
