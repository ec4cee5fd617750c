package query

import (
	"time"

	"gorm.io/gorm/clause"
)

const (
	// TypeChunk bounds the record_types in one IN list.
	TypeChunk = 500
	// WindowCells bounds buckets × records in one statement: MariaDB's range
	// optimizer builds one range per pair, and gives up on the index (scanning
	// the whole bucket range) when they exceed its memory budget.
	WindowCells = 10000
)

// Anys turns strings into bind values.
func Anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// Live selects keys that have not expired at now.
func Live(now time.Time) clause.Expression {
	at := clause.Column{Name: "expires_at"}
	return clause.Or(clause.Eq{Column: at, Value: nil}, clause.Gt{Column: at, Value: now.UTC()})
}
