package tests

import (
	"database/sql"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// Benchmarks write to their own tables so they never meet the tests' data.
const benchTable = "bench_counters"

type BenchPost struct {
	ID    uint  `gorm:"primaryKey"`
	Likes int64 `gorm:"-" slotted:"likes"`
	// Plain is the single-row counter users run today: UPDATE ... SET plain = plain + 1.
	Plain int64 `gorm:"column:plain;not null;default:0"`
}

// benchWriters is the number of concurrent writers on one hot record.
const benchWriters = 64

// benchDB opens the plugin on a default gorm.Config, as a user would, with a
// pool large enough for every writer (database/sql keeps only 2 idle by default).
func benchDB(b *testing.B, name string) (*gorm.DB, *sql.DB, BenchPost) {
	b.Helper()
	db := openRaw(b, name)
	// gorm's default logger (what a default &gorm.Config{} gets), writing to a file instead of stdout so its
	// slow-query warnings do not split the benchmark result lines (go test merges stderr into stdout).
	db.Config.Logger = logger.New(log.New(benchLog(b), "\r\n", log.LstdFlags), logger.Config{
		SlowThreshold: 200 * time.Millisecond, LogLevel: logger.Warn, IgnoreRecordNotFoundError: false, Colorful: true,
	})
	sqlDB, err := db.DB()
	if err != nil {
		b.Fatal(err)
	}
	sqlDB.SetMaxOpenConns(benchWriters)
	sqlDB.SetMaxIdleConns(benchWriters)
	if err := db.Migrator().DropTable(&BenchPost{}, benchTable); err != nil {
		b.Fatal(err)
	}
	// The per-op path: these benchmarks measure one upsert per Increment against the same SQL by hand
	// (BenchmarkCoalescePaired measures coalescing).
	if err := db.Use(slotted.New(slotted.Config{Table: benchTable, DisableCoalescing: true})); err != nil {
		b.Fatal(err)
	}
	if err := db.AutoMigrate(&BenchPost{}); err != nil {
		b.Fatal(err)
	}
	post := BenchPost{}
	if err := db.Create(&post).Error; err != nil {
		b.Fatal(err)
	}
	return db, sqlDB, post
}

var (
	benchLogOnce sync.Once
	benchLogFile *os.File
)

// benchLog is where benchmarks' gorm loggers write: $SLOTTED_BENCH_LOG, or a file in the temp directory.
func benchLog(b *testing.B) *os.File {
	benchLogOnce.Do(func() {
		path := os.Getenv("SLOTTED_BENCH_LOG")
		if path == "" {
			path = filepath.Join(os.TempDir(), "slotted-bench.log")
		}
		var err error
		if benchLogFile, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			b.Fatal(err)
		}
	})
	return benchLogFile
}

// parallel runs fn from benchWriters goroutines.
func parallel(b *testing.B, fn func() error) { parallelN(b, benchWriters, fn) }

// BenchmarkIncrementHot compares, at 64 writers on one record and 100 slots:
//   - plugin:     slotted.Increment through gorm with a default gorm.Config;
//   - raw:        the same upsert as a database/sql prepared statement (the ceiling);
//   - single-row: UPDATE bench_posts SET plain = plain + 1 WHERE id = ? (what users run today).
func BenchmarkIncrementHot(b *testing.B) {
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			db, sqlDB, post := benchDB(b, name)
			b.Run("plugin", func(b *testing.B) {
				parallel(b, func() error {
					p := BenchPost{ID: post.ID}
					return slotted.Increment(db, &p, "likes")
				})
			})
			b.Run("raw", func(b *testing.B) {
				stmt, err := sqlDB.Prepare(rawUpsert(name))
				if err != nil {
					b.Fatal(err)
				}
				defer stmt.Close()
				id := fmt.Sprint(post.ID)
				parallel(b, func() error {
					_, err := stmt.Exec("bench_posts.likes", id, rand.IntN(slotted.DefaultSlots), 1)
					return err
				})
			})
			b.Run("single-row", func(b *testing.B) {
				q := "UPDATE bench_posts SET plain = plain + 1 WHERE id = ?"
				if name == dbPostgres {
					q = "UPDATE bench_posts SET plain = plain + 1 WHERE id = $1"
				}
				stmt, err := sqlDB.Prepare(q)
				if err != nil {
					b.Fatal(err)
				}
				defer stmt.Close()
				parallel(b, func() error {
					_, err := stmt.Exec(post.ID)
					return err
				})
			})
		})
	}
}

// rawUpsert is the hand-written upsert the plugin is measured against.
func rawUpsert(name string) string {
	switch name {
	case dbMySQL:
		return "INSERT INTO bench_counters (record_type, record_id, slot, count) VALUES (?, ?, ?, ?) " +
			"ON DUPLICATE KEY UPDATE count = count + VALUES(count)"
	case dbPostgres:
		return "INSERT INTO bench_counters (record_type, record_id, slot, count) VALUES ($1, $2, $3, $4) " +
			"ON CONFLICT (record_type, record_id, slot) DO UPDATE SET count = bench_counters.count + excluded.count"
	default:
		return "INSERT INTO bench_counters (record_type, record_id, slot, count) VALUES (?, ?, ?, ?) " +
			"ON CONFLICT (record_type, record_id, slot) DO UPDATE SET count = bench_counters.count + excluded.count"
	}
}
