// Package dialect holds every difference between the databases the plugin
// runs on: what a statement may use (row comparisons, RETURNING, locking
// reads), how a few expressions are spelled, identifier limits, and what is
// asked of the server once at start-up (Galera, the server's version). The
// rest of the code branches on a Dialect's capability fields, never on a
// dialector's name, so a fourth database is a change to this package.
package dialect

import (
	"fmt"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/errs"
)

// Dialect is what the plugin's SQL depends on in the database it runs on,
// decided once at Initialize so that no code path asks the dialector by name.
type Dialect struct {
	Name string // gorm's Dialector.Name(): "mysql", "postgres", "sqlite", ...
	// LockingReads: a read that decides a write takes row locks (SELECT ... FOR
	// UPDATE). Not on SQLite, which has no row locks: its BEGIN IMMEDIATE (or
	// the delete's transaction) already holds the database's write lock.
	LockingReads bool
	// ImmediateTx: write transactions open with BEGIN IMMEDIATE (SQLite), not
	// at READ COMMITTED isolation.
	ImmediateTx bool
	// RowCompare: a row comparison (a, b) > (?, ?) is one index condition
	// (PostgreSQL), so a keyset scan can start at the resume point.
	RowCompare bool
	// WithoutRowID: the counter table is created WITHOUT ROWID (SQLite), so the
	// primary key is the table rather than a second B-tree beside it.
	WithoutRowID bool
	// Galera: a MariaDB Galera node (wsrep_on = ON), asked at Initialize. Write
	// transactions wait for the node to catch up with the cluster first, and
	// the retry defaults are Galera's (see galera.go).
	Galera bool
	// CheckedAdd: the database would not fail an addition past int64 by itself
	// (SQLite makes it a REAL), so upserts check the sum (AddExpr).
	CheckedAdd bool
	// ValuesFunc: an upsert reads the row it tried to insert as VALUES(col)
	// (MySQL/MariaDB's ON DUPLICATE KEY UPDATE), not as excluded.col.
	ValuesFunc bool
	// TextType is what CAST(key AS ...) needs to compare a parent's key with
	// record_id (OrderBy's join): CHAR on MySQL, TEXT elsewhere.
	TextType string
	// BigResult: windowed rankings group with SELECT SQL_BIG_RESULT
	// (MySQL/MariaDB), by sorting rather than in a temporary table that spills
	// to disk past tmp_table_size (a week's top of 100k records: 41 s -> 6 s).
	BigResult bool
	// Returning: INSERT … RETURNING and DELETE … RETURNING (MariaDB 10.5+,
	// PostgreSQL, SQLite 3.35+; not MySQL, TiDB or Vitess), asked at
	// Initialize on MySQL-protocol servers; off with Config.DisableReturning.
	Returning bool
	// InsertIgnore: "insert unless present" is INSERT IGNORE (MySQL), not
	// ON CONFLICT DO NOTHING.
	InsertIgnore bool
	// Markers: an ambiguous write error can be resolved from another
	// connection (outcome markers). Not on SQLite: one process owns the file,
	// and a failed statement there is never half-known.
	Markers bool
	// PreparedInTx: statements the plugin prepares on the pool may be run on
	// a transaction's connection with Tx.StmtContext (MySQL's driver
	// re-prepares cheaply; pgx would prepare per connection anyway).
	PreparedInTx bool
	// ServerDetect: the server is asked at Initialize what it is (Galera,
	// RETURNING), because the MySQL protocol serves several databases.
	ServerDetect bool
	// MayPreferUnprepared: the dialector may be set to run without
	// server-side prepared statements (pgx's simple protocol), see
	// PrefersUnprepared.
	MayPreferUnprepared bool
	// BinaryKeys: a key column needs a binary type to compare byte for byte
	// (MySQL's default collations fold case and trailing spaces).
	BinaryKeys bool
}

// Of returns the dialect of a dialector, before anything is asked of the
// server (see Detect).
func Of(d gorm.Dialector) Dialect {
	name := d.Name()
	mysql, postgres, sqlite := name == "mysql", name == "postgres", name == "sqlite"
	return Dialect{
		Name:                name,
		LockingReads:        !sqlite,
		ImmediateTx:         sqlite,
		RowCompare:          postgres,
		WithoutRowID:        sqlite,
		CheckedAdd:          sqlite,
		ValuesFunc:          mysql,
		TextType:            textType(name),
		BigResult:           mysql,
		Returning:           postgres || sqlite, // MySQL's is asked at Initialize
		InsertIgnore:        mysql,
		Markers:             !sqlite,
		PreparedInTx:        mysql,
		ServerDetect:        mysql,
		MayPreferUnprepared: postgres,
		BinaryKeys:          mysql,
	}
}

// textType is the dialect's type for CAST(... AS ...) to text.
func textType(dialect string) string {
	switch dialect {
	case "mysql":
		return "CHAR"
	case "sqlserver":
		return "NVARCHAR(128)"
	}
	return "TEXT"
}

// KeyType is the column type of a key of size bytes ("" for the dialect's
// own sized string type).
func (d Dialect) KeyType(size int) string {
	if d.BinaryKeys {
		return fmt.Sprintf("varbinary(%d)", size)
	}
	return ""
}

// overflowError is an expression that fails the statement with SQLite's
// "integer overflow" (abs of the minimum int64), which isOverflow knows.
// SQLite has no RAISE outside triggers; this is the error its own integer
// arithmetic raises, the same one its SUM raises.
const overflowError = "abs(-9223372036854775807 - 1)"

// AddExpr is the slot's count plus delta. MySQL and PostgreSQL fail the
// statement when the sum leaves int64; SQLite would store it as a REAL, so
// with CheckedAdd the sum is checked and an overflow fails the statement
// there too. Failing (rather than skipping the row with a WHERE) is what a
// multi-row upsert needs: the statement is undone as a whole, so none of its
// rows is written, and the caller gets an error whatever the other rows did.
//
//	"count"="slotted_counters"."count" + ?                          -- MySQL, PostgreSQL
//	`count`=CASE WHEN typeof(`slotted_counters`.`count` + ?) = 'integer'
//	  THEN `slotted_counters`.`count` + ? ELSE abs(-9223372036854775807 - 1) END -- SQLite
//
// SQLite evaluates the constant ELSE branch only for a row that overflows, not
// once ahead of the statement (checked on SQLite 3.45, mattn's driver, and
// 3.49, ncruces': a statement without overflow succeeds, and a failed one
// leaves every row, and the caller's transaction, as they were).
func (d Dialect) AddExpr(delta any) clause.Expr {
	current := clause.Column{Table: clause.CurrentTable, Name: "count"}
	if !d.CheckedAdd {
		return gorm.Expr("? + ?", current, delta)
	}
	return gorm.Expr("CASE WHEN typeof(? + ?) = 'integer' THEN ? + ? ELSE "+overflowError+" END", current, delta, current, delta)
}

// AddWhereSQL reports whether AddWhere's SQL is known for the dialect.
func (d Dialect) AddWhereSQL() bool { return d.RandomSlot(1) != "" }

// RandomSlot is a uniform integer in [0, n) drawn per row of a SELECT list.
// RAND()*n stored into an integer would round (n+1 values), hence FLOOR; SQLite's
// random() is a signed 64-bit integer, masked to its non-negative half
// (abs() fails on the minimum). n is the counter's slot count, not user input.
func (d Dialect) RandomSlot(n int) string {
	switch d.Name {
	case "mysql":
		return fmt.Sprintf("FLOOR(RAND()*%d)", n)
	case "postgres":
		return fmt.Sprintf("floor(random()*%d)::int", n)
	case "sqlite":
		return fmt.Sprintf("(random() & 9223372036854775807) %% %d", n)
	}
	return ""
}

// Text renders a column as text, the record_id form of integer and string keys.
func (d Dialect) Text(b clause.Builder, col clause.Column) {
	_, _ = b.WriteString("CAST(")
	b.WriteQuoted(col)
	_, _ = b.WriteString(" AS " + d.TextType + ")")
}

// Bigint binds n where PostgreSQL would otherwise infer a SELECT list
// parameter as text.
func (d Dialect) Bigint(b clause.Builder, n int64) {
	if d.Name == "postgres" {
		_, _ = b.WriteString("CAST(")
		b.AddVar(b, n)
		_, _ = b.WriteString(" AS BIGINT)")
		return
	}
	b.AddVar(b, n)
}

// IdentifierLimit is the longest identifier (each part of schema.table) the
// database keeps as written: MySQL/MariaDB refuse longer names (1059/1103),
// PostgreSQL silently truncates them to NAMEDATALEN-1 bytes, which would make
// the plugin write a table other than the one configured. SQLite has no
// limit; 64 keeps a name that also works on MySQL.
func (d Dialect) IdentifierLimit() int {
	switch d.Name {
	case "postgres":
		return 63
	case "sqlserver":
		return 128
	}
	return 64
}

// CheckTableName checks a configured table name against IdentifierLimit.
func (d Dialect) CheckTableName(table string) error {
	limit := d.IdentifierLimit()
	for _, part := range strings.Split(table, ".") {
		if len(part) > limit {
			return fmt.Errorf("%w: Table %q: %q is %d bytes, longer than %s's %d", errs.ErrInvalidConfig, table, part, len(part), d.Name, limit)
		}
	}
	return nil
}

// ConcatComma joins SQL text expressions with ',' between them: CONCAT on
// MySQL (where || is OR unless PIPES_AS_CONCAT), || elsewhere. The
// expressions are the plugin's own (column casts), never user values.
func (d Dialect) ConcatComma(exprs []string) string {
	if d.Name == "mysql" {
		return "CONCAT(" + strings.Join(exprs, ", ',', ") + ")"
	}
	return "(" + strings.Join(exprs, " || ',' || ") + ")"
}

// OctetLength is the length in bytes of a text expression (record_id's
// limit, MaxKeyLen, is in bytes): LENGTH is bytes on MySQL but characters
// elsewhere.
func (d Dialect) OctetLength(expr string) string {
	switch d.Name {
	case "mysql":
		return "LENGTH(" + expr + ")"
	case "postgres":
		return "OCTET_LENGTH(" + expr + ")"
	}
	return "LENGTH(CAST(" + expr + " AS BLOB))"
}

// ByteOrder makes a text expression sort by its bytes, the order every
// multi-row write sorts its rows in (and so locks them in) whatever the
// connection's collation: a binary cast on MySQL, the "C" collation on
// PostgreSQL; SQLite compares text by bytes already.
func (d Dialect) ByteOrder(expr string) string {
	switch d.Name {
	case "mysql":
		return "CAST(" + expr + " AS BINARY)"
	case "postgres":
		return expr + ` COLLATE "C"`
	}
	return expr
}

// ShareLock is a locking read's shared lock: LOCK IN SHARE MODE on MySQL and
// MariaDB (MariaDB has no FOR SHARE before 12.x, but every MySQL and MariaDB
// has LOCK IN SHARE MODE), FOR SHARE elsewhere.
func (d Dialect) ShareLock() clause.Interface {
	if d.Name == "mysql" {
		return shareMode{}
	}
	return clause.Locking{Strength: clause.LockingStrengthShare}
}

// shareMode renders LOCK IN SHARE MODE in gorm's FOR clause position.
type shareMode struct{}

func (shareMode) Name() string                   { return "FOR" }
func (shareMode) Build(b clause.Builder)         { _, _ = b.WriteString("LOCK IN SHARE MODE") }
func (s shareMode) MergeClause(c *clause.Clause) { c.Name, c.Expression = "", s }
