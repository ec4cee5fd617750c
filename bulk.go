package slotted

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/dialect"
	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/bucketing"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/tables"
	"github.com/slotted-go/slotted/internal/write"
)

// AddEach adds several counters of one record with one statement, each by its
// own delta, as Laravel's incrementEach does. The model's fields move by their
// deltas afterwards. Zero deltas are skipped; two names of one counter
// ("likes", "Likes") are summed.
//
//	slotted.AddEach(db, &post, map[string]int64{"likes": 1, "views": 3})
//	// INSERT INTO `slotted_counters` (`record_type`,`record_id`,`slot`,`count`)
//	//   VALUES ('posts.likes','42',17,1),('posts.views','42',2,3)
//	//   ON DUPLICATE KEY UPDATE `count`=`slotted_counters`.`count` + VALUES(`count`)
//	// PG/SQLite: ... ON CONFLICT (...) DO UPDATE SET "count"="slotted_counters"."count" + "excluded"."count"
func AddEach(db *gorm.DB, model any, deltas map[string]int64) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	if err := meta.PointerArg(model); err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(deltas))
	type move struct {
		c     *meta.Counter
		delta int64
	}
	var (
		v     reflect.Value
		id    string
		moves []move
	)
	for _, name := range names {
		c, sv, cid, err := p.models.Target(db, model, name)
		if err != nil {
			return err
		}
		v, id = sv, cid
		d := deltas[name]
		if d == 0 {
			continue
		}
		i := slices.IndexFunc(moves, func(m move) bool { return m.c == c })
		if i < 0 {
			moves = append(moves, move{c, d})
			continue
		}
		sum, ok := write.MergeDelta(moves[i].delta, d)
		if !ok {
			return fmt.Errorf("%w: counter %q", ErrDeltaOverflow, c.Name)
		}
		moves[i].delta = sum
	}
	if len(names) > 0 {
		if err := p.checkExists(db, v); err != nil { // once for all the counters (MustExist, exists.go)
			return err
		}
	}
	now := p.cfg.Now()
	rows := make([]write.Row, 0, len(moves))
	for _, m := range moves {
		rows = write.RowsOf(rows, m.c, id, m.delta, now)
	}
	if err := p.writes.WriteDeltas(db, rows); err != nil {
		return err
	}
	for _, m := range moves {
		m.c.Add(v, m.delta)
	}
	return nil
}

// AddMany adds delta to one counter of every record in models (a slice or
// array of structs or struct pointers, or a pointer to one) with one statement
// per up to 1024 rows, all in one transaction: written all or none. A record
// that appears twice is added to once, and every copy's field moves. A
// bucketed counter's records get their current bucket's rows too.
//
//	slotted.AddMany(db, posts, "views", 1)
//	// INSERT INTO `slotted_counters` (...) VALUES ('posts.views','1',3,1),('posts.views','2',0,1),...
//	//   ON DUPLICATE KEY UPDATE `count`=`slotted_counters`.`count` + VALUES(`count`)
func AddMany(db *gorm.DB, models any, counter string, delta int64) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	m, elem, err := p.models.ModelsArg(db, models)
	if err != nil {
		return err
	}
	c, err := m.Counter(counter)
	if err != nil {
		return err
	}
	rs, err := m.Records(elem, true)
	if err != nil || delta == 0 {
		return err
	}
	if err := p.checkAllExist(db, m, rs); err != nil { // MustExist (exists.go)
		return err
	}
	now := p.cfg.Now()
	rows := make([]write.Row, 0, len(rs.IDs))
	for _, id := range rs.IDs {
		rows = write.RowsOf(rows, c, id, delta, now)
	}
	if err := p.writes.WriteDeltas(db, rows); err != nil {
		return err
	}
	for _, structs := range rs.ByID {
		for _, s := range structs {
			c.Add(s, delta)
		}
	}
	return nil
}

// AddRefs adds to several counters named by Ref (Config.Slots slots each) with
// one statement per up to 1024 counters, all in one transaction.
//
//	slotted.AddRefs(db, map[slotted.Ref]int64{{Type: "downloads", ID: "a"}: 1, {Type: "downloads", ID: "b"}: 5})
func AddRefs(db *gorm.DB, deltas map[Ref]int64) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	rows := make([]write.Row, 0, len(deltas))
	for ref, d := range deltas {
		if err := ref.Validate(); err != nil {
			return err
		}
		if d != 0 {
			rows = append(rows, write.Row{Ref: ref, Slots: p.cfg.Slots, Delta: d})
		}
	}
	return p.writes.WriteDeltas(db, rows)
}

// AddWhere adds delta to one counter of every record the query selects, with
// one INSERT … SELECT: Laravel's Post::where(...)->increment('views'). Each
// record gets one slot row, its slot drawn uniformly per row in the SELECT list
// (not in a WHERE, where RAND() would be evaluated per row compared). The query
// needs db.Model(&Post{}); a query without conditions is refused with an error
// wrapping gorm.ErrMissingWhereClause unless the session allows global updates
// (db.Session(&gorm.Session{AllowGlobalUpdate: true})). Soft-deleted records
// are skipped as gorm's queries skip them. In-memory models are not changed.
// A composite primary key's record_id is computed in the SELECT from its
// columns, as the scopes' join does (docs/composite-keys.md).
//
//	slotted.AddWhere(db.Model(&Post{}).Where("author_id = ?", 7), "views", 1)
//	// INSERT INTO `slotted_counters` (`record_type`,`record_id`,`slot`,`count`)
//	//   SELECT 'posts.views', CAST(`slotted_src`.`id` AS CHAR), FLOOR(RAND()*100), 1
//	//   FROM (SELECT DISTINCT `posts`.`id` FROM `posts` WHERE author_id = 7) AS `slotted_src`
//	//   ORDER BY CAST(`slotted_src`.`id` AS CHAR)
//	//   ON DUPLICATE KEY UPDATE `count`=`slotted_counters`.`count` + 1
//	// PostgreSQL: CAST(... AS TEXT), floor(random()*100)::int, CAST($n AS BIGINT), ON CONFLICT ... DO UPDATE
//	// SQLite:     CAST(... AS TEXT), (random() & 9223372036854775807) % 100, ON CONFLICT ... DO UPDATE
func AddWhere(db *gorm.DB, counter string, delta int64) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	stmt := db.Statement
	if stmt.Model == nil {
		return fmt.Errorf("%w: AddWhere needs db.Model(&Record{})", ErrUnsupportedModel)
	}
	m, err := p.models.ModelArg(db, stmt.Model)
	if err != nil {
		return err
	}
	c, err := m.Counter(counter)
	if err != nil {
		return err
	}
	if err := m.Key.Sweepable(); err != nil {
		return fmt.Errorf("%w: AddWhere reads record ids from the %s column", err, strings.Join(m.Key.Columns(), ", "))
	}
	if !p.dialect.AddWhereSQL() {
		return fmt.Errorf("%w: AddWhere on %s", errors.ErrUnsupported, p.dialect.Name)
	}
	if !db.AllowGlobalUpdate && !conditioned(stmt, m) {
		return fmt.Errorf("slotted: AddWhere without conditions would add to every %s: %w", m.Type, gorm.ErrMissingWhereClause)
	}
	if delta == 0 {
		return nil
	}
	keyCols := m.Key.ColumnsIn(clause.CurrentTable)
	sel := []any{strings.TrimSuffix(strings.Repeat("?, ", len(keyCols)), ", ")}
	for _, col := range keyCols {
		sel = append(sel, col)
	}
	// Rows without a record_id (a zero key part, an id past MaxKeyLen) are
	// passed over, as Increment would refuse them.
	src := session.WithoutFill(db.Session(&gorm.Session{})).Distinct(sel...).Where(m.Key.Countable(p.dialect, clause.CurrentTable))
	// exec runs the INSERT … SELECT of recordType's rows on pool.
	exec := func(pool gorm.ConnPool, ctx context.Context, recordType string) error {
		tx := &gorm.DB{Config: db.Config}
		tx.Statement = &gorm.Statement{DB: tx, ConnPool: pool, Context: ctx, Table: p.cfg.Table, Clauses: map[string]clause.Clause{}}
		session.Inherit(tx.Statement, db.Statement, false)
		tx.Statement.AddClause(clause.Insert{Table: clause.Table{Name: p.cfg.Table}})
		tx.Statement.AddClause(insertSelect{d: p.dialect, recordType: recordType, key: m.Key, slots: c.Slots, delta: delta, src: src})
		tx.Statement.AddClause(addClause(p.dialect, delta))
		tx.Statement.Build("INSERT", "VALUES", "ON CONFLICT")
		if tx.Error != nil {
			return tx.Error
		}
		res := db.Callback().Raw().Execute(tx)
		if res.Error == nil && res.DryRun {
			return ErrDryRun // rendered and logged, not run
		}
		return tables.Overflowed(res.Error)
	}
	pool, inTx := p.sessions.Pool(db)
	ctx := session.Context(db)
	if c.Bucket == nil {
		return p.sessions.Retry.Do(ctx, inTx, func(ctx context.Context) error { return exec(pool, ctx, c.RecordType) })
	}
	// A bucketed counter: the totals and the current bucket's rows, a second
	// INSERT … SELECT of the same records in the same transaction (total
	// rows first, the key order every write locks in).
	types := [2]string{c.RecordType, bucketing.Type(c.RecordType, c.Bucket.Of(p.cfg.Now()).Label)}
	both := func(pool gorm.ConnPool, ctx context.Context) error {
		for _, t := range types {
			if err := exec(pool, ctx, t); err != nil {
				return err
			}
		}
		return nil
	}
	if inTx {
		return both(pool, ctx)
	}
	return p.sessions.WriteTx(db, func(tx *gorm.DB) error { return both(tx.Statement.ConnPool, session.Context(tx)) })
}

// conditioned reports whether a query selects less than the whole table: a
// WHERE clause, or a model value with its primary key set (gorm adds it).
func conditioned(stmt *gorm.Statement, m *meta.Model) bool {
	if c, ok := stmt.Clauses["WHERE"]; ok {
		if w, ok := c.Expression.(clause.Where); ok && len(w.Exprs) > 0 {
			return true
		}
	}
	v := reflect.ValueOf(stmt.Model)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return false
	}
	_, err := m.Key.ID(v)
	return err == nil
}

// insertSelect renders the VALUES part of AddWhere's INSERT as a SELECT from
// the user's query, wrapped as a derived table of distinct primary keys.
type insertSelect struct {
	d          dialect.Dialect
	recordType string
	key        meta.Key
	slots      int
	delta      int64
	src        *gorm.DB
}

const srcAlias = "slotted_src"

func (insertSelect) Name() string                   { return "VALUES" }
func (s insertSelect) MergeClause(c *clause.Clause) { c.Name, c.Expression = "", s } // no "VALUES" keyword

func (s insertSelect) Build(b clause.Builder) {
	// record_id from the derived table's key columns: the column cast to text,
	// or a composite key's parts escaped and joined (meta.Key.TextSQL).
	idSQL, idVars := s.key.TextSQL(s.d, srcAlias)
	id := func() {
		if s.key.Parts == nil {
			s.d.Text(b, clause.Column{Table: srcAlias, Name: s.key.Column})
			return
		}
		clause.Expr{SQL: idSQL, Vars: idVars}.Build(b)
	}
	_, _ = b.WriteString("(")
	for i, col := range []string{"record_type", "record_id", "slot", "count"} {
		if i > 0 {
			_ = b.WriteByte(',')
		}
		b.WriteQuoted(clause.Column{Name: col})
	}
	_, _ = b.WriteString(") SELECT ")
	b.AddVar(b, s.recordType)
	_, _ = b.WriteString(", ")
	id()
	_, _ = b.WriteString(", " + s.d.RandomSlot(s.slots) + ", ")
	s.d.Bigint(b, s.delta)
	_, _ = b.WriteString(" FROM (")
	b.AddVar(b, s.src)
	_, _ = b.WriteString(") AS ")
	b.WriteQuoted(srcAlias)
	// Byte order, as every multi-row write sorts (and locks) its rows, whatever
	// the connection's collation.
	_, _ = b.WriteString(" ORDER BY ")
	clause.Expr{SQL: s.d.ByteOrder(idSQL), Vars: idVars}.Build(b)
}
