package tests

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// Models with counters on both sides of an association.
type FillWriter struct {
	ID      uint
	Name    string      `gorm:"size:64"`
	Fans    int64       `gorm:"-" slotted:"fans"`
	Stories []FillStory `gorm:"foreignKey:WriterID"`
}

type FillStory struct {
	ID       uint
	Title    string `gorm:"size:64"`
	WriterID uint
	Writer   FillWriter
	Reads    int64 `gorm:"-" slotted:"reads"`
}

// TestFillAssociations pins down what the README says about associations:
// records loaded by Preload are filled (a counter query of their own), while
// with Joins the query's own records are filled and the joined ones are not.
func TestFillAssociations(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.Migrator().DropTable(&FillStory{}, &FillWriter{}))
		require.NoError(t, db.AutoMigrate(&FillWriter{}, &FillStory{}))
		w := FillWriter{Name: "ann", Stories: []FillStory{{Title: "one"}, {Title: "two"}}}
		require.NoError(t, db.Create(&w).Error)
		require.NoError(t, slotted.Add(db, &w, "fans", 5))
		require.NoError(t, slotted.Add(db, &w.Stories[0], "reads", 1))
		require.NoError(t, slotted.Add(db, &w.Stories[1], "reads", 2))

		// Preload, belongs-to: stories and their writer filled, one counter query each.
		rdb, rec := recorded(db)
		var stories []FillStory
		require.NoError(t, rdb.Preload("Writer").Order("id").Find(&stories).Error)
		require.Len(t, stories, 2)
		assert.EqualValues(t, 1, stories[0].Reads)
		assert.EqualValues(t, 2, stories[1].Reads)
		assert.EqualValues(t, 5, stories[0].Writer.Fans)
		assert.EqualValues(t, 5, stories[1].Writer.Fans)
		assert.Len(t, rec.statements(), 4, "stories, writers, and one counter query for each: %q", rec.statements())

		// Preload, has-many.
		var writers []FillWriter
		require.NoError(t, db.Preload("Stories", func(db *gorm.DB) *gorm.DB { return db.Order("id") }).Find(&writers).Error)
		require.Len(t, writers, 1)
		assert.EqualValues(t, 5, writers[0].Fans)
		assert.EqualValues(t, 2, writers[0].Stories[1].Reads)

		// Joins: the stories are filled; the writers come from the same rows and are not.
		rdb, rec = recorded(db)
		stories = nil
		require.NoError(t, rdb.Joins("Writer").Order("fill_stories.id").Find(&stories).Error)
		require.Len(t, stories, 2)
		assert.EqualValues(t, 2, stories[1].Reads)
		assert.Equal(t, "ann", stories[1].Writer.Name)
		assert.Zero(t, stories[1].Writer.Fans, "joined records are not filled")
		assert.Len(t, rec.statements(), 2, "the join, and the stories' counters: %q", rec.statements())
		joined := []*FillWriter{&stories[0].Writer, &stories[1].Writer}
		require.NoError(t, slotted.Load(db, joined))
		assert.EqualValues(t, 5, stories[1].Writer.Fans, "Load fills them")
	})
}
