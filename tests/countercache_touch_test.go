package tests

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// TouchForum's counter cache touches its updated_at.
type TouchForum struct {
	ID        uint
	UpdatedAt time.Time
	Posts     []TouchPost
	Count     int64 `gorm:"-" slotted:"posts"`
}

type TouchPost struct {
	ID           uint
	TouchForumID uint `gorm:"index"`
	Title        string
	DeletedAt    gorm.DeletedAt
}

func touchDB(t testing.TB, db *gorm.DB) {
	t.Helper()
	require.NoError(t, db.Migrator().DropTable(&TouchPost{}, &TouchForum{}))
	require.NoError(t, db.AutoMigrate(&TouchForum{}, &TouchPost{}))
	require.NoError(t, slotted.CounterCache(db, &TouchForum{}, "Posts", "posts", slotted.CacheOptions{Touch: true}))
}

// TestCounterCacheTouch: a change of the count sets the parent's updated_at in
// the same transaction; a change that leaves the count alone, and a rollback,
// do not. 48 goroutines on three forums leave the counts exact.
func TestCounterCacheTouch(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		touchDB(t, db)
		require.ErrorIs(t, slotted.CounterCache(db, &Topic{}, "Replies", "weighted", slotted.CacheOptions{Touch: true}), slotted.ErrInvalidConfig,
			"Topic has no UpdatedAt")

		forums := []TouchForum{{}, {}, {}}
		require.NoError(t, db.Create(&forums).Error)
		old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
		age := func() {
			require.NoError(t, db.Session(&gorm.Session{AllowGlobalUpdate: true}).Model(&TouchForum{}).UpdateColumn("updated_at", old).Error)
		}
		touched := func(id uint) bool {
			var f TouchForum
			require.NoError(t, db.First(&f, id).Error)
			return f.UpdatedAt.After(old.Add(time.Hour))
		}
		exact := func(ids ...uint) {
			t.Helper()
			for _, id := range ids {
				var n int64
				require.NoError(t, db.Model(&TouchPost{}).Where("touch_forum_id = ?", id).Count(&n).Error)
				got, err := slotted.Count(db, &TouchForum{ID: id}, "posts")
				require.NoError(t, err)
				require.Equal(t, n, got, "forum %d", id)
			}
		}
		a, b, c := forums[0].ID, forums[1].ID, forums[2].ID

		age()
		p := TouchPost{TouchForumID: a}
		require.NoError(t, db.Create(&p).Error)
		assert.True(t, touched(a))
		assert.False(t, touched(b))

		age()
		require.NoError(t, db.Model(&p).Update("title", "x").Error)
		assert.False(t, touched(a), "not a counted column")
		require.NoError(t, db.Model(&p).Update("touch_forum_id", b).Error)
		assert.True(t, touched(a), "moved away")
		assert.True(t, touched(b), "moved in")
		assert.False(t, touched(c))

		age()
		require.Error(t, db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, tx.Create(&TouchPost{TouchForumID: c}).Error)
			return errors.New("roll back")
		}))
		assert.False(t, touched(c), "rolled back")
		require.NoError(t, db.Delete(&p).Error)
		assert.True(t, touched(b), "soft delete")
		exact(a, b, c)

		// Concurrency: creates and deletes on three hot forums.
		limitConns(t, db)
		ids := []uint{a, b, c}
		errs := run(48, func(w int) error {
			r := rand.New(rand.NewPCG(uint64(w), 21))
			for range 6 {
				f := ids[r.IntN(len(ids))]
				post := TouchPost{TouchForumID: f}
				if err := retryConflicts(func() error { post.ID = 0; return db.Create(&post).Error }); err != nil {
					return err
				}
				if r.IntN(3) == 0 {
					if err := retryConflicts(func() error { return db.Delete(&TouchPost{ID: post.ID}).Error }); err != nil {
						return err
					}
				}
			}
			return nil
		})
		for _, err := range errs {
			require.NoError(t, err)
		}
		exact(a, b, c)

		// Fix repairs drift; it does not touch.
		require.NoError(t, db.Exec("DELETE FROM touch_posts WHERE touch_forum_id = ?", a).Error)
		drift, err := slotted.Fix(db, &[]TouchForum{{ID: a}, {ID: b}, {ID: c}})
		require.NoError(t, err)
		assert.NotEmpty(t, drift)
		exact(a, b, c)
	})
}
