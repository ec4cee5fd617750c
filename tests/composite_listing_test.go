package tests

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"slices"
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

// Seat is the composite-key listing model: an integer and a string key whose
// string part may hold the record_id encoding's ',' and '%'. likes has a
// cache column indexed with the key columns (what ReadFast walks), views is
// bucketed by day (windows, Trending, bucketed AddWhere).
type Seat struct {
	Org        uint   `gorm:"primaryKey;autoIncrement:false;index:idx_seats_likes,priority:2"`
	Handle     string `gorm:"primaryKey;size:64;index:idx_seats_likes,priority:3"`
	Grp        int
	Likes      int64 `gorm:"-" slotted:"likes;slots:4;cache:likes_count"`
	LikesCount int64 `gorm:"index:idx_seats_likes,priority:1"`
	Shares     int64 `gorm:"-" slotted:"shares;slots:3"`
	Views      int64 `gorm:"-" slotted:"views;buckets:day;slots:3"`
}

type seatKey struct {
	Org    uint
	Handle string
}

func (s Seat) key() seatKey { return seatKey{s.Org, s.Handle} }

// compareSeats is the listings' tie-break, the key's columns in order. The
// handles here are lower-case ASCII letters, digits, ',' and '%' (and one
// word starting with a non-ASCII letter), which the three databases'
// default collations order as their bytes, so Go's string order is theirs.
func compareSeats(a, b seatKey) int {
	return cmp.Or(cmp.Compare(a.Org, b.Org), cmp.Compare(a.Handle, b.Handle))
}

// seatOrder sorts keys by total, largest first and ties the larger key first (asc: the reverse).
func seatOrder(keys []seatKey, total func(seatKey) int64, asc bool) []seatKey {
	out := slices.Clone(keys)
	slices.SortFunc(out, func(a, b seatKey) int {
		c := cmp.Or(cmp.Compare(total(b), total(a)), compareSeats(b, a))
		if asc {
			return -c
		}
		return c
	})
	return out
}

func migrateSeats(t testing.TB, db *gorm.DB) {
	t.Helper()
	require.NoError(t, db.Migrator().DropTable(&Seat{}))
	require.NoError(t, db.AutoMigrate(&Seat{}))
	t.Cleanup(func() { _ = db.Migrator().DropTable(&Seat{}) })
}

// seatOrgs are the orgs of makeSeats: their record_ids' byte order ("10,"
// < "9,") is not the order of the keys, which the listings follow.
var seatOrgs = []uint{9, 10, 3, 100, 27, 8, 64, 1}

// makeSeats creates the first orgs of seatOrgs × trickyHandles seats, Grp cycling 0..2.
func makeSeats(t testing.TB, db *gorm.DB, orgs int) []Seat {
	t.Helper()
	var seats []Seat
	for _, org := range seatOrgs[:orgs] {
		for _, h := range trickyHandles {
			seats = append(seats, Seat{Org: org, Handle: h, Grp: len(seats) % 3})
		}
	}
	require.NoError(t, db.Create(&seats).Error)
	return seats
}

// pageSeats walks a listing of seats with cursors (or offsets), page size
// 7, and returns the keys and totals in order.
func pageSeats(t *testing.T, db *gorm.DB, counter string, opts slotted.ListOptions, offsets bool) ([]seatKey, []int64) {
	t.Helper()
	var keys []seatKey
	var totals []int64
	opts.Limit = 7
	for range 100 {
		page, err := slotted.List(db, &Seat{}, counter, opts)
		require.NoError(t, err)
		require.Len(t, page.Totals, len(page.Items))
		for i, it := range page.Items {
			keys, totals = append(keys, it.key()), append(totals, page.Totals[i])
		}
		if offsets {
			if len(page.Items) < 7 {
				return keys, totals
			}
			opts.Offset += 7
			continue
		}
		if page.Next == "" {
			return keys, totals
		}
		require.Len(t, page.Items, 7, "a page with a Next is full")
		opts.After = page.Next
	}
	t.Fatal("listing did not end")
	return nil, nil
}

// TestCompositeListBruteForce pages List on a composite-key model (exact,
// fast, ascending, a window, the caller's conditions), by cursor and by
// offset, against the order computed in Go: totals with many ties, keys
// whose parts hold ',' and '%'.
func TestCompositeListBruteForce(t *testing.T) {
	clk := newClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migrateSeats(t, db)
		seats := makeSeats(t, db, 4)
		rng := rand.New(rand.NewPCG(21, 3))
		likes, shares, views := map[seatKey]int64{}, map[seatKey]int64{}, map[seatKey]int64{}
		from, to := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
		var keys []seatKey
		for i := range seats {
			s := &seats[i]
			keys = append(keys, s.key())
			if i%9 == 4 {
				continue // no rows: ranks as 0
			}
			for range 2 {
				d := rng.Int64N(6) - 2 // small: many ties, some negative
				require.NoError(t, slotted.Add(db, s, "likes", d))
				likes[s.key()] += d
				d = rng.Int64N(4)
				require.NoError(t, slotted.Add(db, s, "shares", d))
				shares[s.key()] += d
				at := time.Date(2026, 11, 18, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(6 * 24 * time.Hour))))
				clk.Set(at)
				d = rng.Int64N(4)
				require.NoError(t, slotted.Add(db, s, "views", d))
				if !at.Before(from) && at.Before(to) {
					views[s.key()] += d
				}
			}
		}
		_, err := slotted.RollUpAll(db, &Seat{}, slotted.RollUpOptions{})
		require.NoError(t, err)
		cached := maps0(likes)
		// Writes after the roll-up: the fast path does not see them, the exact path does.
		for i := 0; i < len(seats); i += 5 {
			require.NoError(t, slotted.Add(db, &Seat{Org: seats[i].Org, Handle: seats[i].Handle}, "likes", 2))
			likes[seats[i].key()] += 2
		}
		get := func(m map[seatKey]int64) func(seatKey) int64 { return func(k seatKey) int64 { return m[k] } }
		ties := 0
		sorted := seatOrder(keys, get(likes), false)
		for i := 1; i < len(sorted); i++ {
			if likes[sorted[i]] == likes[sorted[i-1]] {
				ties++
			}
		}
		require.Greater(t, ties, len(keys)/2, "the totals tie often: the key breaks most of the order")
		for _, c := range []struct {
			name    string
			counter string
			opts    slotted.ListOptions
			want    map[seatKey]int64
			read    slotted.Read
		}{
			{"exact", "likes", slotted.ListOptions{Read: slotted.ReadExact}, likes, slotted.ReadExact},
			{"exact/asc", "likes", slotted.ListOptions{Read: slotted.ReadExact, Ascending: true}, likes, slotted.ReadExact},
			{"fast", "likes", slotted.ListOptions{Read: slotted.ReadFast}, cached, slotted.ReadFast},
			{"auto=fast/asc", "likes", slotted.ListOptions{Ascending: true}, cached, slotted.ReadFast},
			{"auto=exact(no cache)", "shares", slotted.ListOptions{}, shares, slotted.ReadExact},
			{"window", "views", slotted.ListOptions{From: from, To: to}, views, slotted.ReadExact},
			{"window/asc", "views", slotted.ListOptions{From: from, To: to, Ascending: true}, views, slotted.ReadExact},
		} {
			want := seatOrder(keys, get(c.want), c.opts.Ascending)
			for _, offsets := range []bool{false, true} {
				got, totals := pageSeats(t, db, c.counter, c.opts, offsets)
				require.Equal(t, want, got, "%s offsets=%v", c.name, offsets)
				for i, k := range got {
					require.Equal(t, c.want[k], totals[i], "%s: total of %v", c.name, k)
				}
			}
			page, err := slotted.List(db, &Seat{}, c.counter, slotted.ListOptions{Limit: 9, Read: c.opts.Read, Ascending: c.opts.Ascending, From: c.opts.From, To: c.opts.To})
			require.NoError(t, err)
			require.Equal(t, c.read, page.Read, c.name)
			require.Len(t, page.Items, 9)
			for _, it := range page.Items {
				switch c.counter {
				case "likes":
					require.Equal(t, likes[it.key()], it.Likes, "%s: the field is filled live", c.name)
				case "views":
					require.Equal(t, views[it.key()], it.Views, "%s: the field holds the window's total", c.name)
				}
			}
		}
		// Top is List's first page (ReadAuto): the same records in the same order.
		top, err := slotted.Top(db, &Seat{}, "likes", 9)
		require.NoError(t, err)
		first, err := slotted.List(db, &Seat{}, "likes", slotted.ListOptions{Limit: 9})
		require.NoError(t, err)
		require.Equal(t, seatKeys(top), seatKeys(first.Items))
		// The caller's conditions select the candidates.
		var grp1 []seatKey
		for _, s := range seats {
			if s.Grp == 1 {
				grp1 = append(grp1, s.key())
			}
		}
		got, _ := pageSeats(t, db.Where("grp = ?", 1), "likes", slotted.ListOptions{Read: slotted.ReadExact}, false)
		require.Equal(t, seatOrder(grp1, get(likes), false), got)
		got, _ = pageSeats(t, db.Where("grp = ?", 1), "likes", slotted.ListOptions{Read: slotted.ReadFast}, false)
		require.Equal(t, seatOrder(grp1, get(cached), false), got)
	}, slotted.Config{Now: clk.Now})
}

func maps0(m map[seatKey]int64) map[seatKey]int64 {
	out := make(map[seatKey]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func seatKeys(seats []Seat) []seatKey {
	out := make([]seatKey, len(seats))
	for i, s := range seats {
		out[i] = s.key()
	}
	return out
}

// TestCompositeListCursors: a cursor carries the last key's record_id, which
// the next page parses back into the key's columns; a cursor whose id is no
// key of the model (another number of parts, a bad escape, a non-integer
// first part) is ErrInvalidArgument and nothing is sent.
func TestCompositeListCursors(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migrateSeats(t, db)
		seats := []Seat{{Org: 1, Handle: "a,b"}, {Org: 10, Handle: "a"}, {Org: 1, Handle: "a"}, {Org: 1, Handle: "a%2Cb"}, {Org: 2, Handle: "%"}}
		require.NoError(t, db.Create(&seats).Error)
		// All tie at 0: the key alone orders them, (1,"a") < (1,"a%2Cb") < (1,"a,b") < (2,"%") < (10,"a"),
		// which is not their record_ids' byte order ("10,a" < "1,a").
		page, err := slotted.List(db, &Seat{}, "shares", slotted.ListOptions{Limit: 1})
		require.NoError(t, err)
		require.Equal(t, []seatKey{{10, "a"}}, seatKeys(page.Items))
		var got []seatKey
		opts := slotted.ListOptions{Limit: 1, Ascending: true}
		for range 10 {
			page, err := slotted.List(db, &Seat{}, "shares", opts)
			require.NoError(t, err)
			got = append(got, seatKeys(page.Items)...)
			if opts.After = page.Next; page.Next == "" {
				break
			}
			raw, err := base64.RawURLEncoding.DecodeString(page.Next)
			require.NoError(t, err)
			var cur map[string]any
			require.NoError(t, json.Unmarshal(raw, &cur))
			ref, err := slotted.RefOf(db, &page.Items[0], "shares")
			require.NoError(t, err)
			require.Equal(t, ref.ID, cur["k"], "the cursor holds the last item's record_id")
		}
		require.Equal(t, []seatKey{{1, "a"}, {1, "a%2Cb"}, {1, "a,b"}, {2, "%"}, {10, "a"}}, got)

		first, err := slotted.List(db, &Seat{}, "shares", slotted.ListOptions{Limit: 1})
		require.NoError(t, err)
		raw, err := base64.RawURLEncoding.DecodeString(first.Next)
		require.NoError(t, err)
		rec, r := recorded(db)
		for _, id := range []string{"2", "2,%,x", "2,%zz", "x,a", "-1,a", "2,"} {
			var cur map[string]any
			require.NoError(t, json.Unmarshal(raw, &cur))
			cur["k"] = id
			b, err := json.Marshal(cur)
			require.NoError(t, err)
			_, err = slotted.List(rec, &Seat{}, "shares", slotted.ListOptions{Limit: 1, After: base64.RawURLEncoding.EncodeToString(b)})
			require.ErrorIs(t, err, slotted.ErrInvalidArgument, "cursor key %q", id)
		}
		assert.Empty(t, r.statements(), "bad cursors send nothing")
	})
}

// TestCompositeListStableUnderWrites pages through the exact and the fast
// listing of a composite-key model while writers move half of the records
// (and RollUpAll refreshes the cache column): every record whose total does
// not change appears exactly once, in its place, with its total.
func TestCompositeListStableUnderWrites(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migrateSeats(t, db)
		seats := makeSeats(t, db, 8)
		stable := map[seatKey]int64{}
		var moving []Seat
		for i := range seats {
			n := int64(i*37%13) - 3
			require.NoError(t, slotted.Add(db, &seats[i], "likes", n))
			if i%2 == 0 {
				stable[seats[i].key()] = n
			} else {
				moving = append(moving, seats[i])
			}
		}
		_, err := slotted.RollUpAll(db, &Seat{}, slotted.RollUpOptions{})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		var writes atomic.Int64
		moved := make([]map[seatKey]int64, 4)
		for w := range 4 {
			moved[w] = map[seatKey]int64{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 21))
				for ctx.Err() == nil {
					s := moving[rng.IntN(len(moving))]
					d := rng.Int64N(21) - 10
					if err := slotted.Add(db, &Seat{Org: s.Org, Handle: s.Handle}, "likes", d); err != nil {
						t.Error(err)
						return
					}
					moved[w][s.key()] += d
					writes.Add(1)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := slotted.RollUpAll(db, &Seat{}, slotted.RollUpOptions{BatchSize: 15}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		for writes.Load() < 50 { // the writers are running
			time.Sleep(time.Millisecond)
		}
		before := writes.Load()
		// At least 2 rounds, and until the writers have moved records while
		// paging (on a loaded machine they may get little time): bounded.
		deadline := time.Now().Add(30 * time.Second)
		var all []seatKey
		for k := range stable {
			all = append(all, k)
		}
		for round := 0; round < 2 || (writes.Load() <= before+100 && time.Now().Before(deadline)); round++ {
			for _, read := range []slotted.Read{slotted.ReadExact, slotted.ReadFast} {
				for _, asc := range []bool{false, true} {
					keys, totals := pageSeats(t, db, "likes", slotted.ListOptions{Read: read, Ascending: asc}, false)
					seen := map[seatKey]int{}
					var got []seatKey
					for i, k := range keys {
						if want, ok := stable[k]; ok {
							seen[k]++
							got = append(got, k)
							require.Equal(t, want, totals[i], "round %d %s: total of stable %v", round, read, k)
						}
					}
					for _, k := range all {
						require.Equal(t, 1, seen[k], "round %d %s asc=%v: stable record %v seen %d times", round, read, asc, k, seen[k])
					}
					require.Equal(t, seatOrder(all, func(k seatKey) int64 { return stable[k] }, asc), got)
				}
			}
		}
		require.Greater(t, writes.Load(), before+100, "writers ran while paging")
		cancel()
		wg.Wait()
		// The writers' totals are exact.
		want := map[seatKey]int64{}
		for i, s := range seats {
			want[s.key()] = int64(i*37%13) - 3
		}
		for _, m := range moved {
			for k, d := range m {
				want[k] += d
			}
		}
		loaded := slices.Clone(seats)
		require.NoError(t, slotted.Load(db, loaded, "likes"))
		for _, s := range loaded {
			require.Equal(t, want[s.key()], s.Likes, "total of %v", s.key())
		}
	})
}

// TestCompositeTrending ranks a bucketed composite-key counter by decayed
// score against the brute force: with HalfLife 1 the integer weights are
// exact (1,000,000 >> age), so scores are exact integers in Go too and ties
// are broken by the key as the database does.
func TestCompositeTrending(t *testing.T) {
	now := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	clk := newClock(now)
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migrateSeats(t, db)
		seats := makeSeats(t, db, 4)
		rng := rand.New(rand.NewPCG(5, 21))
		const days = 5
		score, plain := map[seatKey]int64{}, map[seatKey]int64{}
		var keys []seatKey
		for i := range seats {
			keys = append(keys, seats[i].key())
			if i%8 == 5 {
				continue
			}
			for range 3 {
				age := rng.IntN(7) // some older than the window
				d := rng.Int64N(3)
				clk.Set(now.AddDate(0, 0, -age).Add(-time.Duration(rng.IntN(15)) * time.Hour))
				require.NoError(t, slotted.Add(db, &seats[i], "views", d))
				if age < days {
					score[seats[i].key()] += d * (1_000_000 >> age)
					plain[seats[i].key()] += d
				}
			}
		}
		clk.Set(now)
		want := seatOrder(keys, func(k seatKey) int64 { return score[k] }, false)
		opts := slotted.TrendOptions{Buckets: days, HalfLife: 1, Limit: 6}
		var got []seatKey
		for pages := 0; ; pages++ {
			require.Less(t, pages, 20)
			page, err := slotted.Trending(db, &Seat{}, "views", opts)
			require.NoError(t, err)
			require.Len(t, page.Scores, len(page.Items))
			for i, it := range page.Items {
				got = append(got, it.key())
				require.InDelta(t, float64(score[it.key()])/1e6, page.Scores[i], 1e-9, "score of %v", it.key())
				require.Equal(t, plain[it.key()], it.Views, "Views holds the window's plain total")
			}
			if page.Next == "" {
				break
			}
			opts.After = page.Next
			clk.Set(now.AddDate(0, 0, 1)) // a new day between pages: the cursor keeps the first page's buckets
		}
		require.Equal(t, want, got)
		page, err := slotted.Trending(db, &Seat{}, "views", slotted.TrendOptions{Buckets: days, HalfLife: 1, Limit: 6, Offset: 12, At: now})
		require.NoError(t, err)
		require.Equal(t, want[12:18], seatKeys(page.Items), "offsets give the same order")
		page, err = slotted.Trending(db.Where("org = ?", 10), &Seat{}, "views", slotted.TrendOptions{Buckets: days, HalfLife: 1, Limit: 50, At: now})
		require.NoError(t, err)
		var org10 []seatKey
		for _, k := range want {
			if k.Org == 10 {
				org10 = append(org10, k)
			}
		}
		require.Equal(t, org10, seatKeys(page.Items), "the caller's conditions select the candidates")
	}, slotted.Config{Now: clk.Now})
}

// TestCompositeAddWhere: AddWhere's INSERT … SELECT writes each selected
// record's composite record_id (escaped as the model's own writes are), once
// per record, and the current bucket's rows for a bucketed counter.
func TestCompositeAddWhere(t *testing.T) {
	now := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	clk := newClock(now)
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migrateSeats(t, db)
		seats := makeSeats(t, db, 3)
		selected := func(s Seat) bool { return s.Org == 10 || s.Handle == "a,b" }
		// Some counters exist already: AddWhere adds to them.
		for i := 0; i < len(seats); i += 4 {
			require.NoError(t, slotted.Add(db, &seats[i], "likes", 10))
			require.NoError(t, slotted.Add(db, &seats[i], "views", 10))
		}
		q := func() *gorm.DB { return db.Model(&Seat{}).Where("org = ? OR handle = ?", 10, "a,b") }
		rdb, rec := recorded(db)
		require.NoError(t, slotted.AddWhere(rdb.Model(&Seat{}).Where("org = ? OR handle = ?", 10, "a,b"), "likes", 3))
		require.Len(t, rec.statements(), 1, "one statement")
		require.NoError(t, slotted.AddWhere(q(), "likes", -1))
		require.NoError(t, slotted.AddWhere(q(), "views", 2))
		clk.Set(now.AddDate(0, 0, -1))
		require.NoError(t, slotted.AddWhere(q(), "views", 5)) // yesterday's bucket
		clk.Set(now)

		ids := map[string]bool{}
		var nSelected int
		for i, s := range seats {
			base := int64(0)
			if i%4 == 0 {
				base = 10
			}
			wantLikes, wantViews, wantToday := base, base, base
			if selected(s) {
				nSelected++
				wantLikes += 2
				wantViews += 7
				wantToday += 2
				ref, err := slotted.RefOf(db, &s, "likes")
				require.NoError(t, err)
				ids[ref.ID] = true
			}
			got := Seat{Org: s.Org, Handle: s.Handle}
			require.NoError(t, slotted.Load(db, &got))
			require.Equal(t, wantLikes, got.Likes, "likes of %v", s.key())
			require.Equal(t, wantViews, got.Views, "views of %v", s.key())
			today, err := slotted.CountBetween(db, &got, "views", now.Truncate(24*time.Hour), now)
			require.NoError(t, err)
			require.Equal(t, wantToday, today, "today's views of %v", s.key())
			yesterday, err := slotted.CountBetween(db, &got, "views", now.AddDate(0, 0, -1).Truncate(24*time.Hour), now.Truncate(24*time.Hour))
			require.NoError(t, err)
			require.Equal(t, wantViews-wantToday, yesterday, "yesterday's views of %v", s.key())
		}
		require.Equal(t, len(trickyHandles)+2, nSelected)
		// Every row AddWhere wrote is under a record_id the model's writes use: no stray encodings.
		for _, id := range recordIDs(t, db, "seats.likes") {
			_, err := slotted.SplitKeyID(id)
			require.NoError(t, err, id)
		}
		var written []string
		require.NoError(t, slotted.Table(db).Distinct("record_id").Where("record_type = ? AND count <> ?", "seats.likes", 10).Pluck("record_id", &written).Error)
		require.Len(t, written, len(ids))
		for _, id := range written {
			require.True(t, ids[id], "AddWhere wrote %q", id)
		}
		// The guards stay: no conditions is refused, and writes nothing.
		before := counterRows(t, db)
		err := slotted.AddWhere(db.Model(&Seat{}), "likes", 1)
		require.ErrorIs(t, err, gorm.ErrMissingWhereClause)
		require.NoError(t, slotted.AddWhere(db.Model(&Seat{Org: 9, Handle: "%"}), "likes", 4), "a model with its whole key set is a condition")
		n, err := slotted.Count(db, &Seat{Org: 9, Handle: "%"}, "likes")
		require.NoError(t, err)
		require.EqualValues(t, 4, n)
		require.Equal(t, before+1, counterRows(t, db))
	}, slotted.Config{Now: clk.Now})
}

// Rows whose key has no record_id (a zero part; an id past MaxKeyLen once
// escaped: 60 '%' become 180 bytes) are passed over by AddWhere and List, as
// Increment refuses them, instead of failing the statement or (SQLite) being
// counted under an id no call can name.
func TestCompositeRowsWithoutRecordID(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migrateSeats(t, db)
		long := strings.Repeat("%", 60)
		require.NoError(t, db.Exec("INSERT INTO seats (org, handle, grp, likes_count) VALUES (0, 'z', 0, 0), (1, ?, 0, 0), (2, 'ok', 0, 0), (3, '', 0, 0)", long).Error)
		require.NoError(t, slotted.AddWhere(db.Model(&Seat{}).Where("grp = 0"), "shares", 1))
		var ids []string
		require.NoError(t, slotted.Table(db).Where("record_type = ?", "seats.shares").Distinct().Pluck("record_id", &ids).Error)
		assert.Equal(t, []string{"2,ok"}, ids, "only the row with a record_id is counted")

		for _, read := range []slotted.Read{slotted.ReadExact, slotted.ReadFast} {
			page, err := slotted.List(db, &Seat{}, "likes", slotted.ListOptions{Limit: 10, Read: read})
			require.NoError(t, err, "%v", read)
			require.Len(t, page.Items, 1, "%v", read)
			assert.Equal(t, "ok", page.Items[0].Handle)
		}
	})
}

// AddOnce refuses two OnceOptions before anything is sent, MustExist's read
// included.
func TestOnceOptionsRefusedBeforeAnyRead(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		post := Post{Title: "p"}
		require.NoError(t, db.Create(&post).Error)
		rdb, rec := recorded(db)
		_, err := slotted.AddOnce(slotted.MustExist(rdb), &Post{ID: post.ID}, "likes", 1, "k", slotted.OnceOptions{}, slotted.OnceOptions{})
		require.ErrorIs(t, err, slotted.ErrInvalidConfig)
		assert.Empty(t, rec.statements(), "refused before anything is sent")
	})
}
