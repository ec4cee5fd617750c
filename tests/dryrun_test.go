package tests

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// TestDryRunReportsNothingDone: on a DryRun session every counter call that
// would write or read returns ErrDryRun, writes nothing and leaves the model's
// fields alone; scopes still render.
func TestDryRunReportsNothingDone(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		// openDB leaves the once table: a key of an earlier run must not answer for this one.
		require.NoError(t, db.Migrator().DropTable(slotted.DefaultOnceTable))
		require.NoError(t, slotted.Migrate(db))
		post := Post{Title: "dry"}
		require.NoError(t, db.Create(&post).Error)
		require.NoError(t, slotted.Add(db, &post, "likes", 5))
		require.NoError(t, slotted.Add(db, &post, "likes", 5)) // two rows at most, something to compact
		before := counterRows(t, db)

		dry := db.Session(&gorm.Session{DryRun: true})
		p := Post{ID: post.ID, Likes: 10}
		assert.ErrorIs(t, slotted.Increment(dry, &p, "likes"), slotted.ErrDryRun)
		assert.ErrorIs(t, slotted.Add(dry, &p, "views", 3), slotted.ErrDryRun)
		assert.EqualValues(t, 10, p.Likes, "the field did not move")
		ref, err := slotted.RefOf(dry, &p, "likes")
		require.NoError(t, err, "RefOf only builds")
		assert.ErrorIs(t, slotted.AddRef(dry, ref, 1), slotted.ErrDryRun)
		n, err := slotted.Count(dry, &p, "likes")
		assert.ErrorIs(t, err, slotted.ErrDryRun)
		assert.Zero(t, n)
		applied, err := slotted.AddOnce(dry, &p, "likes", 1, "dry-key")
		assert.ErrorIs(t, err, slotted.ErrDryRun)
		assert.False(t, applied)
		assert.ErrorIs(t, slotted.Compact(dry, &p, "likes"), slotted.ErrDryRun)
		assert.ErrorIs(t, slotted.Reset(dry, &p, "likes", 0), slotted.ErrDryRun)
		_, err = slotted.CompactAll(dry)
		assert.ErrorIs(t, err, slotted.ErrDryRun)
		_, err = slotted.NewBuffer(dry)
		assert.ErrorIs(t, err, slotted.ErrDryRun)
		assert.ErrorIs(t, slotted.Load(dry, &[]Post{{ID: post.ID}}), slotted.ErrDryRun)
		assert.ErrorIs(t, slotted.AddEach(dry, &p, map[string]int64{"likes": 1, "views": 2}), slotted.ErrDryRun)
		assert.ErrorIs(t, slotted.AddMany(dry, []*Post{&p}, "likes", 1), slotted.ErrDryRun)
		assert.ErrorIs(t, slotted.AddRefs(dry, map[slotted.Ref]int64{ref: 1, {Type: ref.Type, ID: "other"}: 2}), slotted.ErrDryRun)
		if err := slotted.AddWhere(dry.Model(&Post{}).Where("id = ?", post.ID), "likes", 1); !errors.Is(err, errors.ErrUnsupported) {
			assert.ErrorIs(t, err, slotted.ErrDryRun)
		}
		assert.EqualValues(t, 10, p.Likes)

		// Scopes only build SQL: a dry Find renders the ordered query as gorm does.
		stmt := dry.Scopes(slotted.OrderBy(&Post{}, "likes", "DESC")).Find(&[]Post{}).Statement
		assert.Contains(t, stmt.SQL.String(), "ORDER BY")

		// Nothing was written: the live DB sees the same rows and total.
		assert.Equal(t, before, counterRows(t, db))
		total, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 10, total)
		_, err = slotted.AddOnce(db, &post, "likes", 1, "dry-key")
		require.NoError(t, err)
		total, err = slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 11, total, "the dry AddOnce did not store its key")
	})
}
