package countercache

import (
	"reflect"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/session"
)

// Bulk UPDATEs and DELETEs of counter-cache children lock their rows by
// primary key, in primary-key order (MySQL/MariaDB and PostgreSQL).
//
// A locking read through a secondary index (WHERE topic_id = ? ... FOR
// UPDATE) locks rows in the order of its plan, and on MySQL/MariaDB at
// REPEATABLE READ also the gaps of that index range (next-key locks), which a
// bulk move then inserts into when it moves rows to another topic. Issue #18
// saw 64% of bulk moves deadlock on MariaDB at 32 writers. On PostgreSQL, a
// sequential scan locks by physical position, which every update moves:
// BenchmarkCounterCacheBulkMoves (32 writers, four hot topics) saw 10-15% of
// bulk moves fail on PostgreSQL and 0.3-0.8% on MariaDB; with the two reads
// below 0% on PostgreSQL and 0% in 5 of 6 runs on MariaDB (0.6% in one). The candidate rows' keys are read without locks, and
// the rows are then locked by primary key in ascending order, re-checking the
// statement's conditions under the lock:
//
//	SELECT `replies`.`id` FROM `replies` WHERE topic_id = 1 AND points < 2 ORDER BY `replies`.`id` LIMIT 10001
//	SELECT <image>, CASE WHEN (topic_id = 1 AND points < 2) THEN 1 ELSE 0 END
//	  FROM `replies` WHERE `replies`.`id` IN (4,9,17) ORDER BY `replies`.`id` FOR UPDATE
//
// An equality lookup on a unique index locks the records only, no gap (the
// statement's own conditions are evaluated in the select list, so that the
// optimizer has no other index to scan), and every statement takes its locks
// in the same order. The UPDATE or DELETE is then restricted to the locked
// rows that still match (cacheBeforeChange): a row that left the conditions
// between the two reads is neither changed nor counted, and a row that entered
// them is not changed either (as a row inserted after the single locking read
// never was). In a REPEATABLE READ transaction whose snapshot is older than the
// statement, the candidates are the rows of that snapshot that still match.
//
// A composite primary key (per-tenant comments) goes the same way with all
// its columns: ORDER BY tenant_id, seq, and (tenant_id, seq) IN ((1,1),(1,2))
// for the lock and the restriction, a range on the primary key on MariaDB
// (EXPLAIN: type range, key PRIMARY); one key as tenant_id = 1 AND seq = 2
// (meta.Key.In: MariaDB scans the table for a one-row IN in an UPDATE).
// byPrimaryKey does not recognise composite-key conditions, so such
// statements always take the two reads.
//
// SQLite has one writer: it keeps the single read. The cost is one more
// SELECT per bulk statement.

// orderedLocks reports whether a statement's before image is read in two
// steps, and returns its WHERE to re-check under the lock: for a statement
// with a WHERE of its own (one by the model's primary key alone locks by
// primary key already) and without a LIMIT (which picks its rows in its own
// order: one locking read keeps it).
func (p *Caches) orderedLocks(s *gorm.Statement) (clause.Expression, bool) {
	if !p.dialect.LockingReads {
		return nil, false
	}
	if _, hasLimit := s.Clauses["LIMIT"]; hasLimit {
		return nil, false
	}
	w, ok := s.Clauses["WHERE"].Expression.(clause.Where)
	if !ok || len(w.Exprs) == 0 || byPrimaryKey(s, w.Exprs) {
		return nil, false
	}
	return clause.AndConditions(w), true // a clause.Where would render its keyword
}

// byPrimaryKey reports whether one of the conditions (ANDed) restricts the
// statement to primary key values (db.Delete(&Comment{}, 9), Where("id IN ?",
// ...) built by gorm as clause.Eq / clause.IN): the single locking read then
// goes by the primary key already, and the second read would only cost.
func byPrimaryKey(s *gorm.Statement, exprs []clause.Expression) bool {
	if len(s.Schema.PrimaryFields) != 1 {
		return false
	}
	pk := s.Schema.PrimaryFields[0]
	isPK := func(col any) bool {
		c, ok := col.(clause.Column)
		return ok && (c.Name == pk.DBName || c.Name == clause.PrimaryKey) && (c.Table == "" || c.Table == clause.CurrentTable || c.Table == s.Schema.Table)
	}
	for _, e := range exprs {
		switch e := e.(type) {
		case clause.Eq:
			if isPK(e.Column) {
				return true
			}
		case clause.IN:
			if isPK(e.Column) {
				return true
			}
		}
	}
	return false
}

// candidateKeys reads, without locks, the primary keys of the rows scope
// selects, in ascending order; ok is false when there are more than
// restrictLimit (the statement is then not restricted, and the rows are
// locked by its own conditions).
func (p *Caches) candidateKeys(db *gorm.DB, cc *childCaches, unscoped bool, scope func(*gorm.DB) *gorm.DB) (keys []any, ok bool) {
	cols := cc.keyColumns()
	q := session.WithoutFill(session.Routed(db)).Model(reflect.New(cc.schema.ModelType).Interface()).Select(strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", "), cols...)
	if unscoped {
		q = q.Unscoped()
	}
	q = scope(q).Order(cc.keyOrder()).Limit(restrictLimit + 1)
	rows, err := q.Rows()
	if err != nil {
		_ = db.AddError(err)
		return nil, false
	}
	defer rows.Close()
	for rows.Next() {
		dests := cc.keyDests()
		if err := rows.Scan(dests...); err != nil {
			_ = db.AddError(err)
			return nil, false
		}
		keys = append(keys, cc.scannedKey(dests))
	}
	if err := rows.Err(); err != nil {
		_ = db.AddError(err)
		return nil, false
	}
	return keys, len(keys) <= restrictLimit
}
