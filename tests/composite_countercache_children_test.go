package tests

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// CKPost counts its per-tenant comments, children with a composite primary
// key (tenant_id, seq), four ways: live ones, published ones (Where + Match,
// weight 2), all (soft-deleted included) and the live ones' scores (Sum).
type CKPost struct {
	ID         uint
	BlogID     uint        `gorm:"index"`
	Comments   []CKComment `gorm:"foreignKey:PostID"`
	Live       int64       `gorm:"-" slotted:"live"`
	Published  int64       `gorm:"-" slotted:"published"`
	All        int64       `gorm:"-" slotted:"all"`
	Points     int64       `gorm:"-" slotted:"points"`
	LikesTotal int64       `gorm:"-" slotted:"likes_total"`
}

type CKComment struct {
	TenantID  uint `gorm:"primaryKey;autoIncrement:false"`
	Seq       uint `gorm:"primaryKey;autoIncrement:false"`
	PostID    uint `gorm:"index"`
	Published bool
	Score     int64
	DeletedAt gorm.DeletedAt `gorm:"index"`
}

func ckDB(t *testing.T, db *gorm.DB) []CKPost {
	t.Helper()
	require.NoError(t, db.Migrator().DropTable(&CKComment{}, &CKPost{}))
	require.NoError(t, db.AutoMigrate(&CKPost{}, &CKComment{}))
	t.Cleanup(func() { _ = db.Migrator().DropTable(&CKComment{}, &CKPost{}) })
	require.NoError(t, slotted.CounterCache(db, &CKPost{}, "Comments", "live"))
	require.NoError(t, slotted.CounterCache(db, &CKPost{}, "Comments", "published", slotted.CacheOptions{
		Where: "published = ?", WhereArgs: []any{true}, Weight: 2,
		Match: func(c *CKComment) bool { return c.Published },
	}))
	require.NoError(t, slotted.CounterCache(db, &CKPost{}, "Comments", "all", slotted.CacheOptions{WithDeleted: true}))
	require.NoError(t, slotted.CounterCache(db, &CKPost{}, "Comments", "points", slotted.CacheOptions{Sum: "Score"}))
	posts := make([]CKPost, 3)
	for i := range posts {
		require.NoError(t, db.Create(&posts[i]).Error) // one by one: a batch of DEFAULT VALUES rows gets one id back
		require.NotZero(t, posts[i].ID)
	}
	return posts
}

// ckCounts reads the three counters of every post; ckSource counts them from
// the comments table with GROUP BY post_id.
func ckCounts(t *testing.T, db *gorm.DB) map[uint][4]int64 {
	t.Helper()
	var posts []CKPost
	require.NoError(t, db.Order("id").Find(&posts).Error)
	out := map[uint][4]int64{}
	for _, p := range posts {
		if p.Live != 0 || p.Published != 0 || p.All != 0 || p.Points != 0 {
			out[p.ID] = [4]int64{p.Live, p.Published, p.All, p.Points}
		}
	}
	return out
}

func ckSource(t *testing.T, db *gorm.DB) map[uint][4]int64 {
	t.Helper()
	type row struct {
		PostID uint
		N      int64
	}
	out := map[uint][4]int64{}
	for i, q := range []*gorm.DB{
		db.Model(&CKComment{}).Where("post_id <> 0"),
		db.Model(&CKComment{}).Where("post_id <> 0 AND published = ?", true),
		db.Model(&CKComment{}).Unscoped().Where("post_id <> 0"),
		db.Model(&CKComment{}).Where("post_id <> 0"),
	} {
		var rows []row
		agg := "COUNT(*)"
		if i == 3 {
			agg = "COALESCE(SUM(score), 0)"
		}
		require.NoError(t, q.Select("post_id, "+agg+" AS n").Group("post_id").Scan(&rows).Error)
		for _, r := range rows {
			v := out[r.PostID]
			v[i] = r.N
			if i == 1 {
				v[i] *= 2 // Weight 2
			}
			out[r.PostID] = v
		}
	}
	return out
}

func ckCheck(t *testing.T, db *gorm.DB, step string) {
	t.Helper()
	require.Equal(t, ckSource(t, db), ckCounts(t, db), step)
}

func TestCompositeChildCounterCache(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := ckDB(t, db)
		p1, p2, p3 := posts[0].ID, posts[1].ID, posts[2].ID

		c := CKComment{TenantID: 1, Seq: 1, PostID: p1, Published: true, Score: 5}
		require.NoError(t, db.Create(&c).Error)
		ckCheck(t, db, "create")
		assert.Equal(t, map[uint][4]int64{p1: {1, 2, 1, 5}}, ckCounts(t, db))

		batch := []CKComment{
			{TenantID: 1, Seq: 2, PostID: p1, Score: 3}, {TenantID: 2, Seq: 1, PostID: p1, Published: true, Score: 7},
			{TenantID: 2, Seq: 2, PostID: p2}, {TenantID: 1, Seq: 3, PostID: p2, Published: true},
			{TenantID: 3, Seq: 1, PostID: p3},
		}
		require.NoError(t, db.Create(&batch).Error)
		ckCheck(t, db, "batch create")

		// Same seq, another tenant: a different row, only that one changes.
		require.NoError(t, db.Model(&CKComment{TenantID: 2, Seq: 1}).Update("post_id", p3).Error)
		ckCheck(t, db, "move by key")
		var moved CKComment
		require.NoError(t, db.First(&moved, "tenant_id = ? AND seq = ?", 1, 1).Error)
		assert.Equal(t, p1, moved.PostID, "(1,1) untouched by the move of (2,1)")

		require.NoError(t, db.Model(&c).Update("published", false).Error)
		ckCheck(t, db, "condition flip by key")
		require.NoError(t, db.Model(&c).Updates(map[string]any{"published": true, "post_id": p2}).Error)
		ckCheck(t, db, "flip and move")

		require.NoError(t, db.Model(&CKComment{}).Where("post_id = ?", p2).Update("post_id", p3).Error)
		ckCheck(t, db, "bulk move by condition")
		// Part of a key: gorm updates every row with that part, as counted.
		require.NoError(t, db.Model(&CKComment{TenantID: 2}).Update("post_id", p1).Error)
		ckCheck(t, db, "move by a key's first column")
		var tenant2 []CKComment
		require.NoError(t, db.Find(&tenant2, "tenant_id = ?", 2).Error)
		require.Len(t, tenant2, 2)
		for _, c := range tenant2 {
			assert.Equal(t, p1, c.PostID)
		}
		require.NoError(t, db.Model(&CKComment{Seq: 1}).Update("published", true).Error)
		ckCheck(t, db, "flip by a key's second column")
		require.NoError(t, db.Model(&CKComment{}).Where("post_id = ? AND tenant_id = ?", p3, 1).Update("published", false).Error)
		ckCheck(t, db, "bulk flip by condition")
		require.NoError(t, db.Model(&CKComment{}).Where("post_id = ?", p3).Update("score", gorm.Expr("score + ?", 10)).Error)
		ckCheck(t, db, "bulk sum change")

		c.PostID, c.Published = p1, true
		require.NoError(t, db.Save(&c).Error) // an upsert of an existing key
		ckCheck(t, db, "save (upsert)")
		require.NoError(t, db.Save(&CKComment{TenantID: 4, Seq: 1, PostID: p2, Published: true}).Error)
		ckCheck(t, db, "save (upsert) of a new key")

		require.NoError(t, db.Delete(&c).Error)
		ckCheck(t, db, "soft delete by key")
		require.NoError(t, db.Unscoped().Model(&CKComment{}).Where("tenant_id = ? AND seq = ?", 1, 1).Update("deleted_at", nil).Error)
		ckCheck(t, db, "restore")
		require.NoError(t, db.Where("post_id = ?", p3).Delete(&CKComment{}).Error)
		ckCheck(t, db, "soft delete by condition")
		require.NoError(t, db.Unscoped().Delete(&CKComment{TenantID: 4, Seq: 1}).Error)
		ckCheck(t, db, "hard delete by key")
		require.NoError(t, db.Unscoped().Where("post_id = ?", p3).Delete(&CKComment{}).Error)
		ckCheck(t, db, "hard delete of soft-deleted rows by condition")
		require.NoError(t, db.Unscoped().Delete(&[]CKComment{{TenantID: 1, Seq: 1}, {TenantID: 1, Seq: 2}}).Error)
		ckCheck(t, db, "hard delete of a slice")

		// A rolled-back transaction leaves the counters as they were.
		require.NoError(t, db.Create(&[]CKComment{{TenantID: 5, Seq: 1, PostID: p1, Published: true}, {TenantID: 5, Seq: 2, PostID: p2}}).Error)
		before := ckCounts(t, db)
		boom := errors.New("boom")
		err := db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, tx.Create(&CKComment{TenantID: 6, Seq: 1, PostID: p3, Published: true}).Error)
			require.NoError(t, tx.Model(&CKComment{}).Where("post_id = ?", p1).Update("post_id", p2).Error)
			require.NoError(t, tx.Delete(&CKComment{TenantID: 5, Seq: 2}).Error)
			return boom
		})
		require.ErrorIs(t, err, boom)
		assert.Equal(t, before, ckCounts(t, db), "rollback")
		ckCheck(t, db, "rollback")
	})
}

// Fix and FixAll repair drift from writes the callbacks do not see (raw SQL).
func TestCompositeChildCounterCacheFix(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := ckDB(t, db)
		p1, p2 := posts[0].ID, posts[1].ID
		require.NoError(t, db.Create(&[]CKComment{
			{TenantID: 1, Seq: 1, PostID: p1, Published: true}, {TenantID: 1, Seq: 2, PostID: p1},
			{TenantID: 2, Seq: 1, PostID: p2, Published: true},
		}).Error)
		require.NoError(t, db.Exec("INSERT INTO ck_comments (tenant_id, seq, post_id, published) VALUES (?, ?, ?, ?)", 9, 9, p1, true).Error)
		require.NoError(t, db.Exec("DELETE FROM ck_comments WHERE tenant_id = ? AND seq = ?", 2, 1).Error)
		require.NotEqual(t, ckSource(t, db), ckCounts(t, db))

		drift, err := slotted.Fix(db, &[]CKPost{{ID: p1}})
		require.NoError(t, err)
		assert.NotEmpty(t, drift)
		_, err = slotted.FixAll(db, &CKPost{})
		require.NoError(t, err)
		ckCheck(t, db, "after FixAll")
	})
}

// A composite-key child cannot be the intermediate of a SumCounter chain.
func TestCompositeChildCounterCacheSumCounterRefused(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		ckDB(t, db)
		err := slotted.CounterCache(db, &CKPost{}, "Comments", "likes_total", slotted.CacheOptions{SumCounter: "likes"})
		require.ErrorIs(t, err, slotted.ErrUnsupportedModel)
		assert.Contains(t, err.Error(), "composite primary key")
	})
}

// 48 writers on 3 hot posts: creates, deletes, FK moves (by key and by
// condition) and condition flips; the counters end equal to GROUP BY post_id.
func TestCompositeChildCounterCacheConcurrent(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := ckDB(t, db)
		limitConns(t, db)
		const writers, ops = 48, 8
		var seq, attempts, conflicts atomic.Uint32
		retryConflicts := func(op func() error) error {
			return retryConflicts(func() error {
				attempts.Add(1)
				err := op()
				if err != nil && retryable(err) {
					conflicts.Add(1)
				}
				return err
			})
		}
		var wg sync.WaitGroup
		errs := make(chan error, writers*ops)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tenant := uint(w%4 + 1)
				var mine []CKComment
				for i := range ops {
					post := posts[(w+i)%len(posts)].ID
					next := posts[(w+i+1)%len(posts)].ID
					var err error
					switch {
					case i < 3 || len(mine) == 0:
						c := CKComment{TenantID: tenant, Seq: uint(seq.Add(1)), PostID: post, Published: (w+i)%2 == 0, Score: int64(i)}
						if err = retryConflicts(func() error { return db.Create(&c).Error }); err == nil {
							mine = append(mine, c)
						}
					case i%4 == 0:
						c := mine[0]
						err = retryConflicts(func() error { return db.Model(&c).Update("post_id", next).Error })
					case i%4 == 1:
						c := mine[len(mine)-1]
						err = retryConflicts(func() error { return db.Model(&c).Update("published", i%2 == 0).Error })
					case i%4 == 2:
						err = retryConflicts(func() error {
							return db.Model(&CKComment{}).Where("post_id = ? AND tenant_id = ?", post, tenant).Update("post_id", next).Error
						})
					default:
						c := mine[len(mine)-1]
						mine = mine[:len(mine)-1]
						err = retryConflicts(func() error { return db.Delete(&c).Error })
					}
					if err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		t.Logf("%d statements, %d conflicts retried", attempts.Load(), conflicts.Load())
		ckCheck(t, db, "after the writers")
		var n int64
		require.NoError(t, db.Model(&CKComment{}).Count(&n).Error)
		assert.Positive(t, n)
	})
}

// A bulk statement reads its candidates' keys, locks them by the whole key
// in key order, and is restricted to the locked rows by a row-value IN.
func TestCompositeChildCounterCacheLockOrder(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := ckDB(t, db)
		require.NoError(t, db.Create(&[]CKComment{
			{TenantID: 2, Seq: 1, PostID: posts[0].ID}, {TenantID: 1, Seq: 2, PostID: posts[0].ID}, {TenantID: 1, Seq: 1, PostID: posts[0].ID},
		}).Error)
		rec, r := recorded(db)
		require.NoError(t, rec.Model(&CKComment{}).Where("post_id = ?", posts[0].ID).Update("post_id", posts[1].ID).Error)
		for _, s := range r.statements() {
			t.Log(s)
		}
		q := func(s string) string { // the dialect's identifier quotes
			if dialect(db) == "mysql" || dialect(db) == "sqlite" {
				return "`" + s + "`"
			}
			return `"` + s + `"`
		}
		rowIn := "(" + q("ck_comments") + "." + q("tenant_id") + "," + q("ck_comments") + "." + q("seq") + ") IN (("
		order := "ORDER BY " + q("ck_comments") + "." + q("tenant_id") + "," + q("ck_comments") + "." + q("seq")
		if dialect(db) != "sqlite" { // SQLite has one writer: one read, no row locks
			rowIn += "1,1),(1,2),(2,1))"
			assert.Equal(t, 1, r.count(rowIn, order, "FOR UPDATE"), "the locking read by key, in key order")
		}
		assert.Equal(t, 1, r.count("UPDATE "+q("ck_comments")+" SET", rowIn), "the UPDATE restricted to the locked rows")
		ckCheck(t, db, "bulk move")

		// One key is restricted column by column: MariaDB scans (and locks)
		// the whole table for an UPDATE by a one-row (a, b) IN ((?, ?)).
		rec, r = recorded(db)
		require.NoError(t, rec.Delete(&CKComment{TenantID: 1, Seq: 2}).Error)
		one := q("ck_comments") + "." + q("tenant_id") + " = 1 AND " + q("ck_comments") + "." + q("seq") + " = 2"
		if dialect(db) != "sqlite" {
			assert.Positive(t, r.count("SELECT", one, "FOR UPDATE"), "%q", r.statements())
		}
		assert.Equal(t, 1, r.count("UPDATE "+q("ck_comments")+" SET", one), "%q", r.statements())
		ckCheck(t, db, "delete by key")
	})
}

// CKBlog adds up its posts' "live" counters (SumCounter): the composite-key
// comments are the bottom level of the chain, under a single-key intermediate.
type CKBlog struct {
	ID    uint
	Posts []CKPost `gorm:"foreignKey:BlogID"`
	Live  int64    `gorm:"-" slotted:"live"`
}

func TestCompositeChildCounterCacheMultiLevel(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := ckDB(t, db)
		require.NoError(t, db.Migrator().DropTable(&CKBlog{}))
		require.NoError(t, db.AutoMigrate(&CKBlog{}))
		t.Cleanup(func() { _ = db.Migrator().DropTable(&CKBlog{}) })
		require.NoError(t, slotted.CounterCache(db, &CKBlog{}, "Posts", "live", slotted.CacheOptions{SumCounter: "live"}))
		blogs := []CKBlog{{ID: 1}, {ID: 2}}
		require.NoError(t, db.Create(&blogs).Error)
		require.NoError(t, db.Model(&CKPost{}).Where("id IN ?", []uint{posts[0].ID, posts[1].ID}).Update("blog_id", 1).Error)
		require.NoError(t, db.Model(&CKPost{}).Where("id = ?", posts[2].ID).Update("blog_id", 2).Error)
		blogLive := func() map[uint]int64 {
			var got []CKBlog
			require.NoError(t, db.Order("id").Find(&got).Error)
			out := map[uint]int64{}
			for _, b := range got {
				out[b.ID] = b.Live
			}
			return out
		}
		want := func() map[uint]int64 {
			out := map[uint]int64{1: 0, 2: 0}
			var ps []CKPost
			require.NoError(t, db.Find(&ps).Error)
			for _, p := range ps {
				if p.BlogID != 0 {
					out[p.BlogID] += p.Live
				}
			}
			return out
		}
		require.NoError(t, db.Create(&[]CKComment{
			{TenantID: 1, Seq: 1, PostID: posts[0].ID}, {TenantID: 2, Seq: 1, PostID: posts[1].ID}, {TenantID: 1, Seq: 2, PostID: posts[2].ID},
		}).Error)
		assert.Equal(t, map[uint]int64{1: 2, 2: 1}, blogLive(), "creates")
		require.NoError(t, db.Model(&CKComment{TenantID: 1, Seq: 1}).Update("post_id", posts[2].ID).Error)
		assert.Equal(t, map[uint]int64{1: 1, 2: 2}, blogLive(), "a comment moving blog through its post")
		require.NoError(t, db.Where("post_id = ?", posts[2].ID).Delete(&CKComment{}).Error)
		assert.Equal(t, map[uint]int64{1: 1, 2: 0}, blogLive(), "bulk delete")
		require.NoError(t, db.Model(&CKPost{}).Where("id = ?", posts[1].ID).Update("blog_id", 2).Error)
		assert.Equal(t, map[uint]int64{1: 0, 2: 1}, blogLive(), "the post moving blog carries its total")
		assert.Equal(t, want(), blogLive())
		ckCheck(t, db, "multi-level")
		require.NoError(t, db.Exec("UPDATE ck_comments SET post_id = ? WHERE tenant_id = ? AND seq = ?", posts[0].ID, 2, 1).Error)
		_, err := slotted.FixAll(db, &CKPost{})
		require.NoError(t, err)
		_, err = slotted.FixAll(db, &CKBlog{})
		require.NoError(t, err)
		assert.Equal(t, map[uint]int64{1: 1, 2: 0}, blogLive(), "after FixAll")
		ckCheck(t, db, "after FixAll")
	})
}

// Concurrent upserts (Save) of the same new composite keys count each row once.
func TestCompositeChildCounterCacheConcurrentSave(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := ckDB(t, db)
		limitConns(t, db)
		const writers = 16
		var wg sync.WaitGroup
		errs := make(chan error, writers*3)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range 3 {
					c := CKComment{TenantID: uint(k%2 + 1), Seq: uint(k + 1), PostID: posts[(w+k)%len(posts)].ID, Published: w%2 == 0, Score: int64(w)}
					if err := retryConflicts(func() error { return db.Save(&c).Error }); err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		var n int64
		require.NoError(t, db.Model(&CKComment{}).Count(&n).Error)
		assert.EqualValues(t, 3, n)
		ckCheck(t, db, "after concurrent saves")
	})
}

// Composite keys on both sides: a tenant's teams (org_id, slug) count their
// members (org_id, seq), whose foreign key (org_id, team_slug) shares org_id
// with their own key.
type CKTeam struct {
	OrgID   uint       `gorm:"primaryKey;autoIncrement:false"`
	Slug    string     `gorm:"primaryKey;size:64"`
	Members []CKMember `gorm:"foreignKey:OrgID,TeamSlug;references:OrgID,Slug"`
	Count   int64      `gorm:"-" slotted:"members"`
}

type CKMember struct {
	OrgID    uint    `gorm:"primaryKey;autoIncrement:false"`
	Seq      uint    `gorm:"primaryKey;autoIncrement:false"`
	TeamSlug *string `gorm:"size:64"`
}

func TestCompositeChildOfCompositeParent(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.Migrator().DropTable(&CKMember{}, &CKTeam{}))
		require.NoError(t, db.AutoMigrate(&CKTeam{}, &CKMember{}))
		t.Cleanup(func() { _ = db.Migrator().DropTable(&CKMember{}, &CKTeam{}) })
		require.NoError(t, slotted.CounterCache(db, &CKTeam{}, "Members", "members"))
		require.NoError(t, db.Create(&[]CKTeam{{OrgID: 1, Slug: "a"}, {OrgID: 1, Slug: "b"}, {OrgID: 2, Slug: "a"}, {OrgID: 2, Slug: "b"}}).Error)
		counts := func() map[string]int64 {
			var teams []CKTeam
			require.NoError(t, db.Order("org_id, slug").Find(&teams).Error)
			out := map[string]int64{}
			for _, tm := range teams {
				out[fmt.Sprintf("%d/%s", tm.OrgID, tm.Slug)] = tm.Count
			}
			return out
		}
		require.NoError(t, db.Create(&[]CKMember{{OrgID: 1, Seq: 1, TeamSlug: slug("a")}, {OrgID: 1, Seq: 2, TeamSlug: slug("a")}, {OrgID: 2, Seq: 1, TeamSlug: slug("a")}}).Error)
		assert.Equal(t, map[string]int64{"1/a": 2, "1/b": 0, "2/a": 1, "2/b": 0}, counts())
		require.NoError(t, db.Model(&CKMember{OrgID: 1, Seq: 2}).Update("team_slug", "b").Error)
		assert.Equal(t, map[string]int64{"1/a": 1, "1/b": 1, "2/a": 1, "2/b": 0}, counts())
		require.NoError(t, db.Model(&CKMember{}).Where("team_slug = ?", "a").Update("team_slug", "b").Error)
		assert.Equal(t, map[string]int64{"1/a": 0, "1/b": 2, "2/a": 0, "2/b": 1}, counts(), "each member to its own org's team b")
		require.NoError(t, db.Delete(&CKMember{OrgID: 1, Seq: 1}).Error)
		assert.Equal(t, map[string]int64{"1/a": 0, "1/b": 1, "2/a": 0, "2/b": 1}, counts())
		require.NoError(t, db.Exec("UPDATE ck_members SET team_slug = ? WHERE org_id = ?", "a", 2).Error)
		_, err := slotted.FixAll(db, &CKTeam{})
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{"1/a": 0, "1/b": 1, "2/a": 1, "2/b": 0}, counts(), "after FixAll")
	})
}
