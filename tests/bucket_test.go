package tests

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// The tests' own bucket arithmetic, independent of the library's: a write's
// bucket is its local date (day counters; visits are New York's days
// whatever the Config), or its UTC hour (hour counters: the zones used here
// are whole hours off UTC).
type bucketRef struct{ loc, ny *time.Location }

func (r bucketRef) zone(counter string) *time.Location {
	if counter == "visits" {
		return r.ny
	}
	return r.loc
}

func (r bucketRef) of(counter string, at time.Time) string {
	if counter == "hits" {
		return at.UTC().Truncate(time.Hour).Format("2006-01-02T15")
	}
	return at.In(r.zone(counter)).Format("2006-01-02")
}

// window lists the buckets that [from, to) overlaps, oldest first.
func (r bucketRef) window(counter string, from, to time.Time) []string {
	if !from.Before(to) {
		return nil
	}
	last := to.Add(-time.Nanosecond)
	var out []string
	if counter == "hits" {
		for h := from.UTC().Truncate(time.Hour); !h.After(last); h = h.Add(time.Hour) {
			out = append(out, h.Format("2006-01-02T15"))
		}
		return out
	}
	zone := r.zone(counter)
	y, m, d := from.In(zone).Date()
	end := last.In(zone).Format("2006-01-02")
	for i := 0; ; i++ {
		day := time.Date(y, m, d+i, 12, 0, 0, 0, zone).Format("2006-01-02")
		out = append(out, day)
		if day == end {
			return out
		}
	}
}

type bucketWrite struct {
	page    int // index into the test's pages
	counter string
	at      time.Time
	delta   int64
}

// expect sums the writes of one page's counter that fall into the window's buckets.
func (r bucketRef) expect(writes []bucketWrite, page int, counter string, from, to time.Time) int64 {
	in := map[string]bool{}
	for _, b := range r.window(counter, from, to) {
		in[b] = true
	}
	var n int64
	for _, w := range writes {
		if w.page == page && w.counter == counter && in[r.of(counter, w.at)] {
			n += w.delta
		}
	}
	return n
}

// clockSwitch lets each subtest install its own clock in a Config made before it runs.
type clockSwitch struct {
	cur atomic.Pointer[func() time.Time]
}

func (c *clockSwitch) set(now func() time.Time) { c.cur.Store(&now) }
func (c *clockSwitch) Now() time.Time           { return (*c.cur.Load())() }

func bucketZones(t *testing.T) []*time.Location {
	return []*time.Location{time.UTC, mustLoad(t, "America/New_York")}
}

// TestBucketBoundaries: a write at 23:59:59.999 and one at 00:00:00 land in two
// days, in UTC and in New York (the Config's zone, and a tz: tag option); the
// days when daylight saving time begins and ends are 23 and 25 hours long,
// and the hour repeated on the second is two buckets.
func TestBucketBoundaries(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	for _, loc := range bucketZones(t) {
		t.Run(loc.String(), func(t *testing.T) {
			clk := newClock(time.Time{})
			ref := bucketRef{loc: loc, ny: ny}
			testEachDB(t, func(t *testing.T, db *gorm.DB) {
				migratePages(t, db)
				pages := []Page{{Title: "a"}, {Title: "b"}}
				require.NoError(t, db.Create(&pages).Error)
				var writes []bucketWrite
				add := func(page int, counter string, at time.Time, delta int64) {
					t.Helper()
					clk.Set(at)
					require.NoError(t, slotted.Add(db, &pages[page], counter, delta))
					writes = append(writes, bucketWrite{page, counter, at, delta})
				}
				for _, counter := range []string{"views", "visits"} {
					zone := ref.zone(counter)
					add(0, counter, time.Date(2026, 11, 23, 23, 59, 59, 999e6, zone), 1)
					add(0, counter, time.Date(2026, 11, 24, 0, 0, 0, 0, zone), 10)
					// New York's spring-forward and fall-back days: their first and last instants.
					for _, dst := range [][2]int{{3, 8}, {11, 1}} {
						first := time.Date(2026, time.Month(dst[0]), dst[1], 0, 0, 0, 0, zone)
						next := time.Date(2026, time.Month(dst[0]), dst[1]+1, 0, 0, 0, 0, zone)
						add(1, counter, first, 100)
						add(1, counter, next.Add(-time.Millisecond), 1000)
					}
				}
				// 01:30 EDT and 01:30 EST on 2026-11-01: the same clock time an hour apart.
				add(1, "hits", time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), 7)
				add(1, "hits", time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC), 70)

				for _, counter := range []string{"views", "visits"} {
					zone := ref.zone(counter)
					day23 := time.Date(2026, 11, 23, 0, 0, 0, 0, zone)
					n, err := slotted.CountBetween(db, &pages[0], counter, day23, day23.AddDate(0, 0, 1))
					require.NoError(t, err)
					assert.EqualValues(t, 1, n, "%s: the write at 23:59:59.999 is in its day", counter)
					n, err = slotted.CountBetween(db, &pages[0], counter, day23.AddDate(0, 0, 1), day23.AddDate(0, 0, 2))
					require.NoError(t, err)
					assert.EqualValues(t, 10, n, "%s: the write at 00:00 is in the next day", counter)
					n, err = slotted.CountBetween(db, &pages[0], counter, day23.Add(12*time.Hour), day23.Add(25*time.Hour))
					require.NoError(t, err)
					assert.EqualValues(t, 11, n, "%s: a window is widened to whole buckets", counter)

					for _, dst := range []struct {
						month time.Month
						day   int
					}{{3, 8}, {11, 1}} {
						from := time.Date(2026, dst.month, dst.day-1, 0, 0, 0, 0, zone)
						series, err := slotted.Series(db, &pages[1], counter, from, from.AddDate(0, 0, 3))
						require.NoError(t, err)
						require.Len(t, series, 3)
						for i, b := range series {
							start := time.Date(2026, dst.month, dst.day-1+i, 0, 0, 0, 0, zone)
							end := time.Date(2026, dst.month, dst.day+i, 0, 0, 0, 0, zone)
							assert.True(t, b.Start.Equal(start) && b.End.Equal(end), "%s bucket %d: [%s, %s), want [%s, %s)", counter, i, b.Start, b.End, start, end)
							assert.Equal(t, ref.expect(writes, 1, counter, start, end), b.Count, "%s %s", counter, start)
						}
						assert.EqualValues(t, 1100, series[1].Count, "%s: %s's first and last instant", counter, series[1].Start)
					}
					all, err := slotted.Count(db, &pages[1], counter)
					require.NoError(t, err)
					assert.EqualValues(t, 2200, all, "the all-time total keeps every write")
				}
				if loc == ny {
					day := time.Date(2026, 11, 1, 0, 0, 0, 0, ny)
					hours, err := slotted.Series(db, &pages[1], "hits", day, day.AddDate(0, 0, 1))
					require.NoError(t, err)
					require.Len(t, hours, 25, "New York's 2026-11-01 has 25 hours")
					assert.EqualValues(t, 7, hours[1].Count, "01:00 EDT")
					assert.EqualValues(t, 70, hours[2].Count, "01:00 EST")
					assert.Equal(t, hours[1].Start.Format("15:04"), hours[2].Start.Format("15:04"))
				}

				// The slot rows are where the README says.
				var types []string
				require.NoError(t, slotted.Table(db).Distinct("record_type").Where("record_id = ?", itoa(pages[0].ID)).Order("record_type").Pluck("record_type", &types).Error)
				want := []string{"pages.views", "pages.views@" + ref.of("views", writes[0].at), "pages.views@" + ref.of("views", writes[1].at),
					"pages.visits", "pages.visits@2026-11-23", "pages.visits@2026-11-24"}
				assert.ElementsMatch(t, want, types)
			}, slotted.Config{Now: clk.Now, Location: loc})
		})
	}
}

// TestBucketRangeSums: random writes over ten days; every window's sum, series
// and batch fill equal the sums of the writes in its buckets.
func TestBucketRangeSums(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	for _, loc := range bucketZones(t) {
		t.Run(loc.String(), func(t *testing.T) {
			clk := newClock(time.Time{})
			ref := bucketRef{loc: loc, ny: ny}
			testEachDB(t, func(t *testing.T, db *gorm.DB) {
				migratePages(t, db)
				pages := []Page{{Title: "a"}, {Title: "b"}, {Title: "c"}}
				require.NoError(t, db.Create(&pages).Error)
				rng := rand.New(rand.NewPCG(11, 23))
				start := time.Date(2026, 10, 28, 0, 0, 0, 0, loc) // New York leaves daylight saving time on 11-01
				span := 10 * 24 * time.Hour
				counters := []string{"views", "hits", "visits"}
				var writes []bucketWrite
				for range 240 {
					w := bucketWrite{page: rng.IntN(len(pages)), counter: counters[rng.IntN(3)],
						at: start.Add(time.Duration(rng.Int64N(int64(span)))), delta: rng.Int64N(20) - 5}
					clk.Set(w.at)
					require.NoError(t, slotted.Add(db, &pages[w.page], w.counter, w.delta))
					writes = append(writes, w)
				}
				for i := range 30 {
					from := start.Add(time.Duration(rng.Int64N(int64(span))) - 24*time.Hour)
					to := from.Add(time.Duration(rng.Int64N(int64(4 * 24 * time.Hour))))
					if i%5 == 0 { // whole days
						from = time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, loc)
						to = from.AddDate(0, 0, 1+i%3)
					}
					for _, counter := range counters {
						for p := range pages {
							want := ref.expect(writes, p, counter, from, to)
							n, err := slotted.CountBetween(db, &pages[p], counter, from, to)
							require.NoError(t, err)
							assert.Equal(t, want, n, "%s of page %d over [%s, %s)", counter, p, from, to)
						}
						series, err := slotted.Series(db, &pages[0], counter, from, to)
						require.NoError(t, err)
						labels := ref.window(counter, from, to)
						require.Len(t, series, len(labels))
						for j, b := range series {
							assert.Equal(t, ref.expect(writes, 0, counter, b.Start, b.End), b.Count)
							assert.Equal(t, labels[j], ref.of(counter, b.Start), "bucket %d of %s", j, counter)
						}
					}
					got := []Page{{ID: pages[0].ID}, {ID: pages[1].ID}, {ID: pages[2].ID}}
					require.NoError(t, slotted.LoadBetween(db, &got, from, to))
					for p := range got {
						assert.Equal(t, ref.expect(writes, p, "views", from, to), got[p].Views)
						assert.Equal(t, ref.expect(writes, p, "hits", from, to), got[p].Hits)
						assert.Equal(t, ref.expect(writes, p, "visits", from, to), got[p].Visits)
					}
				}
				for p := range pages {
					for _, counter := range counters {
						var want int64
						for _, w := range writes {
							if w.page == p && w.counter == counter {
								want += w.delta
							}
						}
						n, err := slotted.Count(db, &pages[p], counter)
						require.NoError(t, err)
						assert.Equal(t, want, n, "all-time %s of page %d", counter, p)
					}
				}
			}, slotted.Config{Now: clk.Now, Location: loc})
		})
	}
}

// TestBucketWritersAcrossMidnight: 48 goroutines write while the clock passes
// midnight; each bucket holds exactly the writes whose clock reading fell
// into it, and the total all of them.
func TestBucketWritersAcrossMidnight(t *testing.T) {
	var sw clockSwitch
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migratePages(t, db)
		pages := []Page{{Title: "a"}, {Title: "b"}, {Title: "c"}}
		require.NoError(t, db.Create(&pages).Error)
		const writers, each = 48, 40
		midnight := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
		// The n-th clock reading (from 0) is midnight - 960ms + n ms: readings 0..959 are before midnight.
		clk := &tickingClock{start: midnight.Add(-writers * each / 2 * time.Millisecond), step: time.Millisecond}
		sw.set(clk.Now)
		var perPage [3]atomic.Int64
		for _, err := range incrementPages(db, pages, "views", writers, each, perPage[:]) {
			require.NoError(t, err)
		}
		require.EqualValues(t, writers*each, clk.n.Load(), "one clock reading per write")
		var before, after, total int64
		for p := range pages {
			b, err := slotted.CountBetween(db, &pages[p], "views", midnight.AddDate(0, 0, -1), midnight)
			require.NoError(t, err)
			a, err := slotted.CountBetween(db, &pages[p], "views", midnight, midnight.AddDate(0, 0, 1))
			require.NoError(t, err)
			all, err := slotted.Count(db, &pages[p], "views")
			require.NoError(t, err)
			assert.Equal(t, perPage[p].Load(), all, "page %d: every write in the total", p)
			assert.Equal(t, all, a+b, "page %d: the two days add up to the total", p)
			before, after, total = before+b, after+a, total+all
		}
		assert.EqualValues(t, writers*each/2, before, "writes before midnight")
		assert.EqualValues(t, writers*each/2, after, "writes from midnight")
		assert.EqualValues(t, writers*each, total)
	}, slotted.Config{Now: sw.Now})
}

// TestBucketCompactionRacingWriters: 48 writers write into yesterday (late
// writes) and today while another process compacts yesterday over and over;
// every bucket and total stays exact, and yesterday ends as one row per page.
func TestBucketCompactionRacingWriters(t *testing.T) {
	var sw clockSwitch
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migratePages(t, db)
		pages := []Page{{Title: "a"}, {Title: "b"}, {Title: "c"}}
		require.NoError(t, db.Create(&pages).Error)
		today := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
		var late, onTime atomic.Int64
		// Odd readings are a second before midnight, even ones a second after.
		var n atomic.Int64
		sw.set(func() time.Time {
			if n.Add(1)%2 == 1 {
				late.Add(1)
				return today.Add(-time.Second)
			}
			onTime.Add(1)
			return today.Add(time.Second)
		})
		// The compactor is another process: its own pool and clock (today, 00:05).
		other := openRaw(t, dialect(db))
		require.NoError(t, other.Use(slotted.New(slotted.Config{Now: func() time.Time { return today.Add(5 * time.Minute) }})))

		const writers, each = 48, 25
		stop := make(chan struct{})
		var compacted, conflicts atomic.Int64
		compactErr := make(chan error, 1)
		go func() {
			defer close(compactErr)
			for {
				select {
				case <-stop:
					return
				default:
				}
				prog, err := slotted.MaintainBuckets(other, &Page{}, slotted.BucketOptions{Closed: 1, BatchSize: 2})
				compacted.Add(int64(prog.Compacted))
				if slotted.ConflictOf(err) != slotted.NoConflict {
					// InnoDB scans a table this small whole for the compaction's
					// DELETE and waits on the total's rows that late writers hold
					// (README): the pass failed after its retries and changed
					// nothing; a Runner reports it and compacts on the next pass.
					conflicts.Add(1)
					continue
				}
				if err != nil {
					compactErr <- err
					return
				}
			}
		}()
		var perPage [3]atomic.Int64
		errs := incrementPages(db, pages, "views", writers, each, perPage[:])
		close(stop)
		require.NoError(t, <-compactErr)
		for _, err := range errs {
			require.NoError(t, err)
		}
		prog, err := slotted.MaintainBuckets(other, &Page{}, slotted.BucketOptions{Closed: 1})
		require.NoError(t, err)
		stats, _ := slotted.StatsOf(other)
		t.Logf("compacted %d counters while writing, %d after; %d passes gave up on lock conflicts, compactor stats %+v", compacted.Load(), prog.Compacted, conflicts.Load(), stats)
		assert.Positive(t, compacted.Load()+int64(prog.Compacted))

		var y, d int64
		for p := range pages {
			b, err := slotted.CountBetween(db, &pages[p], "views", today.AddDate(0, 0, -1), today)
			require.NoError(t, err)
			a, err := slotted.CountBetween(db, &pages[p], "views", today, today.AddDate(0, 0, 1))
			require.NoError(t, err)
			all, err := slotted.Count(db, &pages[p], "views")
			require.NoError(t, err)
			assert.Equal(t, perPage[p].Load(), all)
			assert.Equal(t, all, a+b)
			y, d = y+b, d+a
			var rows int64
			require.NoError(t, slotted.Table(db).Where("record_type = ? AND record_id = ?", "pages.views@2026-11-23", itoa(pages[p].ID)).Count(&rows).Error)
			assert.EqualValues(t, 1, rows, "yesterday compacted to one row")
		}
		assert.Equal(t, late.Load(), y, "yesterday holds exactly the late writes")
		assert.Equal(t, onTime.Load(), d)
	}, slotted.Config{Now: sw.Now})
}

// TestBucketRetentionRacingWriters: keep:3 deletes every bucket older than the
// three most recent, in batches, while 48 writers write into today; the kept
// buckets, today's writes and the all-time totals stay exact, and rows that
// only look like old buckets are not touched.
func TestBucketRetentionRacingWriters(t *testing.T) {
	var sw clockSwitch
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migratePages(t, db)
		pages := []Page{{Title: "a"}, {Title: "b"}, {Title: "c"}}
		require.NoError(t, db.Create(&pages).Error)
		today := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
		clk := newClock(time.Time{})
		sw.set(clk.Now)
		seeded := map[int]int64{}
		for day := -10; day <= 0; day++ {
			for p := range pages {
				for i := range 6 { // spread over the 4 slots
					clk.Set(today.AddDate(0, 0, day).Add(time.Duration(i) * time.Hour))
					require.NoError(t, slotted.Add(db, &pages[p], "recent", int64(p+1)))
				}
				seeded[p] += 6 * int64(p+1)
			}
		}
		clk.Set(today.Add(time.Hour))
		// Not buckets of "recent": another counter's rows, and a label recent never writes.
		strangers := []slotted.Ref{{Type: "pages.recent@junk", ID: "1"}, {Type: "pages.recent@2026-11", ID: "1"}, {Type: "pages.recent2", ID: "1"}}
		for _, r := range strangers {
			require.NoError(t, slotted.AddRef(db, r, 5))
		}
		other := openRaw(t, dialect(db))
		require.NoError(t, other.Use(slotted.New(slotted.Config{Now: func() time.Time { return today.Add(2 * time.Hour) }})))

		const writers, each = 48, 20
		var perPage [3]atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, writers+1)
		var expired atomic.Int64
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A pass that gave up on lock conflicts (InnoDB, small table: see the
			// compaction test) is run again, as a Runner's next pass would.
			for range 20 {
				prog, err := slotted.MaintainBuckets(other, &Page{}, slotted.BucketOptions{BatchSize: 5})
				expired.Add(int64(prog.Expired))
				if slotted.ConflictOf(err) == slotted.NoConflict {
					if err != nil {
						errs <- err
					}
					return
				}
			}
			errs <- errors.New("MaintainBuckets gave up on lock conflicts 20 times")
		}()
		for _, err := range incrementPages(db, pages, "recent", writers, each, perPage[:]) {
			require.NoError(t, err)
		}
		wg.Wait() // the maintainer
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		assert.EqualValues(t, 8, expired.Load(), "days -10 .. -3 expired")
		for p := range pages {
			all, err := slotted.Count(db, &pages[p], "recent")
			require.NoError(t, err)
			assert.Equal(t, seeded[p]+perPage[p].Load(), all, "the all-time total is not a bucket")
			kept, err := slotted.CountBetween(db, &pages[p], "recent", today.AddDate(0, 0, -2), today.AddDate(0, 0, 1))
			require.NoError(t, err)
			assert.Equal(t, 3*6*int64(p+1)+perPage[p].Load(), kept, "the three kept days")
			gone, err := slotted.CountBetween(db, &pages[p], "recent", today.AddDate(0, 0, -30), today.AddDate(0, 0, -2))
			require.NoError(t, err)
			assert.Zero(t, gone)
		}
		var old int64
		require.NoError(t, slotted.Table(db).Where("record_type >= ? AND record_type < ?", "pages.recent@2026-11-", "pages.recent@2026-11-22").Count(&old).Error)
		assert.Zero(t, old, "no slot row of an expired day is left")
		for _, r := range strangers {
			n, err := slotted.CountRef(db, r)
			require.NoError(t, err)
			assert.EqualValues(t, 5, n, "%s is not a bucket of recent", r.Type)
		}
		// A second run finds nothing more to do.
		prog, err := slotted.MaintainBuckets(other, &Page{})
		require.NoError(t, err)
		assert.Zero(t, prog.Expired)
	}, slotted.Config{Now: sw.Now})
}

// TestBucketWriteStatements: a bucketed write is one statement holding both
// rows, joins the caller's transaction, and LoadBetween reads a slice of
// records with one statement per counter.
func TestBucketWriteStatements(t *testing.T) {
	clk := newClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migratePages(t, db)
		pages := make([]Page, 25)
		for i := range pages {
			pages[i].Title = fmt.Sprint(i)
		}
		require.NoError(t, db.Create(&pages).Error)
		rec, r := recorded(db)
		require.NoError(t, slotted.Increment(rec, &pages[0], "views"))
		stmts := r.statements()
		require.Len(t, stmts, 1, "one round trip")
		assert.Contains(t, stmts[0], "pages.views@2026-11-23")
		assert.Equal(t, 2, strings.Count(stmts[0], "pages.views"), "the total's row and the bucket's: %s", stmts[0])

		err := db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, slotted.Add(tx, &pages[1], "views", 5))
			return errors.New("roll back")
		})
		require.Error(t, err)
		n, err := slotted.Count(db, &pages[1], "views")
		require.NoError(t, err)
		assert.Zero(t, n, "rolled back with the caller's transaction")

		for i := range pages {
			require.NoError(t, slotted.Add(db, &pages[i], "views", int64(i)))
			require.NoError(t, slotted.Add(db, &pages[i], "hits", int64(2*i)))
			require.NoError(t, slotted.Add(db, &pages[i], "likes", 1))
		}
		rec, r = recorded(db)
		got := make([]*Page, len(pages))
		for i := range got {
			got[i] = &Page{ID: pages[i].ID, Likes: -1}
		}
		day := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
		require.NoError(t, slotted.LoadBetween(rec, got, day, day.AddDate(0, 0, 1), "views", "hits"))
		assert.Len(t, r.statements(), 2, "one statement per counter for 25 records")
		for i, p := range got {
			want := int64(i)
			if i == 0 {
				want = 1 // the Increment above
			}
			assert.Equal(t, want, p.Views)
			assert.EqualValues(t, 2*i, p.Hits)
			assert.EqualValues(t, -1, p.Likes, "counters not named are left alone")
		}
		// A week of hours is 168 buckets: 10000/168 = 59 records per statement.
		require.NoError(t, slotted.LoadBetween(db, got, day.AddDate(0, 0, -6), day.AddDate(0, 0, 1), "hits"))
		assert.EqualValues(t, 2*24, got[24].Hits)
	}, slotted.Config{Now: clk.Now})
}

// TestBucketBadInput: bad tags, windows and arguments return their sentinel and write nothing.
func TestBucketBadInput(t *testing.T) {
	type fortnightly struct { // buckets:week is a unit since issue 20; fortnight is not
		ID uint
		X  int64 `gorm:"-" slotted:"x;buckets:fortnight"`
	}
	type nowhere struct {
		ID uint
		X  int64 `gorm:"-" slotted:"x;buckets:day;tz:Nowhere/Land"`
	}
	type keepZero struct {
		ID uint
		X  int64 `gorm:"-" slotted:"x;buckets:day;keep:0"`
	}
	type keepAlone struct {
		ID uint
		X  int64 `gorm:"-" slotted:"x;keep:3"`
	}
	type atSign struct {
		ID uint
		X  int64 `gorm:"-" slotted:"x;buckets:day;type:a@b"`
	}
	type longType struct {
		ID uint
		X  int64 `gorm:"-" slotted:"x;buckets:hour;type:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"`
	}
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migratePages(t, db)
		for _, model := range []any{&fortnightly{ID: 1}, &nowhere{ID: 1}, &keepZero{ID: 1}, &keepAlone{ID: 1}, &atSign{ID: 1}, &longType{ID: 1}} {
			assert.ErrorIs(t, slotted.Increment(db, model, "x"), slotted.ErrInvalidConfig, "%T", model)
		}
		page := Page{Title: "a"}
		require.NoError(t, db.Create(&page).Error)
		now := time.Now()
		for name, err := range map[string]error{
			"no buckets":     second(slotted.CountBetween(db, &page, "likes", now.Add(-time.Hour), now)),
			"reversed":       second(slotted.CountBetween(db, &page, "views", now, now.Add(-time.Hour))),
			"too long":       second(slotted.Series(db, &page, "hits", now.AddDate(-2, 0, 0), now)),
			"series likes":   second(slotted.Series(db, &page, "likes", now.Add(-time.Hour), now)),
			"load likes":     slotted.LoadBetween(db, &[]Page{page}, now.Add(-time.Hour), now, "likes"),
			"load reversed":  slotted.LoadBetween(db, &[]Page{page}, now, now.Add(-time.Hour)),
			"ref slots":      slotted.AddRef(db, slotted.Ref{Type: "x", ID: "1", Slots: -1}, 1),
			"ref slots high": slotted.AddRef(db, slotted.Ref{Type: "x", ID: "1", Slots: slotted.MaxSlots + 1}, 1),
			"maintain plain": second(slotted.MaintainBuckets(db, &Post{})),
		} {
			assert.ErrorIs(t, err, slotted.ErrInvalidArgument, name)
		}
		assert.ErrorIs(t, second(slotted.MaintainBuckets(db, &Page{}, slotted.BucketOptions{Closed: -1})), slotted.ErrInvalidConfig)
		assert.ErrorIs(t, second(slotted.CountBetween(db, &page, "nope", now, now)), slotted.ErrUnknownCounter)
		assert.ErrorIs(t, second(slotted.CountBetween(db, &Page{}, "views", now, now)), slotted.ErrMissingPrimaryKey)
		assert.Zero(t, counterRows(t, db), "nothing written")
		n, err := slotted.CountBetween(db, &page, "views", now, now)
		require.NoError(t, err)
		assert.Zero(t, n, "an empty window")
	})
}

func second[T any](_ T, err error) error { return err }

// TestAddRefSlots: AddRef spreads over Ref.Slots rows, which RefOf sets from the counter's slots: option.
func TestAddRefSlots(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migratePages(t, db)
		page := Page{Title: "a"}
		require.NoError(t, db.Create(&page).Error)
		ref, err := slotted.RefOf(db, &page, "likes")
		require.NoError(t, err)
		assert.Equal(t, 4, ref.Slots, "the counter's slots:4")
		plain := slotted.Ref{Type: "plain", ID: "1"}
		one := slotted.Ref{Type: "one", ID: "1", Slots: 1}
		for range 120 {
			require.NoError(t, slotted.AddRef(db, ref, 1))
			require.NoError(t, slotted.AddRef(db, plain, 1))
			require.NoError(t, slotted.AddRef(db, one, 1))
		}
		slots := func(r slotted.Ref) int64 {
			var n int64
			require.NoError(t, slotted.Table(db).Where("record_type = ? AND record_id = ?", r.Type, r.ID).Count(&n).Error)
			return n
		}
		assert.LessOrEqual(t, slots(ref), int64(4))
		assert.Greater(t, slots(ref), int64(1))
		assert.EqualValues(t, 1, slots(one))
		assert.LessOrEqual(t, slots(plain), int64(2), "Config.Slots")
		assert.Greater(t, slots(plain), int64(1))
		for _, r := range []slotted.Ref{ref, plain, one} {
			n, err := slotted.CountRef(db, r)
			require.NoError(t, err)
			assert.EqualValues(t, 120, n)
		}
	}, slotted.Config{Slots: 2})
}

// incrementPages runs writers goroutines that each Increment counter each
// times, cycling over pages from their own offset, and counts the successful
// ones per page; it returns when all have, with the error of each writer that
// stopped on one.
func incrementPages(db *gorm.DB, pages []Page, counter string, writers, each int, perPage []atomic.Int64) []error {
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				p := (w + i) % len(pages)
				if err := slotted.Increment(db, &Page{ID: pages[p].ID}, counter); err != nil {
					errs <- err
					return
				}
				perPage[p].Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}
