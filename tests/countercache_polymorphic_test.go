package tests

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// Polymorphic comments: on posts and on videos, one table (owner_type, owner_id).
type PolyPost struct {
	ID       uint
	Comments []PolyComment `gorm:"polymorphic:Owner"`
	Count    int64         `gorm:"-" slotted:"comments"`
}

type PolyVideo struct {
	ID       uint
	Comments []PolyComment `gorm:"polymorphic:Owner"`
	Count    int64         `gorm:"-" slotted:"comments"`
}

type PolyComment struct {
	ID        uint
	OwnerID   uint   `gorm:"index"`
	OwnerType string `gorm:"size:32;index"`
	Body      string
	DeletedAt gorm.DeletedAt
}

func polyDB(t testing.TB, db *gorm.DB) {
	t.Helper()
	require.NoError(t, db.Migrator().DropTable(&PolyComment{}, &PolyPost{}, &PolyVideo{}))
	require.NoError(t, db.AutoMigrate(&PolyPost{}, &PolyVideo{}, &PolyComment{}))
	require.NoError(t, slotted.CounterCache(db, &PolyPost{}, "Comments", "comments"))
	require.NoError(t, slotted.CounterCache(db, &PolyVideo{}, "Comments", "comments"))
}

// requirePolyExact checks every post's and video's counter against the comments table.
func requirePolyExact(t testing.TB, db *gorm.DB) {
	t.Helper()
	var posts []PolyPost
	var videos []PolyVideo
	require.NoError(t, db.Find(&posts).Error) // auto-filled counters
	require.NoError(t, db.Find(&videos).Error)
	for _, p := range posts {
		var n int64
		require.NoError(t, db.Model(&PolyComment{}).Where("owner_type = ? AND owner_id = ?", "poly_posts", p.ID).Count(&n).Error)
		require.Equal(t, n, p.Count, "post %d", p.ID)
	}
	for _, v := range videos {
		var n int64
		require.NoError(t, db.Model(&PolyComment{}).Where("owner_type = ? AND owner_id = ?", "poly_videos", v.ID).Count(&n).Error)
		require.Equal(t, n, v.Count, "video %d", v.ID)
	}
}

// TestCounterCachePolymorphic: comments on posts and videos with the same ids
// count on their own owner only, through creates, moves of the id and of the
// type, association Append/Delete/Replace/Clear, deletes, a rollback, 48
// goroutines, and Fix.
func TestCounterCachePolymorphic(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		polyDB(t, db)
		posts := []PolyPost{{}, {}}
		videos := []PolyVideo{{}, {}}
		require.NoError(t, db.Create(&posts).Error)
		require.NoError(t, db.Create(&videos).Error)
		require.Equal(t, posts[0].ID, videos[0].ID, "the same ids: only the type tells them apart")
		count := func(model any) int64 {
			t.Helper()
			n, err := slotted.Count(db, model, "comments")
			require.NoError(t, err)
			return n
		}
		p, v := &posts[0], &videos[0]

		c := PolyComment{OwnerID: p.ID, OwnerType: "poly_posts"}
		require.NoError(t, db.Create(&c).Error)
		require.NoError(t, db.Create(&[]PolyComment{{OwnerID: v.ID, OwnerType: "poly_videos"}, {OwnerID: v.ID, OwnerType: "poly_videos"}}).Error)
		assert.Equal(t, int64(1), count(p))
		assert.Equal(t, int64(2), count(v))
		requirePolyExact(t, db)

		// Nested create and association Append set owner_type themselves.
		require.NoError(t, db.Create(&PolyPost{Comments: []PolyComment{{Body: "nested"}}}).Error)
		require.NoError(t, db.Model(p).Association("Comments").Append(&PolyComment{Body: "appended"}))
		assert.Equal(t, int64(2), count(p))
		requirePolyExact(t, db)

		// A move of the type: from the post to the video with the same id.
		require.NoError(t, db.Model(&c).Update("owner_type", "poly_videos").Error)
		assert.Equal(t, int64(1), count(p))
		assert.Equal(t, int64(3), count(v))
		// A move of the id.
		require.NoError(t, db.Model(&c).Update("owner_id", videos[1].ID).Error)
		assert.Equal(t, int64(2), count(v))
		requirePolyExact(t, db)

		// Association Delete, Replace and Clear.
		var appended PolyComment
		require.NoError(t, db.Where("body = ?", "appended").First(&appended).Error)
		require.NoError(t, db.Model(p).Association("Comments").Delete(&appended))
		assert.Equal(t, int64(0), count(p))
		require.NoError(t, db.Model(v).Association("Comments").Replace(&PolyComment{Body: "replacement"}))
		assert.Equal(t, int64(1), count(v))
		requirePolyExact(t, db)
		require.NoError(t, db.Model(v).Association("Comments").Clear())
		assert.Equal(t, int64(0), count(v))
		requirePolyExact(t, db)

		// Deletes and a rollback.
		require.NoError(t, db.Delete(&PolyComment{}, c.ID).Error)
		require.Error(t, db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, tx.Create(&PolyComment{OwnerID: p.ID, OwnerType: "poly_posts"}).Error)
			return errors.New("roll back")
		}))
		assert.Equal(t, int64(0), count(p))
		requirePolyExact(t, db)

		// 48 goroutines on two posts and two videos: creates, moves of type and id, deletes.
		limitConns(t, db)
		errs := run(48, func(w int) error {
			r := rand.New(rand.NewPCG(uint64(w), 21))
			owner := func() (uint, string) {
				if r.IntN(2) == 0 {
					return posts[r.IntN(2)].ID, "poly_posts"
				}
				return videos[r.IntN(2)].ID, "poly_videos"
			}
			for range 6 {
				id, typ := owner()
				cm := PolyComment{OwnerID: id, OwnerType: typ}
				if err := retryConflicts(func() error { cm.ID = 0; return db.Create(&cm).Error }); err != nil {
					return err
				}
				var err error
				switch r.IntN(3) {
				case 0:
					id, typ = owner()
					err = retryConflicts(func() error {
						return db.Model(&PolyComment{ID: cm.ID}).Updates(map[string]any{"owner_id": id, "owner_type": typ}).Error
					})
				case 1:
					err = retryConflicts(func() error { return db.Delete(&PolyComment{ID: cm.ID}).Error })
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
		requirePolyExact(t, db)

		// Fix repairs a raw insert on video 1 without touching post 1.
		require.NoError(t, db.Exec("INSERT INTO poly_comments (owner_id, owner_type, body) VALUES (?, 'poly_videos', 'raw')", v.ID).Error)
		drift, err := slotted.Fix(db, &[]PolyVideo{{ID: v.ID}})
		require.NoError(t, err)
		assert.Len(t, drift, 1)
		drift, err = slotted.Fix(db, &[]PolyPost{{ID: p.ID}})
		require.NoError(t, err)
		assert.Empty(t, drift)
		requirePolyExact(t, db)
	})
}
