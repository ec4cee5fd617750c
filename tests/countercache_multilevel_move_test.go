package tests

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// TestCounterCacheMultiLevelMove: a user created with a company, its reviews
// created afterwards in one batch (the user's in-memory counter stays 0), then
// moved between companies with Model(&u).Update, Save, and Save with its
// reviews loaded (association saving): each move takes all the reviews from
// the old company to the new one. Only the first-level "reviews" cache is
// declared on the user, as in Example_sumCounter.
func TestCounterCacheMultiLevelMove(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.Migrator().DropTable(&MLReview{}, &MLUser{}, &MLCompany{}, &MLRegion{}))
		require.NoError(t, db.AutoMigrate(&MLRegion{}, &MLCompany{}, &MLUser{}, &MLReview{}))
		require.NoError(t, slotted.CounterCache(db, &MLUser{}, "Reviews", "reviews"))
		require.NoError(t, slotted.CounterCache(db, &MLCompany{}, "Users", "reviews", slotted.CacheOptions{SumCounter: "reviews"}))

		acme, other := MLCompany{}, MLCompany{}
		require.NoError(t, db.Create(&acme).Error)
		require.NoError(t, db.Create(&other).Error)
		a, o := acme.ID, other.ID // by value: the moves below must not be able to change them
		// Both companies checked by id against the reviews joined through the users.
		check := func(wantA, wantO int64) {
			t.Helper()
			for id, want := range map[uint]int64{a: wantA, o: wantO} {
				var joined int64
				require.NoError(t, db.Table("ml_reviews").Joins("JOIN ml_users ON ml_users.id = ml_reviews.user_id").
					Where("ml_reviews.deleted_at IS NULL AND ml_users.deleted_at IS NULL AND ml_users.company_id = ?", id).
					Count(&joined).Error)
				require.Equal(t, want, joined, "company %d: the test's expectation", id)
				assert.Equal(t, want, mlCount(t, db, &MLCompany{ID: id}, "reviews"), "company %d", id)
			}
		}

		ann := MLUser{CompanyID: ref(a)}
		require.NoError(t, db.Create(&ann).Error)
		require.NoError(t, db.Create(&[]MLReview{{UserID: ref(ann.ID)}, {UserID: ref(ann.ID)}, {UserID: ref(ann.ID)}}).Error)
		require.Equal(t, int64(0), ann.Count, "the in-memory counter was not refreshed")
		check(3, 0)

		// Model(&u).Update: -3 on acme, +3 on other, in one statement.
		require.NoError(t, db.Model(&ann).Update("company_id", o).Error)
		check(0, 3)
		require.NoError(t, db.Model(&ann).Update("company_id", a).Error)
		check(3, 0)

		// Save of the whole row (every column written).
		ann.CompanyID = ref(o)
		require.NoError(t, db.Save(&ann).Error)
		check(0, 3)

		// Save with the reviews loaded: gorm saves them too (an upsert of the
		// children), so the total is read before the statement.
		var loaded MLUser
		require.NoError(t, db.Preload("Reviews").First(&loaded, ann.ID).Error)
		require.Len(t, loaded.Reviews, 3)
		loaded.CompanyID = ref(a)
		require.NoError(t, db.Save(&loaded).Error)
		check(3, 0)

		// More reviews in one batch after the moves, then back: all 5 move.
		require.NoError(t, db.Create(&[]MLReview{{UserID: ref(ann.ID)}, {UserID: ref(ann.ID)}}).Error)
		check(5, 0)
		require.NoError(t, db.Model(&MLUser{ID: ann.ID}).Update("company_id", o).Error)
		check(0, 5)

		// The trap of Example_sumCounter as first written: CompanyID pointing
		// at the company struct's own ID. gorm's Update stores the new value
		// through that pointer, so the struct then names the other company;
		// the counters by id are still right.
		bob := MLUser{CompanyID: &acme.ID}
		require.NoError(t, db.Create(&bob).Error)
		require.NoError(t, db.Create(&[]MLReview{{UserID: ref(bob.ID)}, {UserID: ref(bob.ID)}}).Error)
		check(2, 5)
		require.NoError(t, db.Model(&bob).Update("company_id", o).Error)
		assert.Equal(t, o, acme.ID, "gorm wrote the new company_id into acme.ID")
		check(0, 7)
	})
}
