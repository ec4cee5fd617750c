package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// Test models.
type Post struct {
	ID    uint `gorm:"primaryKey"`
	Title string
	Likes int64 `gorm:"-" slotted:"likes"`
	Views int   `gorm:"-" slotted:"views;slots:4"`
	// No gorm:"-": the plugin keeps it out of the posts table's SQL anyway.
	Stars int32 `slotted:"stars;type:post_stars"`
}

type Doc struct {
	ID    uuid.UUID `gorm:"size:36;primaryKey"`
	Reads int64     `gorm:"-" slotted:"reads"`
}

type Tag struct {
	Name string `gorm:"primaryKey;size:64"`
	Uses int    `gorm:"-" slotted:"uses;slots:1"`
}

// Article has a cached column for RollUp and soft deletes.
type Article struct {
	ID          uint
	Title       string
	Likes       int64 `gorm:"-" slotted:"likes;cache:likes_count"`
	Shares      int64 `gorm:"-" slotted:"shares;cache:shares_count"`
	LikesCount  int64
	SharesCount int64
	DeletedAt   gorm.DeletedAt `gorm:"index"`
}

var testModels = []any{&Post{}, &Doc{}, &Tag{}, &Article{}}

const (
	dbSQLite   = "sqlite"
	dbMySQL    = "mysql"
	dbPostgres = "postgres"
)

// dbNames lists the databases this run covers: SQLite always, MariaDB/MySQL
// and PostgreSQL when SLOTTED_MYSQL_DSN / SLOTTED_POSTGRES_DSN are set.
func dbNames(t testing.TB) []string {
	names := []string{dbSQLite}
	for _, n := range []struct{ name, env string }{{dbMySQL, "SLOTTED_MYSQL_DSN"}, {dbPostgres, "SLOTTED_POSTGRES_DSN"}} {
		if os.Getenv(n.env) != "" {
			names = append(names, n.name)
		} else if os.Getenv("SLOTTED_REQUIRE_DBS") == "1" {
			t.Fatalf("SLOTTED_REQUIRE_DBS=1 but %s is not set", n.env)
		}
	}
	return names
}

// sqliteDSNs remembers each test's SQLite file so openRaw can open a second handle on it.
var sqliteDSNs sync.Map // *testing.T -> string

// openRaw opens a new connection pool on the named database, with a fresh
// gorm.Config each time (clause builders stick to a Config).
func openRaw(t testing.TB, name string) *gorm.DB {
	t.Helper()
	var d gorm.Dialector
	switch name {
	case dbMySQL:
		d = mysql.Open(os.Getenv("SLOTTED_MYSQL_DSN"))
	case dbPostgres:
		d = postgres.Open(os.Getenv("SLOTTED_POSTGRES_DSN"))
	default:
		dsn, ok := sqliteDSNs.Load(t)
		if !ok {
			dsn = sqliteDSN(filepath.Join(t.TempDir(), "test.db"), 10000, true)
			sqliteDSNs.Store(t, dsn)
			t.Cleanup(func() { sqliteDSNs.Delete(t) })
		}
		d = sqliteOpen(dsn.(string))
	}
	db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db
}

// testEachDB runs fn once per database with a clean schema and the plugin
// registered with cfg (zero Config when omitted).
func testEachDB(t *testing.T, fn func(t *testing.T, db *gorm.DB), cfg ...slotted.Config) {
	for _, name := range dbNames(t) {
		t.Run(name, func(t *testing.T) {
			db := openDB(t, name, cfg...)
			fn(t, db)
		})
	}
}

func openDB(t *testing.T, name string, cfg ...slotted.Config) *gorm.DB {
	t.Helper()
	db := openRaw(t, name)
	c := slotted.Config{}
	if len(cfg) > 0 {
		c = cfg[0]
	}
	table := c.Table
	if table == "" {
		table = slotted.DefaultTable
	}
	require.NoError(t, db.Migrator().DropTable(append(testModels, table)...))
	require.NoError(t, db.Use(slotted.New(c)))
	require.NoError(t, db.AutoMigrate(testModels...))
	return db
}

func dialect(db *gorm.DB) string {
	if db.Dialector.Name() == "postgres" {
		return dbPostgres
	}
	return db.Dialector.Name()
}

// recorder is a gorm logger that keeps every statement it is shown.
type recorder struct {
	mu   sync.Mutex
	sqls []string
}

func (r *recorder) LogMode(logger.LogLevel) logger.Interface      { return r }
func (r *recorder) Info(context.Context, string, ...interface{})  {}
func (r *recorder) Warn(context.Context, string, ...interface{})  {}
func (r *recorder) Error(context.Context, string, ...interface{}) {}
func (r *recorder) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	sql, _ := fc()
	r.mu.Lock()
	r.sqls = append(r.sqls, sql)
	r.mu.Unlock()
}

func (r *recorder) statements() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.sqls...)
}

// count returns how many recorded statements contain every fragment.
func (r *recorder) count(fragments ...string) int {
	n := 0
	for _, s := range r.statements() {
		all := true
		for _, f := range fragments {
			all = all && strings.Contains(s, f)
		}
		if all {
			n++
		}
	}
	return n
}

func recorded(db *gorm.DB) (*gorm.DB, *recorder) {
	r := &recorder{}
	return db.Session(&gorm.Session{Logger: r}), r
}

// counterRows returns how many slot rows the counter table holds in all.
// markerRows is how many rows an outcome marker adds to a coalesced statement
// under the default Config: one on the servers, none on SQLite (docs/outcomes.md).
func markerRows(db *gorm.DB) int {
	if dialect(db) == "sqlite" {
		return 0
	}
	return 1
}

// counterRows counts the counter table's rows, less the plugin's outcome markers
// (slotted.MarkerType), which every coalesced statement also writes.
func counterRows(t *testing.T, db *gorm.DB) int64 {
	t.Helper()
	var n int64
	require.NoError(t, slotted.Table(db).Where("record_type <> ?", slotted.MarkerType).Count(&n).Error)
	return n
}
