// Command blog is a small blog API on net/http that counts with slotted:
// likes one per user (AddOnce, "liked by me" by AppliedMany), views per day
// with a 7-day sparkline (buckets:day, SeriesMany over LastDays(7)), comment
// counts kept by a CounterCache, a listing sorted by likes with offset and
// cursor pagination (List, exact or fast), and "trending this week"
// (Trending, a score that halves every day). Writes run under MustExist, so
// a write to a missing post answers 404 and writes nothing.
//
//	go run ./example/blog                                   # SQLite in a temporary file, http://127.0.0.1:8080/
//	go run ./example/blog -dsn 'root@tcp(127.0.0.1:3306)/blog?parseTime=true'
//	go run ./example/blog -dsn 'host=127.0.0.1 user=postgres dbname=blog sslmode=disable'
//	go run ./example/blog -check -addr 127.0.0.1:18040      # serve, drive it with concurrent clients, check every figure
//
// With -check it serves on -addr, sends concurrent requests over HTTP, keeps
// its own tally of every like, view and comment, then reads every figure back
// (post pages, both listings, trending) and exits non-zero on any mismatch.
//
// It drops and recreates its own tables (blog_posts, blog_comments,
// blog_counters, blog_once) at start.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "github.com/ncruces/go-sqlite3/embed" // SQLite itself, compiled to WebAssembly
	"github.com/ncruces/go-sqlite3/gormlite"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// Post is a blog post. Its counters live in blog_counters; LikesCount is
// the likes' cache column, which the fast listing sorts by (rolled up by a
// Runner every -rollup).
type Post struct {
	ID         uint `gorm:"primaryKey;index:idx_blog_posts_likes,priority:2"`
	Title      string
	Likes      int64 `gorm:"-" slotted:"likes;cache:likes_count"`
	LikesCount int64 `gorm:"index:idx_blog_posts_likes,priority:1"` // (likes_count, id): the fast listing's order and cursor
	Views      int64 `gorm:"-" slotted:"views;buckets:day;keep:30"`
	Comments   int64 `gorm:"-" slotted:"comments"`
	Thread     []Comment
}

func (Post) TableName() string { return "blog_posts" }

// Comment belongs to a post; creating or deleting one moves Post.Comments
// in the same transaction (CounterCache).
type Comment struct {
	ID     uint
	PostID uint `gorm:"index"`
	Body   string
}

func (Comment) TableName() string { return "blog_comments" }

const (
	counterTable = "blog_counters"
	onceTable    = "blog_once"
	days         = 7   // the sparkline and "trending this week"
	halfLife     = 1.0 // trending: yesterday's views weigh half, the day before a quarter
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("blog: ")
	dsn := flag.String("dsn", "", `database: "host=..." or "postgres://..." (PostgreSQL), "...@tcp(...)..." (MariaDB/MySQL), else a SQLite file; empty: a temporary SQLite file`)
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	posts := flag.Int("posts", 12, "posts created at start")
	rollup := flag.Duration("rollup", 2*time.Second, "how often the Runner rolls likes up into likes_count (the fast listing's staleness)")
	check := flag.Bool("check", false, "serve, drive the server with concurrent HTTP clients, check every figure, exit")
	clients := flag.Int("clients", 16, "-check: concurrent clients")
	users := flag.Int("users", 24, "-check: distinct users")
	flag.Parse()
	if *posts < 1 || *clients < 1 || *users < 1 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*dsn, *addr, *posts, *rollup, *check, *clients, *users); err != nil {
		log.Fatal(err)
	}
}

// clock is the counters' clock (Config.Now). -check freezes it at noon and
// moves it back a day at a time to write a week of views.
type clock struct {
	mu     sync.Mutex
	frozen time.Time // zero: the wall clock
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen.IsZero() {
		return time.Now()
	}
	return c.frozen
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.frozen = t
	c.mu.Unlock()
}

func run(dsn, addr string, numPosts int, rollup time.Duration, check bool, clients, users int) error {
	dialector, where, cleanup, err := open(dsn)
	if err != nil {
		return err
	}
	defer cleanup()
	db, err := gorm.Open(dialector, &gorm.Config{Logger: logger.New(log.New(os.Stderr, "", log.LstdFlags),
		logger.Config{SlowThreshold: 2 * time.Second, LogLevel: logger.Warn, IgnoreRecordNotFoundError: true})})
	if err != nil {
		return fmt.Errorf("opening %s: %w", where, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	if db.Dialector.Name() != "sqlite" {
		sqlDB.SetMaxOpenConns(8) // PostgreSQL's max_connections (100) is shared
	} else {
		sqlDB.SetMaxOpenConns(4) // one writer at a time anyway: fewer connections waiting on the lock, less time in busy waits
	}
	if err := db.Migrator().DropTable(&Comment{}, &Post{}, counterTable, onceTable); err != nil {
		return fmt.Errorf("dropping the blog's tables: %w", err)
	}
	clk := &clock{}
	if err := db.Use(slotted.New(slotted.Config{Table: counterTable, OnceTable: onceTable, Now: clk.Now})); err != nil {
		return err
	}
	if err := db.AutoMigrate(&Post{}, &Comment{}); err != nil {
		return err
	}
	if err := slotted.CounterCache(db, &Post{}, "Thread", "comments"); err != nil {
		return err
	}
	all := make([]Post, numPosts)
	for i := range all {
		all[i].Title = fmt.Sprintf("Post #%d", i+1)
	}
	if err := db.Create(&all).Error; err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if check {
		rollup = min(rollup, 250*time.Millisecond) // the fast listing's check waits for a roll-up
	}
	runner := slotted.Runner{Interval: rollup, RollUp: []any{&Post{}}, OnError: func(err error) { log.Print("runner: ", err) }}
	go func() { _ = runner.Run(ctx, db) }()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: (&app{db: db}).routes(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Print(err)
		}
	}()
	defer srv.Close()
	fmt.Printf("blog on %s (%s): http://%s/\n", db.Dialector.Name(), where, ln.Addr())
	if check {
		return runCheck("http://"+ln.Addr().String(), clk, all, clients, users)
	}
	select {}
}

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
		dir, err := os.MkdirTemp("", "slotted-blog-")
		if err != nil {
			return nil, "", cleanup, err
		}
		cleanup = func() { _ = os.RemoveAll(dir) }
		where = filepath.Join(dir, "blog.db")
		dsn = "file:" + where
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	// Writers wait for SQLite's one write lock rather than fail with SQLITE_BUSY; WAL lets readers run beside them.
	return gormlite.Open(dsn + sep + "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"), where, cleanup, nil
}
