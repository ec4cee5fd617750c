package tests

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// Listed is the listing tests' model: likes with a cache column (fast and
// exact), shares without one (exact only), views per day (windows, trending).
type Listed struct {
	ID         uint
	Grp        int
	Likes      int64 `gorm:"-" slotted:"likes;slots:4;cache:likes_count"`
	LikesCount int64 `gorm:"index:idx_listed_likes_count,priority:1"`
	Shares     int64 `gorm:"-" slotted:"shares;slots:3"`
	Views      int64 `gorm:"-" slotted:"views;buckets:day;slots:3"`
}

func migrateListed(t testing.TB, db *gorm.DB) {
	t.Helper()
	require.NoError(t, db.Migrator().DropTable(&Listed{}))
	require.NoError(t, db.AutoMigrate(&Listed{}))
}

// order sorts ids by total, largest first and ties the larger id first (asc: the reverse).
func order(ids []uint, total func(uint) int64, asc bool) []uint {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b uint) int {
		c := cmp.Or(cmp.Compare(total(b), total(a)), cmp.Compare(b, a))
		if asc {
			return -c
		}
		return c
	})
	return out
}

// pageAll walks a listing with cursors (or offsets), page size 7, and returns the ids and totals in order.
func pageAll(t *testing.T, db *gorm.DB, counter string, opts slotted.ListOptions, offsets bool) ([]uint, []int64) {
	t.Helper()
	var ids []uint
	var totals []int64
	opts.Limit = 7
	for range 100 {
		page, err := slotted.List(db, &Listed{}, counter, opts)
		require.NoError(t, err)
		require.Len(t, page.Totals, len(page.Items))
		for i, it := range page.Items {
			ids, totals = append(ids, it.ID), append(totals, page.Totals[i])
		}
		if offsets {
			if len(page.Items) < 7 {
				return ids, totals
			}
			opts.Offset += 7
			continue
		}
		if page.Next == "" {
			return ids, totals
		}
		require.Len(t, page.Items, 7, "a page with a Next is full")
		opts.After = page.Next
	}
	t.Fatal("listing did not end")
	return nil, nil
}

func TestListBruteForce(t *testing.T) {
	clk := newClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migrateListed(t, db)
		rng := rand.New(rand.NewPCG(7, 1))
		recs := make([]Listed, 60)
		for i := range recs {
			recs[i].Grp = i % 3
		}
		require.NoError(t, db.Create(&recs).Error)
		likes, shares, views := map[uint]int64{}, map[uint]int64{}, map[uint]int64{}
		from, to := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
		var ids []uint
		for i := range recs {
			r := &recs[i]
			ids = append(ids, r.ID)
			if i%9 == 4 {
				continue // no rows: ranks as 0
			}
			for range 2 {
				d := rng.Int64N(8) - 2 // small: many ties, some negative
				require.NoError(t, slotted.Add(db, r, "likes", d))
				likes[r.ID] += d
				d = rng.Int64N(5)
				require.NoError(t, slotted.Add(db, r, "shares", d))
				shares[r.ID] += d
				at := time.Date(2026, 11, 18, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(6 * 24 * time.Hour))))
				clk.Set(at)
				d = rng.Int64N(6)
				require.NoError(t, slotted.Add(db, r, "views", d))
				if !at.Before(from) && at.Before(to) {
					views[r.ID] += d
				}
			}
		}
		_, err := slotted.RollUpAll(db, &Listed{})
		require.NoError(t, err)
		cached := copyTotals(likes)
		// Writes after the roll-up: the fast path does not see them, the exact path does.
		for i := 0; i < len(recs); i += 5 {
			require.NoError(t, slotted.Add(db, &recs[i], "likes", 3))
			likes[recs[i].ID] += 3
		}
		get := func(m map[uint]int64) func(uint) int64 { return func(id uint) int64 { return m[id] } }
		cases := []struct {
			name    string
			counter string
			opts    slotted.ListOptions
			want    map[uint]int64
			read    slotted.Read
		}{
			{"exact", "likes", slotted.ListOptions{Read: slotted.ReadExact}, likes, slotted.ReadExact},
			{"exact/asc", "likes", slotted.ListOptions{Read: slotted.ReadExact, Ascending: true}, likes, slotted.ReadExact},
			{"fast", "likes", slotted.ListOptions{Read: slotted.ReadFast}, cached, slotted.ReadFast},
			{"auto=fast/asc", "likes", slotted.ListOptions{Ascending: true}, cached, slotted.ReadFast},
			{"auto=exact(no cache)", "shares", slotted.ListOptions{}, shares, slotted.ReadExact},
			{"window", "views", slotted.ListOptions{From: from, To: to}, views, slotted.ReadExact},
		}
		for _, c := range cases {
			want := order(ids, get(c.want), c.opts.Ascending)
			for _, offsets := range []bool{false, true} {
				got, totals := pageAll(t, db, c.counter, c.opts, offsets)
				require.Equal(t, want, got, "%s offsets=%v", c.name, offsets)
				for i, id := range got {
					require.Equal(t, c.want[id], totals[i], "%s: total of %d", c.name, id)
				}
			}
			page, err := slotted.List(db, &Listed{}, c.counter, slotted.ListOptions{Limit: 5, Read: c.opts.Read, Ascending: c.opts.Ascending, From: c.opts.From, To: c.opts.To})
			require.NoError(t, err)
			require.Equal(t, c.read, page.Read, c.name)
			for _, it := range page.Items {
				switch c.counter {
				case "likes":
					require.Equal(t, likes[it.ID], it.Likes, "%s: the field is filled live", c.name)
				case "views":
					require.Equal(t, views[it.ID], it.Views, "%s: the field holds the window's total", c.name)
				}
			}
		}
		// The caller's conditions select the candidates.
		var grp1 []uint
		for _, r := range recs {
			if r.Grp == 1 {
				grp1 = append(grp1, r.ID)
			}
		}
		got, _ := pageAll(t, db.Where("grp = ?", 1), "likes", slotted.ListOptions{Read: slotted.ReadExact}, false)
		require.Equal(t, order(grp1, get(likes), false), got)
		got, _ = pageAll(t, db.Where("grp = ?", 1), "likes", slotted.ListOptions{Read: slotted.ReadFast}, false)
		require.Equal(t, order(grp1, get(cached), false), got)
	}, slotted.Config{Now: clk.Now})
}

func copyTotals(m map[uint]int64) map[uint]int64 {
	out := make(map[uint]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestListRefusesBadOptions(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migrateListed(t, db)
		recs := []Listed{{}, {}, {}}
		require.NoError(t, db.Create(&recs).Error)
		first, err := slotted.List(db, &Listed{}, "likes", slotted.ListOptions{Limit: 1, Read: slotted.ReadExact})
		require.NoError(t, err)
		require.NotEmpty(t, first.Next)
		rec, r := recorded(db)
		for name, call := range map[string]func() error{
			"limit 0": func() error { _, err := slotted.List(rec, &Listed{}, "likes"); return err },
			"limit too big": func() error {
				_, err := slotted.List(rec, &Listed{}, "likes", slotted.ListOptions{Limit: slotted.MaxPageSize + 1})
				return err
			},
			"negative offset": func() error {
				_, err := slotted.List(rec, &Listed{}, "likes", slotted.ListOptions{Limit: 3, Offset: -1})
				return err
			},
			"offset and after": func() error {
				_, err := slotted.List(rec, &Listed{}, "likes", slotted.ListOptions{Limit: 3, Offset: 1, After: first.Next, Read: slotted.ReadExact})
				return err
			},
			"fast without cache": func() error {
				_, err := slotted.List(rec, &Listed{}, "shares", slotted.ListOptions{Limit: 3, Read: slotted.ReadFast})
				return err
			},
			"fast with a window": func() error {
				_, err := slotted.List(rec, &Listed{}, "views", slotted.ListOptions{Limit: 3, Read: slotted.ReadFast, From: time.Now(), To: time.Now()})
				return err
			},
			"window, no buckets": func() error {
				_, err := slotted.List(rec, &Listed{}, "likes", slotted.ListOptions{Limit: 3, From: time.Now(), To: time.Now()})
				return err
			},
			"garbage cursor": func() error {
				_, err := slotted.List(rec, &Listed{}, "likes", slotted.ListOptions{Limit: 3, After: "%%%"})
				return err
			},
			"cursor of exact, fast": func() error {
				_, err := slotted.List(rec, &Listed{}, "likes", slotted.ListOptions{Limit: 3, After: first.Next, Read: slotted.ReadFast})
				return err
			},
			"cursor of asc": func() error {
				_, err := slotted.List(rec, &Listed{}, "likes", slotted.ListOptions{Limit: 3, After: first.Next, Read: slotted.ReadExact, Ascending: true})
				return err
			},
			"cursor of a list, trending": func() error {
				_, err := slotted.Trending(rec, &Listed{}, "views", slotted.TrendOptions{Buckets: 3, HalfLife: 1, Limit: 3, After: first.Next})
				return err
			},
			"trending, no buckets": func() error {
				_, err := slotted.Trending(rec, &Listed{}, "likes", slotted.TrendOptions{Buckets: 3, HalfLife: 1, Limit: 3})
				return err
			},
			"trending, 0 buckets": func() error {
				_, err := slotted.Trending(rec, &Listed{}, "views", slotted.TrendOptions{HalfLife: 1, Limit: 3})
				return err
			},
			"trending, half-life": func() error {
				_, err := slotted.Trending(rec, &Listed{}, "views", slotted.TrendOptions{Buckets: 3, HalfLife: math.NaN(), Limit: 3})
				return err
			},
		} {
			err := call()
			require.ErrorIs(t, err, slotted.ErrInvalidArgument, name)
		}
		assert.Empty(t, r.statements(), "bad options send nothing")
		_, err = slotted.List(db, &Listed{}, "nope", slotted.ListOptions{Limit: 3})
		require.ErrorIs(t, err, slotted.ErrUnknownCounter)
	})
}

// TestListStableUnderWrites pages through the exact and the fast listing
// while writers move half of the records (and RollUpAll refreshes the cache
// column): every record whose total does not change appears exactly once, in
// its place, with its total.
func TestListStableUnderWrites(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migrateListed(t, db)
		recs := make([]Listed, 120)
		require.NoError(t, db.Create(&recs).Error)
		stable := map[uint]int64{}
		var moving []Listed
		for i := range recs {
			n := int64(i*37%23) - 3
			require.NoError(t, slotted.Add(db, &recs[i], "likes", n))
			if i%2 == 0 {
				stable[recs[i].ID] = n
			} else {
				moving = append(moving, recs[i])
			}
		}
		_, err := slotted.RollUpAll(db, &Listed{})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		var writes atomic.Int64
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 9))
				for ctx.Err() == nil {
					r := moving[rng.IntN(len(moving))]
					if err := slotted.Add(db, &Listed{ID: r.ID}, "likes", rng.Int64N(41)-20); err != nil {
						t.Error(err)
						return
					}
					writes.Add(1)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := slotted.RollUpAll(db, &Listed{}, slotted.RollUpOptions{BatchSize: 25}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		for writes.Load() < 50 { // the writers are running
			time.Sleep(time.Millisecond)
		}
		before := writes.Load()
		// At least 3 rounds, and until the writers have moved records while
		// paging (on a loaded machine they may get little time): bounded.
		deadline := time.Now().Add(30 * time.Second)
		for round := 0; round < 3 || (writes.Load() <= before+100 && time.Now().Before(deadline)); round++ {
			for _, read := range []slotted.Read{slotted.ReadExact, slotted.ReadFast} {
				for _, asc := range []bool{false, true} {
					ids, totals := pageAll(t, db, "likes", slotted.ListOptions{Read: read, Ascending: asc}, false)
					seen := map[uint]int{}
					var got []uint
					for i, id := range ids {
						if want, ok := stable[id]; ok {
							seen[id]++
							got = append(got, id)
							require.Equal(t, want, totals[i], "round %d %s: total of stable %d", round, read, id)
						}
					}
					var all []uint
					for id := range stable {
						all = append(all, id)
						require.Equal(t, 1, seen[id], "round %d %s asc=%v: stable record %d seen %d times", round, read, asc, id, seen[id])
					}
					require.Equal(t, order(all, func(id uint) int64 { return stable[id] }, asc), got)
				}
			}
		}
		require.Greater(t, writes.Load(), before+100, "writers ran while paging")
	})
}

func TestTrendingBruteForce(t *testing.T) {
	now := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	clk := newClock(now)
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migrateListed(t, db)
		recs := make([]Listed, 40)
		require.NoError(t, db.Create(&recs).Error)
		rng := rand.New(rand.NewPCG(3, 3))
		const days, halfLife = 7, 2.0
		score, plain := map[uint]float64{}, map[uint]int64{}
		var ids []uint
		for i := range recs {
			ids = append(ids, recs[i].ID)
			if i%8 == 5 {
				continue
			}
			for range 4 {
				age := rng.IntN(10) // some older than the window
				d := rng.Int64N(20)
				clk.Set(now.AddDate(0, 0, -age).Add(-time.Duration(rng.IntN(15)) * time.Hour))
				require.NoError(t, slotted.Add(db, &recs[i], "views", d))
				if age < days {
					score[recs[i].ID] += float64(d) * math.Pow(0.5, float64(age)/halfLife)
					plain[recs[i].ID] += d
				}
			}
		}
		clk.Set(now)
		opts := slotted.TrendOptions{Buckets: days, HalfLife: halfLife, Limit: 6}
		var got []uint
		var scores []float64
		for pages := 0; ; pages++ {
			require.Less(t, pages, 20)
			page, err := slotted.Trending(db, &Listed{}, "views", opts)
			require.NoError(t, err)
			require.Len(t, page.Scores, len(page.Items))
			for i, it := range page.Items {
				got, scores = append(got, it.ID), append(scores, page.Scores[i])
				require.InDelta(t, score[it.ID], page.Scores[i], 1e-4, "score of %d", it.ID)
				require.Equal(t, plain[it.ID], it.Views, "Views holds the window's plain total")
			}
			if page.Next == "" {
				break
			}
			opts.After = page.Next
			clk.Set(now.AddDate(0, 0, 1)) // a new day between pages: the cursor keeps the first page's buckets
		}
		slices.Sort(ids)
		require.Equal(t, ids, slices.Sorted(slices.Values(got)), "every record once")
		for i := 1; i < len(got); i++ {
			require.True(t, scores[i-1] > scores[i] || (scores[i-1] == scores[i] && got[i-1] > got[i]), "order at %d", i)
		}
		// Against the brute force: the order is by score (to the weights' rounding).
		want := slices.Clone(got)
		slices.SortStableFunc(want, func(a, b uint) int {
			if d := score[b] - score[a]; math.Abs(d) > 1e-4 {
				return cmp.Compare(score[b], score[a])
			}
			return 0
		})
		require.Equal(t, want, got)
		// Offsets give the same order.
		page, err := slotted.Trending(db, &Listed{}, "views", slotted.TrendOptions{Buckets: days, HalfLife: halfLife, Limit: 6, Offset: 6, At: now})
		require.NoError(t, err)
		require.Equal(t, got[6:12], ids0(page.Items))
	}, slotted.Config{Now: clk.Now})
}

func ids0(ls []Listed) []uint {
	out := make([]uint, len(ls))
	for i, l := range ls {
		out[i] = l.ID
	}
	return out
}

// TestListKeyKinds pages listings of UUID and string keys by cursor against the brute force.
func TestListKeyKinds(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		docs, tags := map[string]int64{}, map[string]int64{}
		var docIDs, tagIDs []string
		for i := range 13 {
			d := Doc{ID: uuid.New()}
			require.NoError(t, db.Create(&d).Error)
			require.NoError(t, slotted.Add(db, &d, "reads", int64(i%4)))
			docs[d.ID.String()] = int64(i % 4)
			docIDs = append(docIDs, d.ID.String())
			g := Tag{Name: fmt.Sprintf("tag-%02d", i)}
			require.NoError(t, db.Create(&g).Error)
			require.NoError(t, slotted.Add(db, &g, "uses", int64(i%3)))
			tags[g.Name] = int64(i % 3)
			tagIDs = append(tagIDs, g.Name)
		}
		// The databases order UUIDs and ASCII names as their text here.
		want := func(ids []string, total map[string]int64) []string {
			out := slices.Clone(ids)
			slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(total[b], total[a]), cmp.Compare(b, a)) })
			return out
		}
		var got []string
		opts := slotted.ListOptions{Limit: 4}
		for {
			page, err := slotted.List(db, &Doc{}, "reads", opts)
			require.NoError(t, err)
			for i, d := range page.Items {
				got = append(got, d.ID.String())
				require.Equal(t, docs[d.ID.String()], page.Totals[i])
			}
			if opts.After = page.Next; page.Next == "" {
				break
			}
		}
		require.Equal(t, want(docIDs, docs), got)
		got, opts = nil, slotted.ListOptions{Limit: 4}
		for {
			page, err := slotted.List(db, &Tag{}, "uses", opts)
			require.NoError(t, err)
			for _, g := range page.Items {
				got = append(got, g.Name)
			}
			if opts.After = page.Next; page.Next == "" {
				break
			}
		}
		require.Equal(t, want(tagIDs, tags), got)
	})
}
