package tests

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

// Page has bucketed counters; the bucket, top and order tests migrate it themselves.
type Page struct {
	ID       uint
	Title    string
	Views    int64 `gorm:"-" slotted:"views;buckets:day;slots:8"`                      // days of Config.Location
	Hits     int64 `gorm:"-" slotted:"hits;buckets:hour;slots:4"`                      // hours
	Visits   int64 `gorm:"-" slotted:"visits;buckets:day;tz:America/New_York;slots:4"` // days of New York, whatever the Config
	Recent   int64 `gorm:"-" slotted:"recent;buckets:day;keep:3;slots:4"`              // 3 days kept
	Likes    int64 `gorm:"-" slotted:"likes;slots:4"`                                  // no buckets
	Comments []PageComment
}

type PageComment struct {
	ID     uint
	PageID uint
	Body   string
	Likes  int64 `gorm:"-" slotted:"likes"`
}

func migratePages(t testing.TB, db *gorm.DB) {
	t.Helper()
	require.NoError(t, db.Migrator().DropTable(&PageComment{}, &Page{}))
	require.NoError(t, db.AutoMigrate(&Page{}, &PageComment{}))
}

// fakeClock is Config.Now for tests: a time that only the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *fakeClock { return &fakeClock{t: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// tickingClock returns start + n*step on its n-th call (from 0): every write
// reads the clock once, so the test knows how many writes fell before any instant.
type tickingClock struct {
	start time.Time
	step  time.Duration
	n     atomic.Int64
}

func (c *tickingClock) Now() time.Time {
	return c.start.Add(time.Duration(c.n.Add(1)-1) * c.step)
}

func mustLoad(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}
