package tests

import (
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// Multi-level: reviews counted on their company through their user
// (region ← company ← user ← review).
type MLRegion struct {
	ID        uint
	Name      string      // a batch of structs without columns inserts one row (DEFAULT VALUES)
	Companies []MLCompany `gorm:"foreignKey:RegionID"`
	Reviews   int64       `gorm:"-" slotted:"reviews"`
}

type MLCompany struct {
	ID        uint
	RegionID  *uint    `gorm:"index"`
	Users     []MLUser `gorm:"foreignKey:CompanyID;constraint:OnDelete:SET NULL"`
	Reviews   int64    `gorm:"-" slotted:"reviews"`
	Published int64    `gorm:"-" slotted:"published"`
	Active    int64    `gorm:"-" slotted:"active_reviews"`
	Weighted  int64    `gorm:"-" slotted:"weighted"`
}

type MLUser struct {
	ID        uint
	CompanyID *uint `gorm:"index"`
	Active    bool
	Reviews   []MLReview `gorm:"foreignKey:UserID;constraint:OnDelete:SET NULL"`
	DeletedAt gorm.DeletedAt
	Count     int64 `gorm:"-" slotted:"reviews"`
	Published int64 `gorm:"-" slotted:"published"`
}

type MLReview struct {
	ID        uint
	UserID    *uint `gorm:"index"`
	Published bool
	DeletedAt gorm.DeletedAt
}

func mlDB(t testing.TB, db *gorm.DB) {
	t.Helper()
	require.NoError(t, db.Migrator().DropTable(&MLReview{}, &MLUser{}, &MLCompany{}, &MLRegion{}))
	require.NoError(t, db.AutoMigrate(&MLRegion{}, &MLCompany{}, &MLUser{}, &MLReview{}))
	require.NoError(t, slotted.CounterCache(db, &MLUser{}, "Reviews", "reviews"))
	require.NoError(t, slotted.CounterCache(db, &MLUser{}, "Reviews", "published",
		slotted.CacheOptions{Where: "published = ?", WhereArgs: []any{true}, Match: func(r *MLReview) bool { return r.Published }}))
	require.NoError(t, slotted.CounterCache(db, &MLCompany{}, "Users", "reviews", slotted.CacheOptions{SumCounter: "reviews"}))
	require.NoError(t, slotted.CounterCache(db, &MLCompany{}, "Users", "published", slotted.CacheOptions{SumCounter: "published"}))
	// A condition on the intermediate level: reviews of active users only.
	require.NoError(t, slotted.CounterCache(db, &MLCompany{}, "Users", "active_reviews", slotted.CacheOptions{SumCounter: "reviews", Where: "active = ?", WhereArgs: []any{true}, Match: func(u *MLUser) bool { return u.Active }}))
	// Options at the second level: 3 per review, soft-deleted users' reviews too.
	require.NoError(t, slotted.CounterCache(db, &MLCompany{}, "Users", "weighted", slotted.CacheOptions{SumCounter: "reviews", Weight: 3, WithDeleted: true}))
	require.NoError(t, slotted.CounterCache(db, &MLRegion{}, "Companies", "reviews", slotted.CacheOptions{SumCounter: "reviews"}))
}

// requireMLExact checks every counter of every level against the source: a
// COUNT of the reviews through a join of the intermediate tables.
func requireMLExact(t testing.TB, db *gorm.DB) {
	t.Helper()
	var users []MLUser
	require.NoError(t, db.Unscoped().Find(&users).Error)
	for _, u := range users {
		var n, pub int64
		require.NoError(t, db.Model(&MLReview{}).Where("user_id = ?", u.ID).Count(&n).Error)
		require.NoError(t, db.Model(&MLReview{}).Where("user_id = ? AND published = ?", u.ID, true).Count(&pub).Error)
		require.Equal(t, n, u.Count, "user %d reviews", u.ID)
		require.Equal(t, pub, u.Published, "user %d published", u.ID)
	}
	through := func(where string, args ...any) int64 {
		t.Helper()
		var n int64
		require.NoError(t, db.Table("ml_reviews").
			Joins("JOIN ml_users ON ml_users.id = ml_reviews.user_id").
			Joins("JOIN ml_companies ON ml_companies.id = ml_users.company_id").
			Where("ml_reviews.deleted_at IS NULL AND ml_users.deleted_at IS NULL").
			Where(where, args...).Count(&n).Error)
		return n
	}
	var companies []MLCompany
	require.NoError(t, db.Find(&companies).Error)
	for _, c := range companies {
		require.Equal(t, through("ml_companies.id = ?", c.ID), c.Reviews, "company %d reviews", c.ID)
		require.Equal(t, through("ml_companies.id = ? AND ml_reviews.published = ?", c.ID, true), c.Published, "company %d published", c.ID)
		require.Equal(t, through("ml_companies.id = ? AND ml_users.active = ?", c.ID, true), c.Active, "company %d active", c.ID)
		var withDeleted int64
		require.NoError(t, db.Table("ml_reviews").Joins("JOIN ml_users ON ml_users.id = ml_reviews.user_id").
			Where("ml_reviews.deleted_at IS NULL AND ml_users.company_id = ?", c.ID).Count(&withDeleted).Error)
		require.Equal(t, 3*withDeleted, c.Weighted, "company %d weighted", c.ID)
	}
	var regions []MLRegion
	require.NoError(t, db.Find(&regions).Error)
	for _, r := range regions {
		require.Equal(t, through("ml_companies.region_id = ?", r.ID), r.Reviews, "region %d reviews", r.ID)
	}
}

func mlCount(t testing.TB, db *gorm.DB, model any, counter string) int64 {
	t.Helper()
	n, err := slotted.Count(db, model, counter)
	require.NoError(t, err)
	return n
}

// TestCounterCacheMultiLevel: every change kind at the bottom (create,
// batch, move to another user, condition flip, soft delete, restore, hard
// delete) and at the intermediate levels (a user changing company, in bulk
// too, soft-deleted, restored, deleted, deactivated; a company changing
// region), rollbacks, and Fix/FixAll through the join.
func TestCounterCacheMultiLevel(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		mlDB(t, db)
		regions := []MLRegion{{Name: "north"}, {Name: "south"}}
		require.NoError(t, db.Create(&regions).Error)
		companies := []MLCompany{{RegionID: ref(regions[0].ID)}, {RegionID: ref(regions[1].ID)}}
		require.NoError(t, db.Create(&companies).Error)
		c1, c2 := &companies[0], &companies[1]
		users := []MLUser{{CompanyID: ref(c1.ID), Active: true}, {CompanyID: ref(c1.ID)}, {CompanyID: ref(c2.ID), Active: true}, {}}
		require.NoError(t, db.Create(&users).Error)
		u1, u2, u3, u4 := &users[0], &users[1], &users[2], &users[3]

		// Creates, one and a batch.
		r1 := MLReview{UserID: ref(u1.ID), Published: true}
		require.NoError(t, db.Create(&r1).Error)
		require.NoError(t, db.Create(&[]MLReview{{UserID: ref(u1.ID)}, {UserID: ref(u2.ID)}, {UserID: ref(u3.ID), Published: true}, {UserID: ref(u4.ID)}, {}}).Error)
		assert.Equal(t, int64(3), mlCount(t, db, c1, "reviews"))
		assert.Equal(t, int64(1), mlCount(t, db, c1, "published"))
		assert.Equal(t, int64(2), mlCount(t, db, c1, "active_reviews"))
		assert.Equal(t, int64(1), mlCount(t, db, c2, "reviews"))
		assert.Equal(t, int64(3), mlCount(t, db, &regions[0], "reviews"))
		requireMLExact(t, db)

		// A nested create: a user with reviews, a company with a user with reviews.
		require.NoError(t, db.Create(&MLUser{CompanyID: ref(c2.ID), Reviews: []MLReview{{}, {Published: true}}}).Error)
		require.NoError(t, db.Create(&MLCompany{RegionID: ref(regions[1].ID), Users: []MLUser{{Reviews: []MLReview{{}}}}}).Error)
		assert.Equal(t, int64(3), mlCount(t, db, c2, "reviews"))
		assert.Equal(t, int64(4), mlCount(t, db, &regions[1], "reviews"))
		requireMLExact(t, db)
		require.NoError(t, db.Where("user_id IN (?)", db.Model(&MLUser{}).Select("id").Where("id > ?", u4.ID)).Delete(&MLReview{}).Error)
		assert.Equal(t, int64(1), mlCount(t, db, c2, "reviews"))
		assert.Equal(t, int64(1), mlCount(t, db, &regions[1], "reviews"))

		// A review moving to a user of another company, a condition flip, a
		// review moving to the user without company.
		require.NoError(t, db.Model(&r1).Update("user_id", u3.ID).Error)
		assert.Equal(t, int64(2), mlCount(t, db, c1, "reviews"))
		assert.Equal(t, int64(2), mlCount(t, db, c2, "reviews"))
		assert.Equal(t, int64(2), mlCount(t, db, c2, "published"))
		require.NoError(t, db.Model(&r1).Update("published", false).Error)
		assert.Equal(t, int64(1), mlCount(t, db, c2, "published"))
		require.NoError(t, db.Model(&r1).Update("user_id", u4.ID).Error)
		assert.Equal(t, int64(1), mlCount(t, db, c2, "reviews"))
		requireMLExact(t, db)

		// Soft delete, restore, hard delete of a review.
		require.NoError(t, db.Delete(&MLReview{}, "user_id = ?", u2.ID).Error)
		assert.Equal(t, int64(1), mlCount(t, db, c1, "reviews"))
		require.NoError(t, db.Unscoped().Model(&MLReview{}).Where("user_id = ?", u2.ID).Update("deleted_at", nil).Error)
		assert.Equal(t, int64(2), mlCount(t, db, c1, "reviews"))
		requireMLExact(t, db)

		// A user changing company moves all their reviews at once.
		require.NoError(t, db.Create(&[]MLReview{{UserID: ref(u1.ID)}, {UserID: ref(u1.ID)}}).Error)
		assert.Equal(t, int64(4), mlCount(t, db, c1, "reviews"))
		rdb, rec := recorded(db)
		require.NoError(t, rdb.Model(u1).Update("company_id", c2.ID).Error)
		assert.Equal(t, 1, rec.count("INSERT INTO", "ml_companies.reviews"), "one upsert of -3 and +3: %v", rec.statements())
		assert.Equal(t, int64(1), mlCount(t, db, c1, "reviews"))
		assert.Equal(t, int64(4), mlCount(t, db, c2, "reviews"))
		assert.Equal(t, int64(1), mlCount(t, db, &regions[0], "reviews"))
		assert.Equal(t, int64(4), mlCount(t, db, &regions[1], "reviews"))
		requireMLExact(t, db)
		// The user without company joins one; a bulk move of every user of c2.
		require.NoError(t, db.Model(u4).Update("company_id", c1.ID).Error)
		assert.Equal(t, int64(3), mlCount(t, db, c1, "reviews"))
		require.NoError(t, db.Model(&MLUser{}).Where("company_id = ?", c2.ID).Update("company_id", c1.ID).Error)
		assert.Equal(t, int64(7), mlCount(t, db, c1, "reviews"))
		assert.Equal(t, int64(0), mlCount(t, db, c2, "reviews"))
		requireMLExact(t, db)
		// The condition on the user flips.
		require.NoError(t, db.Model(u1).Update("active", false).Error)
		requireMLExact(t, db)
		// A Save that changes nothing counted reads no totals (no slot upsert).
		var fresh MLUser
		require.NoError(t, db.First(&fresh, u3.ID).Error)
		rdb2, rec2 := recorded(db)
		require.NoError(t, rdb2.Save(&fresh).Error)
		assert.Zero(t, rec2.count("ml_users.reviews"), "%v", rec2.statements()) // on MySQL gorm turns the no-op UPDATE into an upsert

		// A company changes region: the region counter moves with it.
		require.NoError(t, db.Model(c1).Update("region_id", regions[1].ID).Error)
		assert.Equal(t, int64(0), mlCount(t, db, &regions[0], "reviews"))
		assert.Equal(t, int64(7), mlCount(t, db, &regions[1], "reviews"))
		requireMLExact(t, db)

		// A user soft-deleted, restored, then deleted (its reviews keep their
		// user counter but count on no company).
		weighted := mlCount(t, db, c1, "weighted")
		require.NoError(t, db.Delete(u1).Error)
		assert.Equal(t, int64(4), mlCount(t, db, c1, "reviews"))
		assert.Equal(t, weighted, mlCount(t, db, c1, "weighted"), "WithDeleted: a soft delete leaves it")
		require.NoError(t, db.Unscoped().Model(u1).Update("deleted_at", nil).Error)
		assert.Equal(t, int64(7), mlCount(t, db, c1, "reviews"))
		require.NoError(t, db.Unscoped().Delete(u2).Error)
		requireMLExact(t, db)

		// Rollbacks at both levels: nothing moves.
		before := []int64{mlCount(t, db, c1, "reviews"), mlCount(t, db, c2, "reviews"), mlCount(t, db, u3, "reviews")}
		require.Error(t, db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, tx.Create(&MLReview{UserID: ref(u3.ID)}).Error)
			require.NoError(t, tx.Model(u3).Update("company_id", c2.ID).Error)
			require.NoError(t, tx.Model(&MLReview{}).Where("user_id = ?", u1.ID).Update("user_id", u3.ID).Error)
			assert.NotEqual(t, before[1], mlCount(t, tx, c2, "reviews"), "visible inside")
			return errors.New("roll back")
		}))
		assert.Equal(t, before, []int64{mlCount(t, db, c1, "reviews"), mlCount(t, db, c2, "reviews"), mlCount(t, db, u3, "reviews")})
		requireMLExact(t, db)

		// Fix recounts through the joins: drift injected at the bottom (a raw
		// insert) and in the counters themselves.
		require.NoError(t, db.Exec("INSERT INTO ml_reviews (user_id, published) VALUES (?, ?)", u3.ID, true).Error)
		require.NoError(t, slotted.Increment(db, c2, "reviews"))
		drift, err := slotted.Fix(db, &[]MLUser{*u3})
		require.NoError(t, err)
		assert.Len(t, drift, 2) // reviews and published of u3
		drift, err = slotted.Fix(db, &[]MLCompany{*c1, *c2}, slotted.FixOptions{DryRun: true})
		require.NoError(t, err)
		assert.Len(t, drift, 5, "%+v", drift) // c1: reviews, published, active, weighted; c2: reviews
		prog, err := slotted.FixAll(db, &MLCompany{})
		require.NoError(t, err)
		assert.Equal(t, 5, prog.Drifted)
		_, err = slotted.FixAll(db, &MLRegion{})
		require.NoError(t, err)
		requireMLExact(t, db)
		drift, err = slotted.Fix(db, &[]MLCompany{*c1, *c2})
		require.NoError(t, err)
		assert.Empty(t, drift)
		// Three levels: the region's count joins companies, users and reviews.
		require.NoError(t, slotted.Increment(db, &regions[1], "reviews"))
		drift, err = slotted.Fix(db, &regions)
		require.NoError(t, err)
		require.Len(t, drift, 1)
		assert.Equal(t, drift[0].Stored-1, drift[0].Actual)
		requireMLExact(t, db)
	})
}

// TestCounterCacheMultiLevelErrors: bad SumCounter declarations are refused
// and register nothing; a duplicate declaration is refused as for one level.
func TestCounterCacheMultiLevelErrors(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.Migrator().DropTable(&MLReview{}, &MLUser{}, &MLCompany{}, &MLRegion{}))
		require.NoError(t, db.AutoMigrate(&MLRegion{}, &MLCompany{}, &MLUser{}, &MLReview{}))
		err := slotted.CounterCache(db, &MLCompany{}, "Users", "reviews", slotted.CacheOptions{SumCounter: "reviews"})
		require.ErrorIs(t, err, slotted.ErrInvalidConfig, "the user counter is not a counter cache yet")
		err = slotted.CounterCache(db, &MLCompany{}, "Users", "reviews", slotted.CacheOptions{SumCounter: "nope"})
		require.ErrorIs(t, err, slotted.ErrUnknownCounter)
		require.NoError(t, slotted.CounterCache(db, &MLUser{}, "Reviews", "reviews"))
		err = slotted.CounterCache(db, &MLCompany{}, "Users", "reviews", slotted.CacheOptions{SumCounter: "reviews", Sum: "Active"})
		require.ErrorIs(t, err, slotted.ErrInvalidConfig)
		require.NoError(t, slotted.CounterCache(db, &MLCompany{}, "Users", "reviews", slotted.CacheOptions{SumCounter: "reviews"}))
		err = slotted.CounterCache(db, &MLCompany{}, "Users", "reviews", slotted.CacheOptions{SumCounter: "reviews"})
		require.ErrorIs(t, err, slotted.ErrInvalidConfig, "declared twice")
		err = slotted.CounterCache(db, &MLCompany{}, "Users", "reviews")
		require.ErrorIs(t, err, slotted.ErrInvalidConfig, "declared twice, another way")
	})
}

// TestCounterCacheMultiLevelConcurrent: 48 goroutines on three hot companies:
// review creates, deletes and moves between users, and users changing
// company; every counter equals the join afterwards, and Fix finds no drift.
func TestCounterCacheMultiLevelConcurrent(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		mlDB(t, db)
		companies := []MLCompany{{}, {}, {}}
		require.NoError(t, db.Create(&companies).Error)
		var users []MLUser
		for i := range 6 {
			users = append(users, MLUser{CompanyID: ref(companies[i%3].ID), Active: i%2 == 0})
		}
		require.NoError(t, db.Create(&users).Error)
		limitConns(t, db)
		var ops, conflicts atomic.Int64
		var byKind [5]atomic.Int64 // conflicts of: create, review move, delete, user move, flip
		retry := func(kind int, op func() error) error {
			deadline := time.Now().Add(60 * time.Second) // SQLite: a deferred transaction that read first fails at once when busy
			for attempt := 0; ; attempt++ {
				ops.Add(1)
				err := op()
				if err == nil || !retryable(err) || time.Now().After(deadline) {
					return err
				}
				conflicts.Add(1)
				byKind[kind].Add(1)
				time.Sleep(time.Duration(rand.IntN(1+min(attempt, 20))) * time.Millisecond)
			}
		}
		opsEach := 8
		if dialect(db) == "sqlite" {
			opsEach = 4 // one writer at a time: the same goroutines, fewer rounds
		}
		start := time.Now()
		errs := run(48, func(w int) error {
			r := rand.New(rand.NewPCG(uint64(w), 21))
			user := func() *uint { return &users[r.IntN(len(users))].ID }
			for range opsEach {
				rv := MLReview{UserID: ref(*user()), Published: r.IntN(2) == 0}
				if err := retry(0, func() error { rv.ID = 0; return db.Create(&rv).Error }); err != nil {
					return err
				}
				var err error
				switch r.IntN(4) {
				case 0:
					to := user()
					err = retry(1, func() error { return db.Model(&MLReview{ID: rv.ID}).Update("user_id", *to).Error })
				case 1:
					err = retry(2, func() error { return db.Delete(&MLReview{ID: rv.ID}).Error })
				case 2:
					u, c := user(), companies[r.IntN(3)].ID
					err = retry(3, func() error { return db.Model(&MLUser{ID: *u}).Update("company_id", c).Error })
				case 3:
					err = retry(4, func() error { return db.Model(&MLReview{ID: rv.ID}).Update("published", !rv.Published).Error })
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		for _, err := range errs {
			require.NoError(t, err)
		}
		t.Logf("%s: %d statements, %d conflicts retried (create %d, review move %d, delete %d, user move %d, flip %d), %s", dialect(db), ops.Load(), conflicts.Load(),
			byKind[0].Load(), byKind[1].Load(), byKind[2].Load(), byKind[3].Load(), byKind[4].Load(), time.Since(start).Round(time.Millisecond))
		requireMLExact(t, db)
		prog, err := slotted.FixAll(db, &MLCompany{})
		require.NoError(t, err)
		assert.Zero(t, prog.Drifted)
	})
}

// ref copies v: a pointer into another record would be written through by
// gorm's Update of the field (Model(&review).Update("user_id", 9) sets *UserID).
func ref[T any](v T) *T { return &v }
