package slottedprom_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/ncruces/go-sqlite3/embed" // SQLite itself, compiled to WebAssembly
	"github.com/ncruces/go-sqlite3/gormlite"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	gormprom "gorm.io/plugin/prometheus"

	"github.com/slotted-go/slotted"
	slottedprom "github.com/slotted-go/slotted/prometheus"
)

type post struct {
	ID    uint
	Likes int64 `gorm:"-" slotted:"likes;slots:4"`
}

func scrape(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s\n%s", res.Status, body)
	}
	return string(body)
}

// TestScrape registers the collector through gorm's Prometheus plugin (its
// db_name label included) on a registry served over HTTP, runs coalesced
// writes from 32 goroutines and a Buffer on SQLite, and checks the scraped
// values: exact write counts, one statement per batch, the buffer's totals.
func TestScrape(t *testing.T) {
	dsn := "file:" + filepath.Join(t.TempDir(), "prom.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	db, err := gorm.Open(gormlite.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	defer sqlDB.Close()
	if err := db.Use(slotted.New(slotted.Config{})); err != nil {
		t.Fatal(err)
	}
	if err := db.AutoMigrate(&post{}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	c := slottedprom.New(db, slottedprom.Options{Registerer: reg})
	if err := db.Use(gormprom.New(gormprom.Config{DBName: "app", RefreshInterval: 3600, MetricsCollector: []gormprom.MetricsCollector{c}})); err != nil {
		t.Fatal(err)
	}

	p := post{}
	if err := db.Create(&p).Error; err != nil {
		t.Fatal(err)
	}
	const writers, each = 32, 20
	var wg sync.WaitGroup
	var failed sync.Map
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if err := slotted.Increment(db, &post{ID: p.ID}, "likes"); err != nil {
					failed.Store(w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	failed.Range(func(k, v any) bool { t.Fatalf("writer %v: %v", k, v); return false })

	buf, err := slotted.NewBuffer(db, slotted.BufferOptions{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c.WatchBuffer(buf, "views")
	for range 10 {
		if err := buf.Add(&post{ID: p.ID}, "likes", 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := buf.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"a", "b", "a"} {
		if _, err := slotted.AddOnce(db, &post{ID: p.ID}, "likes", 1, key); err != nil {
			t.Fatal(err)
		}
	}

	body := scrape(t, reg)
	stats, err := slotted.StatsOf(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf(`slotted_writes_total{db_name="app"} %d`, writers*each+3), // and the AddOnce calls, coalesced too
		fmt.Sprintf(`slotted_batches_total{db_name="app"} %d`, stats.Batches),
		`slotted_writes_waiting{db_name="app"} 0`,
		`slotted_retries_total{db_name="app"} 0`,
		`slotted_conflicts_total{db_name="app",kind="busy"} 0`,
		`slotted_buffer_written_total{buffer="views",db_name="app"} 10`,
		`slotted_buffer_pending{buffer="views",db_name="app"} 0`,
		`slotted_buffer_flush_errors_total{buffer="views",db_name="app"} 0`,
		`slotted_once_total{db_name="app",outcome="applied"} 2`,
		`slotted_once_total{db_name="app",outcome="duplicate"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("scrape lacks %q:\n%s", want, body)
		}
	}
	var statements uint64
	for rows, n := range stats.BatchRows {
		statements += n
		if want := fmt.Sprintf(`slotted_batch_statements_total{db_name="app",rows="%d"} %d`, rows, n); !strings.Contains(body, want+"\n") {
			t.Errorf("scrape lacks %q", want)
		}
	}
	if statements != stats.Batches || stats.Batches == 0 {
		t.Errorf("statements by rows %d, batches %d", statements, stats.Batches)
	}
	n, err := slotted.Count(db, &post{ID: p.ID}, "likes")
	if err != nil || n != writers*each+10+2 {
		t.Fatalf("count %d, %v", n, err)
	}
}

// TestCollectorAlone: without gorm's plugin the Collector registers like any other.
func TestCollectorAlone(t *testing.T) {
	db, err := gorm.Open(gormlite.Open("file:"+filepath.Join(t.TempDir(), "alone.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	defer sqlDB.Close()
	if err := db.Use(slotted.New(slotted.Config{})); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(slottedprom.New(db, slottedprom.Options{Namespace: "app_counters", Labels: prometheus.Labels{"service": "api"}}))
	if err := slotted.AddRef(db, slotted.Ref{Type: "posts.likes", ID: "1"}, 3); err != nil {
		t.Fatal(err)
	}
	body := scrape(t, reg)
	if want := `app_counters_writes_total{service="api"} 1` + "\n"; !strings.Contains(body, want) {
		t.Errorf("scrape lacks %q:\n%s", want, body)
	}
}
