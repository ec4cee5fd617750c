package tests

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// rankedPages seeds 40 pages with random likes (some negative, some without
// rows) and views over a week, two comments each, and returns the brute-force
// totals by page id: all-time likes, and views of the last three days.
type pageTotals struct {
	pages      []Page
	likes      map[uint]int64
	viewsIn    map[uint]int64 // views in [from, to)
	from, to   time.Time
	commentsOf map[uint][]string
}

func seedRanked(t *testing.T, db *gorm.DB, clk *fakeClock) pageTotals {
	t.Helper()
	migratePages(t, db)
	rng := rand.New(rand.NewPCG(4, 2))
	pt := pageTotals{likes: map[uint]int64{}, viewsIn: map[uint]int64{}, commentsOf: map[uint][]string{}}
	for i := range 40 {
		p := Page{Title: []string{"even", "odd"}[i%2]}
		for c := range 2 {
			p.Comments = append(p.Comments, PageComment{Body: fmt.Sprintf("%d/%d", i, c)})
		}
		pt.pages = append(pt.pages, p)
	}
	require.NoError(t, db.Create(&pt.pages).Error)
	day := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	pt.from, pt.to = day.AddDate(0, 0, -2), day.AddDate(0, 0, 1)
	for i := range pt.pages {
		p := &pt.pages[i]
		for _, c := range p.Comments {
			pt.commentsOf[p.ID] = append(pt.commentsOf[p.ID], c.Body)
		}
		if i%7 == 3 {
			continue // no counter rows at all: ranks as 0
		}
		for range 3 {
			d := rng.Int64N(25) - 4
			require.NoError(t, slotted.Add(db, p, "likes", d))
			pt.likes[p.ID] += d
		}
		for range 3 {
			at := day.AddDate(0, 0, -6).Add(time.Duration(rng.Int64N(int64(7 * 24 * time.Hour))))
			d := rng.Int64N(9)
			clk.Set(at)
			require.NoError(t, slotted.Add(db, p, "views", d))
			if !at.Before(pt.from) && at.Before(pt.to) {
				pt.viewsIn[p.ID] += d
			}
		}
	}
	return pt
}

// ranked sorts ids by total (descending unless asc), then id.
func ranked(ids []uint, total map[uint]int64, asc bool) []uint {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b uint) int {
		c := cmp.Compare(total[b], total[a])
		if asc {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(a, b))
	})
	return out
}

// topRanked is Top's order: total descending, then the larger id first.
func topRanked(ids []uint, total map[uint]int64) []uint {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b uint) int { return cmp.Or(cmp.Compare(total[b], total[a]), cmp.Compare(b, a)) })
	return out
}

func idsOf(pages []Page) []uint {
	out := make([]uint, len(pages))
	for i, p := range pages {
		out[i] = p.ID
	}
	return out
}

func TestOrderByMatchesBruteForce(t *testing.T) {
	clk := newClock(time.Time{})
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		pt := seedRanked(t, db, clk)
		all := idsOf(pt.pages)
		for _, dir := range []string{"DESC", "asc"} {
			want := ranked(all, pt.likes, dir == "asc")
			var got []Page
			require.NoError(t, db.Scopes(slotted.OrderBy(&Page{}, "likes", dir)).Order("id").Find(&got).Error)
			assert.Equal(t, want, idsOf(got), dir)
			for _, p := range got {
				assert.Equal(t, pt.likes[p.ID], p.Likes, "auto-fill still fills the counters")
			}
			// Pages of 7 through Limit/Offset add up to the same order.
			var paged []uint
			for off := 0; off < len(all); off += 7 {
				var page []Page
				require.NoError(t, db.Scopes(slotted.OrderBy(&Page{}, "likes", dir)).Order("id").Limit(7).Offset(off).Find(&page).Error)
				paged = append(paged, idsOf(page)...)
			}
			assert.Equal(t, want, paged, "pagination")
		}

		// Where, Preload and Count on the same query.
		var even []Page
		require.NoError(t, db.Where("title = ?", "even").Scopes(slotted.OrderBy(&Page{}, "likes", "DESC")).Order("id").Preload("Comments").Limit(5).Find(&even).Error)
		var evenIDs []uint
		for i, p := range pt.pages {
			if i%2 == 0 {
				evenIDs = append(evenIDs, p.ID)
			}
		}
		assert.Equal(t, ranked(evenIDs, pt.likes, false)[:5], idsOf(even))
		for _, p := range even {
			var bodies []string
			for _, c := range p.Comments {
				bodies = append(bodies, c.Body)
			}
			assert.ElementsMatch(t, pt.commentsOf[p.ID], bodies, "Preload")
		}
		var n int64
		require.NoError(t, db.Model(&Page{}).Where("title = ?", "even").Scopes(slotted.OrderBy(&Page{}, "likes", "DESC")).Count(&n).Error)
		assert.EqualValues(t, len(evenIDs), n)

		// WhereCounter, alone and sharing OrderBy's join.
		var popular []Page
		require.NoError(t, db.Scopes(slotted.WhereCounter(&Page{}, "likes", ">=", 20), slotted.OrderBy(&Page{}, "likes", "DESC")).Order("id").Find(&popular).Error)
		var wantPopular []uint
		for _, id := range ranked(all, pt.likes, false) {
			if pt.likes[id] >= 20 {
				wantPopular = append(wantPopular, id)
			}
		}
		require.NotEmpty(t, wantPopular)
		assert.Equal(t, wantPopular, idsOf(popular))
		for _, c := range []struct {
			op   string
			keep func(int64) bool
		}{{"=", func(n int64) bool { return n == 0 }}, {"<", func(n int64) bool { return n < 0 }}, {"<>", func(n int64) bool { return n != 0 }}} {
			var got []Page
			require.NoError(t, db.Scopes(slotted.WhereCounter(&Page{}, "likes", c.op, 0)).Order("id").Find(&got).Error)
			var want []uint
			for _, id := range all {
				if c.keep(pt.likes[id]) {
					want = append(want, id)
				}
			}
			assert.Equal(t, want, idsOf(got), "likes %s 0", c.op)
		}

		// A window of a bucketed counter, and two sort keys.
		var week []Page
		require.NoError(t, db.Scopes(slotted.OrderByBetween(&Page{}, "views", "DESC", pt.from, pt.to)).Order("id").Find(&week).Error)
		assert.Equal(t, ranked(all, pt.viewsIn, false), idsOf(week))
		var two []Page
		require.NoError(t, db.Scopes(slotted.OrderByBetween(&Page{}, "views", "DESC", pt.from, pt.to), slotted.OrderBy(&Page{}, "likes", "ASC")).Order("id").Find(&two).Error)
		want := slices.Clone(all)
		slices.SortFunc(want, func(a, b uint) int {
			return cmp.Or(cmp.Compare(pt.viewsIn[b], pt.viewsIn[a]), cmp.Compare(pt.likes[a], pt.likes[b]), cmp.Compare(a, b))
		})
		assert.Equal(t, want, idsOf(two))
	}, slotted.Config{Now: clk.Now})
}

func TestTopMatchesBruteForce(t *testing.T) {
	clk := newClock(time.Time{})
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		pt := seedRanked(t, db, clk)
		all := idsOf(pt.pages)
		top, err := slotted.Top(db, &Page{}, "likes", 10)
		require.NoError(t, err)
		assert.Equal(t, topRanked(all, pt.likes)[:10], idsOf(top))
		for _, p := range top {
			assert.Equal(t, pt.likes[p.ID], p.Likes)
		}
		odd, err := slotted.Top(db.Where("title = ?", "odd"), &Page{}, "likes", 3)
		require.NoError(t, err)
		var oddIDs []uint
		for i, p := range pt.pages {
			if i%2 == 1 {
				oddIDs = append(oddIDs, p.ID)
			}
		}
		assert.Equal(t, topRanked(oddIDs, pt.likes)[:3], idsOf(odd), "db's conditions select the candidates")

		week, err := slotted.TopBetween(db, &Page{}, "views", 10, pt.from, pt.to)
		require.NoError(t, err)
		assert.Equal(t, topRanked(all, pt.viewsIn)[:10], idsOf(week))
		for _, p := range week {
			assert.Equal(t, pt.viewsIn[p.ID], p.Views, "the window's total in the field")
			assert.Equal(t, pt.likes[p.ID], p.Likes)
		}
		everyone, err := slotted.Top(db, &Page{}, "likes", 1000)
		require.NoError(t, err)
		assert.Len(t, everyone, len(all), "n larger than the table")

		// TopRefs: the counter table alone, so records without rows are absent
		// and a counter whose record is gone is present.
		require.NoError(t, slotted.AddRef(db, slotted.Ref{Type: "pages.likes", ID: "99999"}, 1000))
		refs, err := slotted.TopRefs(db, &Page{}, "likes", 5)
		require.NoError(t, err)
		require.Len(t, refs, 5)
		assert.Equal(t, slotted.RefTotal{Ref: slotted.Ref{Type: "pages.likes", ID: "99999", Slots: 4}, Total: 1000}, refs[0])
		withRows := map[string]int64{}
		for id, n := range pt.likes {
			withRows[itoa(id)] = n
		}
		wantRefs := slices.Collect(func(yield func(string) bool) {
			for id := range withRows {
				if !yield(id) {
					return
				}
			}
		})
		slices.SortFunc(wantRefs, func(a, b string) int { return cmp.Or(cmp.Compare(withRows[b], withRows[a]), cmp.Compare(b, a)) })
		for i, r := range refs[1:] {
			assert.Equal(t, wantRefs[i], r.Ref.ID)
			assert.Equal(t, withRows[r.Ref.ID], r.Total)
		}
		wrefs, err := slotted.TopRefsBetween(db, &Page{}, "views", 3, pt.from, pt.to)
		require.NoError(t, err)
		wantW := topRanked(all, pt.viewsIn)
		for i, r := range wrefs {
			assert.Equal(t, itoa(wantW[i]), r.Ref.ID)
			assert.Equal(t, pt.viewsIn[wantW[i]], r.Total)
			assert.Equal(t, "pages.views", r.Ref.Type)
		}
	}, slotted.Config{Now: clk.Now})
}

// TestTopUsesTheCacheColumn: with a cache: column Top ranks by it (as of the
// last roll-up) and fills the live counters; TopRefs returns its values.
func TestTopUsesTheCacheColumn(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		arts := make([]Article, 8)
		require.NoError(t, db.Create(&arts).Error)
		likes := map[uint]int64{}
		for i := range arts {
			n := int64((i * 5) % 8)
			require.NoError(t, slotted.Add(db, &arts[i], "likes", n))
			likes[arts[i].ID] = n
		}
		_, err := slotted.RollUpAll(db, &Article{})
		require.NoError(t, err)
		ids := make([]uint, len(arts))
		for i, a := range arts {
			ids[i] = a.ID
		}
		want := topRanked(ids, likes)[:3]
		// The top article gets far more likes after the roll-up: Top ranks by the column until the next one.
		require.NoError(t, slotted.Add(db, &Article{ID: want[2]}, "likes", 100))
		rec, r := recorded(db)
		top, err := slotted.Top(rec, &Article{}, "likes", 3)
		require.NoError(t, err)
		got := make([]uint, len(top))
		for i, a := range top {
			got[i] = a.ID
			assert.Equal(t, likes[a.ID], a.LikesCount)
		}
		assert.Equal(t, want, got)
		assert.EqualValues(t, likes[want[2]]+100, top[2].Likes, "counters filled live")
		assert.Zero(t, r.count("slotted_total"), "no join: the parent table alone")
		refs, err := slotted.TopRefs(db, &Article{}, "likes", 3)
		require.NoError(t, err)
		for i, ref := range refs {
			assert.Equal(t, itoa(want[i]), ref.Ref.ID)
			assert.Equal(t, likes[want[i]], ref.Total)
		}
	})
}

// TestOrderByKeys: the join casts integer and UUID keys to text and compares string keys as they are.
func TestOrderByKeys(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		tags := []Tag{{Name: "go"}, {Name: "Rust"}, {Name: "sql"}}
		require.NoError(t, db.Create(&tags).Error)
		for i := range tags {
			require.NoError(t, slotted.Add(db, &tags[i], "uses", int64(10-i*4)))
		}
		var byUses []Tag
		require.NoError(t, db.Scopes(slotted.OrderBy(&Tag{}, "uses", "ASC")).Find(&byUses).Error)
		require.Len(t, byUses, 3)
		assert.Equal(t, []string{"sql", "Rust", "go"}, []string{byUses[0].Name, byUses[1].Name, byUses[2].Name})

		docs := []Doc{{ID: uuidFor(1)}, {ID: uuidFor(2)}, {ID: uuidFor(3)}}
		require.NoError(t, db.Create(&docs).Error)
		require.NoError(t, slotted.Add(db, &docs[1], "reads", 5))
		require.NoError(t, slotted.Add(db, &docs[2], "reads", 2))
		top, err := slotted.Top(db, &Doc{}, "reads", 2)
		require.NoError(t, err)
		require.Len(t, top, 2)
		assert.Equal(t, []int64{5, 2}, []int64{top[0].Reads, top[1].Reads})
		assert.Equal(t, docs[1].ID, top[0].ID)
	})
}

// TestOrderByBadInput: a bad direction or operator is rejected before any SQL is sent.
func TestOrderByBadInput(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migratePages(t, db)
		require.NoError(t, db.Create(&Page{Title: "a"}).Error)
		rec, r := recorded(db)
		now := time.Now()
		for name, scope := range map[string]func(*gorm.DB) *gorm.DB{
			"injection":        slotted.OrderBy(&Page{}, "likes", "DESC; DROP TABLE pages"),
			"empty":            slotted.OrderBy(&Page{}, "likes", ""),
			"operator":         slotted.WhereCounter(&Page{}, "likes", "= 0 OR 1=1 --", 0),
			"window of likes":  slotted.OrderByBetween(&Page{}, "likes", "DESC", now.Add(-time.Hour), now),
			"reversed window":  slotted.OrderByBetween(&Page{}, "views", "DESC", now, now.Add(-time.Hour)),
			"unknown counter":  slotted.OrderBy(&Page{}, "nope", "DESC"),
			"not a model":      slotted.OrderBy(42, "likes", "DESC"),
			"model w/o counts": slotted.OrderBy(&PageComment{}, "nope", "DESC"),
		} {
			var got []Page
			err := rec.Scopes(scope).Find(&got).Error
			require.Error(t, err, name)
			assert.True(t, errorsIsAny(err, slotted.ErrInvalidArgument, slotted.ErrUnknownCounter, slotted.ErrUnsupportedModel), "%s: %v", name, err)
			assert.Empty(t, got)
		}
		assert.ErrorIs(t, rec.Scopes(slotted.OrderBy(&Page{}, "likes", "sideways")).Find(&[]Page{}).Error, slotted.ErrInvalidArgument)
		assert.Empty(t, r.statements(), "nothing was sent")
		_, err := slotted.Top(db, &Page{}, "likes", 0)
		assert.ErrorIs(t, err, slotted.ErrInvalidArgument)
		_, err = slotted.TopRefs(db, &Page{}, "likes", -1)
		assert.ErrorIs(t, err, slotted.ErrInvalidArgument)
		_, err = slotted.TopRefsBetween(db, &Page{}, "likes", 3, now.Add(-time.Hour), now)
		assert.ErrorIs(t, err, slotted.ErrInvalidArgument)
		var n int64
		require.NoError(t, db.Model(&Page{}).Count(&n).Error)
		assert.EqualValues(t, 1, n, "the table is still there")
	})
}

// TestRawJoin is the README's hand-written join on each database: PostgreSQL
// needs the parent's key cast to text (record_id is text; casting record_id
// instead would forbid its index).
func TestRawJoin(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migratePages(t, db)
		pages := []Page{{Title: "a"}, {Title: "b"}, {Title: "c"}}
		require.NoError(t, db.Create(&pages).Error)
		require.NoError(t, slotted.Add(db, &pages[2], "likes", 7))
		require.NoError(t, slotted.Add(db, &pages[0], "likes", 3))
		cast := map[string]string{dbPostgres: "p.id::text", dbMySQL: "CAST(p.id AS CHAR)", dbSQLite: "CAST(p.id AS TEXT)"}[dialect(db)]
		var rows []struct {
			ID    uint
			Title string
			Likes int64
		}
		err := db.Raw(`SELECT p.id, p.title, COALESCE(c.total, 0) AS likes FROM pages p
LEFT JOIN (SELECT record_id, SUM(count) AS total FROM slotted_counters WHERE record_type = ? GROUP BY record_id) c
  ON c.record_id = `+cast+`
ORDER BY likes DESC, p.id LIMIT 10`, "pages.likes").Scan(&rows).Error
		require.NoError(t, err)
		require.Len(t, rows, 3)
		assert.Equal(t, []uint{pages[2].ID, pages[0].ID, pages[1].ID}, []uint{rows[0].ID, rows[1].ID, rows[2].ID})
		assert.Equal(t, []int64{7, 3, 0}, []int64{rows[0].Likes, rows[1].Likes, rows[2].Likes})
		if dialect(db) == dbPostgres {
			err := db.Raw(`SELECT p.id FROM pages p JOIN slotted_counters c ON c.record_id = p.id`).Scan(&rows).Error
			assert.ErrorContains(t, err, "operator does not exist", "the uncast join fails on PostgreSQL")
		}
	})
}

func errorsIsAny(err error, targets ...error) bool {
	for _, target := range targets {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
