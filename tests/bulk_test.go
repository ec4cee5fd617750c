package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

func TestAddEach(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "each"}
		require.NoError(t, db.Create(&post).Error)
		rdb, rec := recorded(db)
		require.NoError(t, slotted.AddEach(rdb, &post, map[string]int64{"likes": 2, "Views": 3, "stars": -1, "views": 4}))
		assert.EqualValues(t, 2, post.Likes)
		assert.EqualValues(t, 7, post.Views, "two names of one counter are summed")
		assert.EqualValues(t, -1, post.Stars)
		require.Len(t, rec.statements(), 1, "one statement")
		assert.Equal(t, 3+markerRows(db), strings.Count(rec.statements()[0], "),(")+1, "three rows, one per counter, and the outcome marker's")
		assert.True(t, strings.HasSuffix(rec.statements()[0], upsertUpdate(db, inserted[dialect(db)])), rec.statements()[0])
		for counter, want := range map[string]int64{"likes": 2, "views": 7, "stars": -1} {
			n, err := slotted.Count(db, &post, counter)
			require.NoError(t, err)
			assert.Equal(t, want, n, counter)
		}

		rdb, rec = recorded(db)
		require.NoError(t, slotted.AddEach(rdb, &post, map[string]int64{"likes": 0}))
		assert.Empty(t, rec.statements(), "zero deltas write nothing")

		err := slotted.AddEach(db, &post, map[string]int64{"likes": 1, "nope": 1})
		require.ErrorIs(t, err, slotted.ErrUnknownCounter)
		err = slotted.AddEach(db, &post, map[string]int64{"likes": 1 << 62, "Likes": 1 << 62})
		require.ErrorIs(t, err, slotted.ErrDeltaOverflow)
		err = slotted.AddEach(db, Post{ID: post.ID}, map[string]int64{"likes": 1})
		require.ErrorIs(t, err, slotted.ErrUnsupportedModel)
		err = slotted.AddEach(db, &Post{}, map[string]int64{"likes": 1})
		require.ErrorIs(t, err, slotted.ErrMissingPrimaryKey)
		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 2, n, "bad input wrote nothing")
		assert.EqualValues(t, 2, post.Likes)

		// Inside a transaction it joins it.
		require.ErrorIs(t, db.Transaction(func(tx *gorm.DB) error {
			p := Post{ID: post.ID}
			require.NoError(t, slotted.AddEach(tx, &p, map[string]int64{"likes": 5, "views": 5}))
			return errRollback
		}), errRollback)
		n, err = slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 2, n, "rolled back with the transaction")
	})
}

func TestAddMany(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := make([]Post, 1500) // more than one statement: 1024 + 256 + 128 + 64 + 16 + 8 + 4 rows
		for i := range posts {
			posts[i].Title = "many"
		}
		require.NoError(t, db.CreateInBatches(&posts, 500).Error)
		rdb, rec := recorded(db)
		require.NoError(t, slotted.AddMany(rdb, posts, "views", 2))
		inserts := rec.count("INSERT INTO")
		assert.Equal(t, 7, inserts, "split into statement shapes")
		for _, p := range posts {
			require.EqualValues(t, 2, p.Views)
		}
		var total int64
		require.NoError(t, slotted.Table(db).Where("record_type = ?", "posts.views").Select("SUM(count)").Scan(&total).Error)
		assert.EqualValues(t, 2*len(posts), total)
		var perRecord []int64
		require.NoError(t, slotted.Table(db).Where("record_type = ?", "posts.views").
			Group("record_id").Select("SUM(count)").Scan(&perRecord).Error)
		assert.Len(t, perRecord, len(posts))

		// Pointers, a record twice: added once, both copies move.
		a, b := &Post{ID: posts[0].ID}, &Post{ID: posts[0].ID}
		require.NoError(t, slotted.AddMany(db, []*Post{a, b, {ID: posts[1].ID}}, "likes", 3))
		assert.EqualValues(t, 3, a.Likes)
		assert.EqualValues(t, 3, b.Likes)
		n, err := slotted.Count(db, a, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 3, n)

		// A record without a key: nothing written.
		err = slotted.AddMany(db, []Post{{ID: posts[2].ID}, {}}, "likes", 1)
		require.ErrorIs(t, err, slotted.ErrMissingPrimaryKey)
		err = slotted.AddMany(db, posts, "nope", 1)
		require.ErrorIs(t, err, slotted.ErrUnknownCounter)
		n, err = slotted.Count(db, &posts[2], "likes")
		require.NoError(t, err)
		assert.Zero(t, n)

		// A failure in a later statement rolls the earlier ones back (one transaction).
		fail := 0
		require.NoError(t, db.Callback().Raw().Before("gorm:raw").Register("test:fail_third", func(tx *gorm.DB) {
			if strings.HasPrefix(tx.Statement.SQL.String(), "INSERT INTO") {
				if fail++; fail == 3 {
					tx.AddError(errInjected)
				}
			}
		}))
		err = slotted.AddMany(db, posts, "stars", 1)
		require.ErrorIs(t, err, errInjected)
		require.NoError(t, db.Callback().Raw().Remove("test:fail_third"))
		var stars int64
		require.NoError(t, slotted.Table(db).Where("record_type = ?", "post_stars").Count(&stars).Error)
		assert.Zero(t, stars, "all or none")
	})
}

func TestAddRefs(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		deltas := map[slotted.Ref]int64{}
		for i := 0; i < 20; i++ {
			deltas[slotted.Ref{Type: "dl", ID: fmt.Sprint(i)}] = int64(i + 1)
		}
		deltas[slotted.Ref{Type: "dl", ID: "zero"}] = 0
		require.NoError(t, slotted.AddRefs(db, deltas))
		require.NoError(t, slotted.AddRefs(db, deltas))
		for i := 0; i < 20; i++ {
			n, err := slotted.CountRef(db, slotted.Ref{Type: "dl", ID: fmt.Sprint(i)})
			require.NoError(t, err)
			assert.EqualValues(t, 2*(i+1), n)
		}
		assert.Zero(t, counterRowsOf(t, db, "dl", "zero"))
		err := slotted.AddRefs(db, map[slotted.Ref]int64{{Type: "dl", ID: "x"}: 1, {Type: "", ID: "y"}: 1})
		require.ErrorIs(t, err, slotted.ErrMissingPrimaryKey)
		assert.Zero(t, counterRowsOf(t, db, "dl", "x"), "nothing written")
	})
}

func counterRowsOf(t *testing.T, db *gorm.DB, typ, id string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, slotted.Table(db).Where("record_type = ? AND record_id = ?", typ, id).Count(&n).Error)
	return n
}

// TestAddWhere: one INSERT … SELECT adds to every record the query selects; each gets exactly one slot row,
// and the slots are uniform over 2000 records.
func TestAddWhere(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		const n = 2000
		posts := make([]Post, n+100)
		for i := range posts {
			posts[i].Title = "where"
			if i >= n {
				posts[i].Title = "other"
			}
		}
		require.NoError(t, db.CreateInBatches(&posts, 500).Error)
		rdb, rec := recorded(db)
		require.NoError(t, slotted.AddWhere(rdb.Model(&Post{}).Where("title = ?", "where"), "views", 1))
		require.Len(t, rec.statements(), 1, "one statement")
		assert.Contains(t, rec.statements()[0], "SELECT")
		assert.True(t, strings.HasSuffix(rec.statements()[0], upsertUpdate(db, "1")), rec.statements()[0])

		// views has slots:4: every record got one row with count 1, slots in [0, 4), near-uniform.
		var rows []slotted.SlottedCounter
		require.NoError(t, slotted.Table(db).Where("record_type = ?", "posts.views").Find(&rows).Error)
		require.Len(t, rows, n, "one row per record: the slot was drawn once per record")
		perSlot := make([]int, 4)
		ids := map[slotted.Key]bool{}
		for _, r := range rows {
			require.EqualValues(t, 1, r.Count)
			require.True(t, r.Slot >= 0 && r.Slot < 4, "slot %d", r.Slot)
			perSlot[r.Slot]++
			ids[r.RecordID] = true
		}
		assert.Len(t, ids, n)
		for s, c := range perSlot {
			// Binomial(2000, 1/4): mean 500, sd 19.4; [350, 650] is 7.7 sd wide each side.
			assert.True(t, c >= 350 && c <= 650, "slot %d has %d of %d rows: %v", s, c, n, perSlot)
		}
		var other int64
		require.NoError(t, slotted.Table(db).Where("record_type = ? AND record_id = ?", "posts.views", itoa(posts[n].ID)).Count(&other).Error)
		assert.Zero(t, other, "records the query does not select are untouched")

		// Again, with 100 slots: totals add up per record.
		require.NoError(t, slotted.AddWhere(db.Model(&Post{}).Where("title = ?", "where"), "likes", 5))
		require.NoError(t, slotted.AddWhere(db.Model(&Post{}).Where("title = ?", "where"), "likes", -2))
		check := []Post{{ID: posts[0].ID}, {ID: posts[n-1].ID}, {ID: posts[n].ID}}
		require.NoError(t, slotted.Load(db, check))
		assert.EqualValues(t, []int64{3, 3, 0}, []int64{check[0].Likes, check[1].Likes, check[2].Likes})
	})
}

func TestAddWhereGuards(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := []Post{{Title: "a"}, {Title: "b"}}
		require.NoError(t, db.Create(&posts).Error)

		err := slotted.AddWhere(db.Model(&Post{}), "likes", 1)
		require.ErrorIs(t, err, gorm.ErrMissingWhereClause, "no conditions: refused")
		err = slotted.AddWhere(db.Where("title = ?", "a"), "likes", 1)
		require.ErrorIs(t, err, slotted.ErrUnsupportedModel, "no model")
		err = slotted.AddWhere(db.Model(&Post{}).Where("title = ?", "a"), "nope", 1)
		require.ErrorIs(t, err, slotted.ErrUnknownCounter)
		assert.Zero(t, counterRows(t, db), "nothing written")

		all := db.Session(&gorm.Session{AllowGlobalUpdate: true})
		require.NoError(t, slotted.AddWhere(all.Model(&Post{}), "likes", 1), "asked for every row")
		require.NoError(t, slotted.AddWhere(db.Model(&Post{ID: posts[1].ID}), "likes", 1), "a model with its key set is a condition")
		require.NoError(t, slotted.Load(db, posts))
		assert.EqualValues(t, []int64{1, 2}, []int64{posts[0].Likes, posts[1].Likes})

		// Soft-deleted records are skipped, as gorm's queries skip them.
		arts := []Article{{Title: "x"}, {Title: "x"}}
		require.NoError(t, db.Create(&arts).Error)
		require.NoError(t, db.Delete(&arts[1]).Error)
		require.NoError(t, slotted.AddWhere(db.Model(&Article{}).Where("title = ?", "x"), "likes", 1))
		a := []Article{{ID: arts[0].ID}, {ID: arts[1].ID}}
		require.NoError(t, slotted.Load(db, a))
		assert.EqualValues(t, []int64{1, 0}, []int64{a[0].Likes, a[1].Likes})

		// String and UUID keys: the record_id is the key's text.
		require.NoError(t, db.Create(&[]Tag{{Name: "go"}, {Name: "Rust "}}).Error)
		require.NoError(t, slotted.AddWhere(db.Model(&Tag{}).Where("name <> ?", ""), "uses", 2))
		n, err := slotted.CountRef(db, slotted.Ref{Type: "tags.uses", ID: "Rust "})
		require.NoError(t, err)
		assert.EqualValues(t, 2, n)
		doc := Doc{ID: uuidFor(9)}
		require.NoError(t, db.Create(&doc).Error)
		require.NoError(t, slotted.AddWhere(db.Model(&Doc{}).Where("id = ?", doc.ID), "reads", 1))
		n, err = slotted.Count(db, &doc, "reads")
		require.NoError(t, err)
		assert.EqualValues(t, 1, n)

		// Inside a rolled-back transaction nothing stays.
		require.ErrorIs(t, db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, slotted.AddWhere(tx.Model(&Post{}).Where("title = ?", "a"), "stars", 1))
			return errRollback
		}), errRollback)
		var stars int64
		require.NoError(t, slotted.Table(db).Where("record_type = ?", "post_stars").Count(&stars).Error)
		assert.Zero(t, stars)
	})
}
