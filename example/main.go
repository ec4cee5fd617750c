// Command example hammers a few posts with concurrent likes through the
// slotted plugin and checks that every total comes out exact.
//
//	go run ./example                                   # a throwaway SQLite file
//	go run ./example -dsn 'root@tcp(127.0.0.1:3306)/slotted_test?parseTime=true'
//	go run ./example -dsn 'host=127.0.0.1 user=postgres dbname=slotted_test sslmode=disable'
//
// It prints each post's expected likes next to slotted.Count and the Likes
// field auto-filled by db.Find, the slot rows of the hottest post, and one
// example of each statement the plugin ran. It exits non-zero if any total is off.
//
// On a DSN of your own it drops and recreates its own tables, example_posts
// and example_counters, so every run starts from zero.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	_ "github.com/ncruces/go-sqlite3/embed" // SQLite itself, compiled to WebAssembly
	"github.com/ncruces/go-sqlite3/gormlite"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// counterTable is the example's own counter table, so it never touches a
// real application's slotted_counters.
const counterTable = "example_counters"

// Post is the example model. Likes is not a column: the plugin keeps it in
// example_counters and fills it after First/Find.
type Post struct {
	ID    uint
	Title string
	Likes int64 `gorm:"-" slotted:"likes"`
}

// TableName keeps the example's table apart from an application's posts.
func (Post) TableName() string { return "example_posts" }

func main() {
	log.SetFlags(0)
	log.SetPrefix("example: ")
	dsn := flag.String("dsn", "", `database to use: "postgres://..." or "host=..." (PostgreSQL), "...@tcp(...)..." (MySQL/MariaDB), else a SQLite file; empty: a temporary SQLite file`)
	workers := flag.Int("workers", 64, "concurrent goroutines liking posts")
	likes := flag.Int("likes", 200, "likes per worker")
	posts := flag.Int("posts", 3, "number of posts")
	flag.Parse()
	if *workers < 1 || *likes < 0 || *posts < 1 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*dsn, *workers, *likes, *posts); err != nil {
		log.Fatal(err)
	}
}

func run(dsn string, workers, likesPerWorker, numPosts int) error {
	dialector, where, cleanup, err := open(dsn)
	if err != nil {
		return err
	}
	defer cleanup()

	rec := newRecorder(counterTable, Post{}.TableName())
	db, err := gorm.Open(dialector, &gorm.Config{Logger: rec})
	if err != nil {
		return fmt.Errorf("opening %s: %w", where, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	if db.Dialector.Name() != "sqlite" {
		// One connection per worker, within PostgreSQL's default max_connections of 100.
		sqlDB.SetMaxOpenConns(min(workers, 64))
	} else if strings.Contains(dsn, ":memory:") || strings.Contains(dsn, "mode=memory") {
		sqlDB.SetMaxOpenConns(1) // each connection would get its own empty in-memory database
	}

	// Start from zero: drop the example's own tables, then let db.Use create
	// the counter table and AutoMigrate the posts table.
	if err := db.Migrator().DropTable(&Post{}, counterTable); err != nil {
		return fmt.Errorf("dropping the example's tables: %w", err)
	}
	plugin := slotted.New(slotted.Config{Table: counterTable})
	if err := db.Use(plugin); err != nil {
		return err
	}
	if err := db.AutoMigrate(&Post{}); err != nil {
		return err
	}
	all := make([]Post, numPosts)
	for i := range all {
		all[i].Title = fmt.Sprintf("post #%d", i+1)
	}
	if err := db.Create(&all).Error; err != nil {
		return fmt.Errorf("creating posts: %w", err)
	}

	fmt.Printf("slotted example on %s (%s)\n", db.Dialector.Name(), where)
	fmt.Printf("%d workers x %d likes over %d posts, %d slots per counter\n",
		workers, likesPerWorker, numPosts, plugin.Config().Slots)

	// Like the posts concurrently. Each worker picks post i with probability
	// about 1/2^(i+1), so post #1 is the hottest; expected counts every like
	// that succeeded.
	expected := make([]atomic.Int64, numPosts)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		wg       sync.WaitGroup
		firstErr error
		errOnce  sync.Once
	)
	start := time.Now()
	for range workers {
		wg.Go(func() {
			wdb := db.WithContext(ctx)
			mine := make([]Post, numPosts) // Increment moves the model's field: one copy per worker
			for i := range mine {
				mine[i].ID = all[i].ID
			}
			for range likesPerWorker {
				i := 0
				for i < numPosts-1 && rand.IntN(2) == 0 {
					i++
				}
				if err := slotted.Increment(wdb, &mine[i], "likes"); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				expected[i].Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return fmt.Errorf("liking: %w", firstErr)
	}
	total := int64(workers) * int64(likesPerWorker)
	fmt.Printf("%d likes in %v (%.0f likes/s)\n\n", total, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds())

	// Read the totals back two ways: slotted.Count (one SUM per post) and the
	// Likes field auto-filled by Find (one GROUP BY for all posts).
	var found []Post
	if err := db.Order("id").Find(&found).Error; err != nil {
		return fmt.Errorf("finding posts: %w", err)
	}
	if len(found) != numPosts {
		return fmt.Errorf("found %d posts, want %d", len(found), numPosts)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "post\texpected\tslotted.Count\tFind Likes\texact\t")
	wrong, hottest := 0, 0
	for i := range all {
		want := expected[i].Load()
		count, err := slotted.Count(db, &all[i], "likes")
		if err != nil {
			return fmt.Errorf("counting %s: %w", all[i].Title, err)
		}
		exact := "yes"
		if count != want || found[i].Likes != want || found[i].ID != all[i].ID {
			exact = "NO"
			wrong++
		}
		if want > expected[hottest].Load() {
			hottest = i
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t\n", all[i].Title, want, count, found[i].Likes, exact)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if err := printSlots(db, &all[hottest]); err != nil {
		return err
	}
	rec.print()

	if wrong > 0 {
		return fmt.Errorf("%d of %d totals are off", wrong, numPosts)
	}
	fmt.Printf("\nall %d totals exact\n", numPosts)
	return nil
}

// open picks the driver from the DSN's shape. cleanup removes the temporary
// SQLite directory, if one was made.
func open(dsn string) (d gorm.Dialector, where string, cleanup func(), err error) {
	cleanup = func() {}
	switch {
	case strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") || strings.Contains(dsn, "host="):
		return postgres.Open(dsn), "server DSN", cleanup, nil
	case strings.Contains(dsn, "@tcp("):
		return mysql.Open(dsn), "server DSN", cleanup, nil
	}
	where = dsn
	if dsn == "" {
		dir, err := os.MkdirTemp("", "slotted-example-")
		if err != nil {
			return nil, "", cleanup, err
		}
		cleanup = func() { _ = os.RemoveAll(dir) }
		where = filepath.Join(dir, "example.db")
		dsn = "file:" + where
	}
	// Concurrent writers wait for SQLite's single write lock instead of
	// failing at once with SQLITE_BUSY; WAL lets readers run beside them.
	// The example runs SQLite through a pure-Go driver (SQLite compiled to
	// WebAssembly), so a first `go run ./example` needs no C compiler and does
	// not spend a minute compiling SQLite's C source; the plugin works the same
	// with gorm.io/driver/sqlite (the suite runs on both; see README).
	for _, param := range []string{"_pragma=busy_timeout(10000)", "_pragma=journal_mode(WAL)"} {
		if name, _, _ := strings.Cut(param, "("); !strings.Contains(dsn, name+"(") {
			sep := "?"
			if strings.Contains(dsn, "?") {
				sep = "&"
			}
			dsn += sep + param
		}
	}
	return gormlite.Open(dsn), where, cleanup, nil
}

// printSlots summarises the slot rows behind one post's likes.
func printSlots(db *gorm.DB, post *Post) error {
	ref, err := slotted.RefOf(db, post, "likes")
	if err != nil {
		return err
	}
	var rows []slotted.SlottedCounter
	err = slotted.Table(db).Where("record_type = ? AND record_id = ?", ref.Type, ref.ID).Order("slot").Find(&rows).Error
	if err != nil {
		return fmt.Errorf("reading slot rows: %w", err)
	}
	fmt.Printf("\nslot rows of the hottest post, %s (record_type %q, record_id %q):\n", post.Title, ref.Type, ref.ID)
	if len(rows) == 0 {
		fmt.Println("  none")
		return nil
	}
	lo, hi, sum := rows[0].Count, rows[0].Count, int64(0)
	for _, r := range rows {
		lo, hi, sum = min(lo, r.Count), max(hi, r.Count), sum+r.Count
	}
	fmt.Printf("  %d rows, count min %d, max %d, sum %d\n  ", len(rows), lo, hi, sum)
	for i, r := range rows[:min(len(rows), 10)] {
		if i > 0 {
			fmt.Print(", ")
		}
		fmt.Printf("slot %d: %d", r.Slot, r.Count)
	}
	if len(rows) > 10 {
		fmt.Print(", ...")
	}
	fmt.Println()
	return nil
}

// recorder is a gorm logger that sorts statements into the kinds worth
// showing and keeps the first example of each, with its values inlined.
type recorder struct {
	counters  string         // the counter table's name
	fromPosts *regexp.Regexp // matches "FROM <posts table>", quoted or not

	mu     sync.Mutex
	kinds  map[string]*kind
	others int
}

type kind struct {
	example      string
	ok, failures int
}

// kindOrder is the order statements are printed in, with a caption each.
var kindOrder = []struct{ name, caption string }{
	{"upsert", "Increment: one upsert into a random slot"},
	{"sum", "Count: one SUM over the slot rows"},
	{"load", "Find auto-fill (and Load): one GROUP BY for all posts"},
	{"find", "Find: the posts' own query; Likes is not a column"},
}

func newRecorder(counters, posts string) *recorder {
	from := regexp.MustCompile(`(?i)\bFROM\s+[` + "`" + `"]?` + regexp.QuoteMeta(posts) + "[`" + `"]?(\s|$)`)
	return &recorder{counters: counters, fromPosts: from, kinds: map[string]*kind{}}
}

func (r *recorder) classify(sql string) string {
	s := strings.ToUpper(strings.TrimSpace(sql))
	counters := strings.Contains(sql, r.counters)
	switch {
	case counters && strings.HasPrefix(s, "INSERT"):
		return "upsert"
	case counters && strings.Contains(s, "COALESCE(SUM("):
		return "sum"
	case counters && strings.Contains(s, "GROUP BY"):
		return "load"
	case !counters && strings.HasPrefix(s, "SELECT") && r.fromPosts.MatchString(sql):
		return "find"
	}
	return ""
}

func (r *recorder) LogMode(logger.LogLevel) logger.Interface { return r }
func (r *recorder) Info(context.Context, string, ...any)     {}
func (r *recorder) Warn(context.Context, string, ...any)     {}
func (r *recorder) Error(context.Context, string, ...any)    {}
func (r *recorder) Trace(_ context.Context, _ time.Time, fc func() (string, int64), err error) {
	sql, _ := fc()
	name := r.classify(sql)
	r.mu.Lock()
	defer r.mu.Unlock()
	if name == "" {
		r.others++
		return
	}
	k := r.kinds[name]
	if k == nil {
		k = &kind{}
		r.kinds[name] = k
	}
	switch {
	case err == nil || errors.Is(err, gorm.ErrRecordNotFound):
		k.ok++
		if k.example == "" {
			k.example = sql
		}
	default:
		k.failures++ // retried by the plugin, or returned to the caller
	}
}

func (r *recorder) print() {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Println("\nSQL the plugin ran (one example of each kind, values inlined):")
	for _, ko := range kindOrder {
		k := r.kinds[ko.name]
		if k == nil {
			continue
		}
		ran := plural(k.ok, "statement")
		if k.failures > 0 {
			ran += ", " + plural(k.failures, "failed attempt")
		}
		fmt.Printf("  %s (%s):\n    %s\n", ko.caption, ran, k.example)
	}
	fmt.Printf("  plus %s: migrations, creating the posts, reading the slot rows\n", plural(r.others, "other statement"))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
