package tests

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

func TestUUIDKeys(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		docs := []Doc{{ID: uuid.New()}, {ID: uuid.New()}}
		require.NoError(t, db.Create(&docs).Error)
		for i := range docs {
			for j := 0; j <= i; j++ {
				require.NoError(t, slotted.Increment(db, &docs[i], "reads"))
			}
		}
		ref, err := slotted.RefOf(db, &docs[0], "reads")
		require.NoError(t, err)
		assert.Equal(t, slotted.Ref{Type: "docs.reads", ID: docs[0].ID.String(), Slots: slotted.DefaultSlots}, ref)

		var got []Doc
		require.NoError(t, db.Find(&got, "id IN ?", []uuid.UUID{docs[0].ID, docs[1].ID}).Error)
		byID := map[uuid.UUID]int64{}
		for _, d := range got {
			byID[d.ID] = d.Reads
		}
		assert.Equal(t, map[uuid.UUID]int64{docs[0].ID: 1, docs[1].ID: 2}, byID)
	})
}

func TestStringKeysAreExact(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		// Case and trailing spaces matter: MySQL's default collations would merge these three.
		tags := []Tag{{Name: "go"}, {Name: "Go"}, {Name: "go "}}
		for i := range tags {
			for j := 0; j <= i; j++ {
				require.NoError(t, slotted.Increment(db, &tags[i], "uses"))
			}
		}
		for i := range tags {
			n, err := slotted.Count(db, &tags[i], "uses")
			require.NoError(t, err)
			assert.EqualValues(t, i+1, n, "tag %q", tags[i].Name)
		}
		loaded := []Tag{{Name: "go"}, {Name: "Go"}, {Name: "go "}}
		require.NoError(t, slotted.Load(db, loaded))
		assert.Equal(t, []int{1, 2, 3}, []int{loaded[0].Uses, loaded[1].Uses, loaded[2].Uses})

		utf8 := Tag{Name: "żółw-🐢"}
		require.NoError(t, slotted.Add(db, &utf8, "uses", 7))
		n, err := slotted.Count(db, &Tag{Name: "żółw-🐢"}, "uses")
		require.NoError(t, err)
		assert.EqualValues(t, 7, n)
	})
}
