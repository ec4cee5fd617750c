package tests

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted"
)

// M2Post and M2Tag are the two sides of a many-to-many relationship through
// gorm's join table m2_post_tags; each counts its join rows.
type M2Post struct {
	ID       uint
	Title    string
	Tags     []M2Tag `gorm:"many2many:m2_post_tags"`
	TagCount int64   `gorm:"-" slotted:"tags"`
}

type M2Tag struct {
	ID        uint
	Name      string   `gorm:"size:64"`
	Posts     []M2Post `gorm:"many2many:m2_post_tags"`
	PostCount int64    `gorm:"-" slotted:"posts"`
	Weighted  int64    `gorm:"-" slotted:"weighted"`
	M2GroupID *uint
}

// M2Group would add up its tags' post counts: refused (SumCounter over join rows).
type M2Group struct {
	ID    uint
	Tags  []M2Tag
	Posts int64 `gorm:"-" slotted:"posts"`
}

// M2PostTag is a Go model of the join table (not given to SetupJoinTable).
type M2PostTag struct {
	M2PostID uint `gorm:"primaryKey"`
	M2TagID  uint `gorm:"primaryKey"`
}

func (M2PostTag) TableName() string { return "m2_post_tags" }

// M2NoteLabel is a Go model of m2_note_labels, for plain inserts.
type M2NoteLabel struct {
	M2LabelID uint `gorm:"primaryKey"`
	M2NoteID  uint `gorm:"primaryKey"`
}

func (M2NoteLabel) TableName() string { return "m2_note_labels" }

// M2Note has soft delete: its labels' counts leave out a soft-deleted note's
// join rows, unless WithDeleted.
type M2Note struct {
	ID        uint
	Title     string    `gorm:"size:64"`
	Tags      []M2Label `gorm:"many2many:m2_note_labels"`
	DeletedAt gorm.DeletedAt
}

type M2Label struct {
	ID    uint
	Name  string   `gorm:"size:64"`
	Notes []M2Note `gorm:"many2many:m2_note_labels"`
	Count int64    `gorm:"-" slotted:"notes"`
	Other int64    `gorm:"-" slotted:"other"`
}

func m2mDB(t *testing.T, db *gorm.DB) {
	t.Helper()
	drop := func() { _ = db.Migrator().DropTable("m2_post_tags", &M2Post{}, &M2Tag{}) }
	drop()
	require.NoError(t, db.AutoMigrate(&M2Post{}, &M2Tag{}))
	t.Cleanup(drop)
	require.NoError(t, slotted.CounterCache(db, &M2Tag{}, "Posts", "posts"))
	require.NoError(t, slotted.CounterCache(db, &M2Post{}, "Tags", "tags"))
	require.NoError(t, slotted.CounterCache(db, &M2Tag{}, "Posts", "weighted", slotted.CacheOptions{Weight: 3}))
}

// m2mCounts returns every tag's and post's counters next to the join table's counts.
func m2mCounts(t *testing.T, db *gorm.DB) (got, want map[string]int64) {
	t.Helper()
	got, want = map[string]int64{}, map[string]int64{}
	var tags []M2Tag
	require.NoError(t, db.Find(&tags).Error)
	for _, tg := range tags {
		got[fmt.Sprintf("tag%d", tg.ID)] = tg.PostCount
		got[fmt.Sprintf("w%d", tg.ID)] = tg.Weighted
		want[fmt.Sprintf("tag%d", tg.ID)], want[fmt.Sprintf("w%d", tg.ID)] = 0, 0
	}
	var posts []M2Post
	require.NoError(t, db.Find(&posts).Error)
	for _, p := range posts {
		got[fmt.Sprintf("post%d", p.ID)] = p.TagCount
		want[fmt.Sprintf("post%d", p.ID)] = 0
	}
	type row struct {
		ID uint
		N  int64
	}
	var rows []row
	require.NoError(t, db.Raw("SELECT m2_tag_id AS id, COUNT(*) AS n FROM m2_post_tags GROUP BY m2_tag_id").Scan(&rows).Error)
	for _, r := range rows {
		want[fmt.Sprintf("tag%d", r.ID)], want[fmt.Sprintf("w%d", r.ID)] = r.N, 3*r.N
	}
	rows = nil
	require.NoError(t, db.Raw("SELECT m2_post_id AS id, COUNT(*) AS n FROM m2_post_tags GROUP BY m2_post_id").Scan(&rows).Error)
	for _, r := range rows {
		want[fmt.Sprintf("post%d", r.ID)] = r.N
	}
	return got, want
}

func assertM2M(t *testing.T, db *gorm.DB, msg string) {
	t.Helper()
	got, want := m2mCounts(t, db)
	assert.Equal(t, want, got, msg)
}

func tagCount(t *testing.T, db *gorm.DB, tag *M2Tag) int64 {
	t.Helper()
	n, err := slotted.Count(db, tag, "posts")
	require.NoError(t, err)
	return n
}

func TestCounterCacheMany2Many(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		m2mDB(t, db)
		golang := M2Tag{Name: "go"}
		require.NoError(t, db.Create(&golang).Error)

		// A nested create: two new tags and an existing one.
		post := M2Post{Title: "a", Tags: []M2Tag{{Name: "db"}, {Name: "sql"}, golang}}
		require.NoError(t, db.Create(&post).Error)
		assertM2M(t, db, "nested create")
		assert.Equal(t, int64(1), tagCount(t, db, &golang))
		n, err := slotted.Count(db, &post, "tags")
		require.NoError(t, err)
		assert.Equal(t, int64(3), n)

		// Appending a pair already present counts nothing; from either side.
		require.NoError(t, db.Model(&post).Association("Tags").Append(&golang))
		require.NoError(t, db.Model(&golang).Association("Posts").Append(&post))
		assert.Equal(t, int64(1), tagCount(t, db, &golang))
		assertM2M(t, db, "duplicate append")

		// Append from the tag side, a new post and an existing one.
		other := M2Post{Title: "b"}
		require.NoError(t, db.Create(&other).Error)
		require.NoError(t, db.Model(&golang).Association("Posts").Append(&other, &M2Post{Title: "c"}))
		assert.Equal(t, int64(3), tagCount(t, db, &golang))
		assertM2M(t, db, "append")

		// Delete, from both sides.
		require.NoError(t, db.Model(&golang).Association("Posts").Delete(&other))
		require.NoError(t, db.Model(&post).Association("Tags").Delete(&post.Tags[0]))
		assert.Equal(t, int64(2), tagCount(t, db, &golang))
		assertM2M(t, db, "delete")

		// Replace: adds the new pairs, deletes the others.
		extra := M2Tag{Name: "extra"}
		require.NoError(t, db.Create(&extra).Error)
		require.NoError(t, db.Model(&post).Association("Tags").Replace(&golang, &extra))
		assertM2M(t, db, "replace")
		require.NoError(t, db.Model(&extra).Association("Posts").Replace(&other))
		assertM2M(t, db, "replace from the tag side")

		// Clear.
		require.NoError(t, db.Model(&post).Association("Tags").Clear())
		assertM2M(t, db, "clear")
		n, err = slotted.Count(db, &post, "tags")
		require.NoError(t, err)
		assert.Zero(t, n)

		// Deleting a post deletes its join rows and uncounts them.
		require.NoError(t, db.Model(&post).Association("Tags").Append(&golang, &extra))
		before := tagCount(t, db, &golang)
		require.NoError(t, db.Delete(&post).Error)
		assert.Equal(t, before-1, tagCount(t, db, &golang))
		var left int64
		require.NoError(t, db.Table("m2_post_tags").Where("m2_post_id = ?", post.ID).Count(&left).Error)
		assert.Zero(t, left)
		assertM2M(t, db, "delete post")

		// A bulk delete of posts by condition, and a tag's delete.
		p2 := M2Post{Title: "bulk", Tags: []M2Tag{golang, extra}}
		require.NoError(t, db.Create(&p2).Error)
		require.NoError(t, db.Where("title = ?", "bulk").Delete(&M2Post{}).Error)
		assertM2M(t, db, "bulk delete of posts")
		require.NoError(t, db.Delete(&extra).Error)
		assertM2M(t, db, "delete tag")

		// gorm's own deletion of the join rows (Select(clause.Associations)) is counted once.
		p3 := M2Post{Title: "assoc", Tags: []M2Tag{golang}}
		require.NoError(t, db.Create(&p3).Error)
		require.NoError(t, db.Select(clause.Associations).Delete(&p3).Error)
		assertM2M(t, db, "delete with its associations")

		// A rolled-back transaction leaves every count as it was.
		gotBefore, _ := m2mCounts(t, db)
		err = db.Transaction(func(tx *gorm.DB) error {
			p := M2Post{Title: "rolled back", Tags: []M2Tag{golang, {Name: "new"}}}
			if err := tx.Create(&p).Error; err != nil {
				return err
			}
			if err := tx.Model(&other).Association("Tags").Clear(); err != nil {
				return err
			}
			if err := tx.Model(&golang).Association("Posts").Append(&other); err != nil {
				return err
			}
			return errors.New("roll back")
		})
		require.EqualError(t, err, "roll back")
		gotAfter, _ := m2mCounts(t, db)
		assert.Equal(t, gotBefore, gotAfter, "rollback")
		assertM2M(t, db, "rollback")

		// A plain insert of the join row through a join model (no ON CONFLICT) is counted too.
		require.NoError(t, db.Table("m2_post_tags").Create(&M2PostTag{M2PostID: other.ID, M2TagID: golang.ID}).Error)
		assertM2M(t, db, "plain insert")
		require.Error(t, db.Table("m2_post_tags").Create(&M2PostTag{M2PostID: other.ID, M2TagID: golang.ID}).Error)
		assertM2M(t, db, "duplicate plain insert fails")

		// Without gorm's default transaction the plugin opens one per statement it reads for.
		skip := db.Session(&gorm.Session{SkipDefaultTransaction: true})
		p4 := M2Post{Title: "skip", Tags: []M2Tag{golang, {Name: "skip"}}}
		require.NoError(t, skip.Create(&p4).Error)
		require.NoError(t, skip.Model(&p4).Association("Tags").Append(&M2Tag{Name: "skip2"}))
		require.NoError(t, skip.Model(&p4).Association("Tags").Delete(&golang))
		assertM2M(t, db, "SkipDefaultTransaction")
		require.NoError(t, skip.Delete(&p4).Error)
		assertM2M(t, db, "SkipDefaultTransaction delete")
	})
}

func TestCounterCacheMany2ManyFix(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		m2mDB(t, db)
		tags := []M2Tag{{Name: "a"}, {Name: "b"}, {Name: "c"}}
		require.NoError(t, db.Create(&tags).Error)
		for i := range 6 {
			require.NoError(t, db.Create(&M2Post{Title: fmt.Sprint(i), Tags: tags[:1+i%3]}).Error)
		}
		assertM2M(t, db, "created")
		// Drift: raw SQL the callbacks do not see.
		require.NoError(t, db.Exec("DELETE FROM m2_post_tags WHERE m2_tag_id = ?", tags[0].ID).Error)
		var p M2Post
		require.NoError(t, db.First(&p).Error)
		require.NoError(t, db.Exec("INSERT INTO m2_post_tags (m2_post_id, m2_tag_id) VALUES (?, ?)", p.ID, tags[2].ID).Error)
		got, want := m2mCounts(t, db)
		require.NotEqual(t, want, got)

		drifts, err := slotted.Fix(db, &tags, slotted.FixOptions{DryRun: true})
		require.NoError(t, err)
		assert.NotEmpty(t, drifts)
		for _, d := range drifts {
			assert.NotEqual(t, d.Stored, d.Actual)
		}
		_, err = slotted.Fix(db, &tags, slotted.FixOptions{})
		require.NoError(t, err)
		assert.Equal(t, int64(0), tags[0].PostCount)
		_, err = slotted.FixAll(db, &M2Post{}, slotted.FixOptions{BatchSize: 4})
		require.NoError(t, err)
		assertM2M(t, db, "fixed")
		drifts, err = slotted.Fix(db, &tags, slotted.FixOptions{DryRun: true})
		require.NoError(t, err)
		assert.Empty(t, drifts)
	})
}

func m2NotesDB(t *testing.T, db *gorm.DB) {
	t.Helper()
	drop := func() { _ = db.Migrator().DropTable("m2_note_labels", &M2Note{}, &M2Label{}) }
	drop()
	require.NoError(t, db.AutoMigrate(&M2Note{}, &M2Label{}))
	t.Cleanup(drop)
	require.NoError(t, slotted.CounterCache(db, &M2Label{}, "Notes", "notes"))                                          // live notes
	require.NoError(t, slotted.CounterCache(db, &M2Label{}, "Notes", "other", slotted.CacheOptions{WithDeleted: true})) // all notes
}

// noteCounts returns every label's two counters next to the join table's counts.
func noteCounts(t *testing.T, db *gorm.DB) (got, want map[uint][2]int64) {
	t.Helper()
	var labels []M2Label
	require.NoError(t, db.Find(&labels).Error)
	got, want = map[uint][2]int64{}, map[uint][2]int64{}
	for _, l := range labels {
		got[l.ID] = [2]int64{l.Count, l.Other}
		var live, all int64
		require.NoError(t, db.Table("m2_note_labels").Joins("JOIN m2_notes ON m2_notes.id = m2_note_labels.m2_note_id").
			Where("m2_label_id = ? AND m2_notes.deleted_at IS NULL", l.ID).Count(&live).Error)
		require.NoError(t, db.Table("m2_note_labels").Where("m2_label_id = ?", l.ID).Count(&all).Error)
		want[l.ID] = [2]int64{live, all}
	}
	return got, want
}

func assertNotes(t *testing.T, db *gorm.DB, msg string) {
	t.Helper()
	got, want := noteCounts(t, db)
	assert.Equal(t, want, got, msg)
}

func TestCounterCacheMany2ManySoftDelete(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		m2NotesDB(t, db)
		label := M2Label{Name: "l"}
		require.NoError(t, db.Create(&label).Error)
		notes := []M2Note{{Title: "0", Tags: []M2Label{label}}, {Title: "1", Tags: []M2Label{label}}, {Title: "2"}}
		require.NoError(t, db.Create(&notes).Error)
		count := func() [2]int64 {
			var l M2Label
			require.NoError(t, db.First(&l, label.ID).Error)
			return [2]int64{l.Count, l.Other}
		}
		assert.Equal(t, [2]int64{2, 2}, count())
		require.NoError(t, db.Delete(&notes[0]).Error) // soft: the join row stays; not counted unless WithDeleted
		assert.Equal(t, [2]int64{1, 2}, count())
		assertNotes(t, db, "soft delete")
		require.NoError(t, db.Unscoped().Model(&M2Note{}).Where("id = ?", notes[0].ID).Update("deleted_at", nil).Error) // restore
		assert.Equal(t, [2]int64{2, 2}, count())
		require.NoError(t, db.Delete(&notes[0]).Error)
		// Join rows of a soft-deleted note: counted by WithDeleted only.
		require.NoError(t, db.Model(&label).Association("Notes").Append(&M2Note{ID: notes[2].ID, Title: "2"}))
		require.NoError(t, db.Unscoped().Model(&notes[0]).Association("Tags").Append(&label))
		assertNotes(t, db, "append")
		require.NoError(t, db.Delete(&notes[2]).Error)
		assertNotes(t, db, "soft delete of a note with rows")
		require.NoError(t, db.Unscoped().Model(&notes[2]).Association("Tags").Clear())
		assertNotes(t, db, "clear of a soft-deleted note")
		require.NoError(t, db.Unscoped().Delete(&notes[0]).Error) // hard: the join row goes
		assertNotes(t, db, "hard delete of a soft-deleted note")
		// A plain insert of a join row: counted if its note is alive.
		fresh := M2Note{Title: "3"}
		require.NoError(t, db.Create(&fresh).Error)
		require.NoError(t, db.Create(&M2NoteLabel{M2LabelID: label.ID, M2NoteID: notes[2].ID}).Error) // soft-deleted
		require.NoError(t, db.Create(&M2NoteLabel{M2LabelID: label.ID, M2NoteID: fresh.ID}).Error)    // alive
		assertNotes(t, db, "plain inserts")
		require.NoError(t, db.Delete(&M2NoteLabel{M2LabelID: label.ID, M2NoteID: notes[2].ID}).Error)
		require.NoError(t, db.Delete(&M2NoteLabel{M2LabelID: label.ID, M2NoteID: fresh.ID}).Error)
		assertNotes(t, db, "delete by the join model's key")
		require.NoError(t, db.Where("1 = 1").Delete(&M2Note{}).Error) // bulk soft delete
		assertNotes(t, db, "bulk soft delete")
		require.NoError(t, db.Unscoped().Model(&M2Note{}).Where("deleted_at IS NOT NULL").Update("deleted_at", nil).Error)
		assertNotes(t, db, "bulk restore")
		got, _ := noteCounts(t, db)
		assert.Equal(t, [2]int64{1, 1}, got[label.ID], "note 1's row (note 0 hard-deleted, note 2's rows cleared)")

		// Fix counts the live notes' rows.
		require.NoError(t, db.Exec("UPDATE m2_notes SET deleted_at = ?", time.Now()).Error)
		drifts, err := slotted.Fix(db, &label, slotted.FixOptions{})
		require.NoError(t, err)
		require.Len(t, drifts, 1)
		assert.Equal(t, "notes", drifts[0].Counter)
		assertNotes(t, db, "fixed")
	})
}

// TestCounterCacheMany2ManySoftDeleteConcurrent: 48 goroutines append,
// delete, soft-delete and restore on 6 notes and 2 labels; both counters
// equal the join table's counts (live notes only, and all) afterwards.
func TestCounterCacheMany2ManySoftDeleteConcurrent(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		m2NotesDB(t, db)
		limitConns(t, db)
		labels := []M2Label{{Name: "a"}, {Name: "b"}}
		require.NoError(t, db.Create(&labels).Error)
		notes := make([]M2Note, 6)
		for i := range notes {
			notes[i].Title = fmt.Sprint(i)
		}
		require.NoError(t, db.Create(&notes).Error)
		var wg sync.WaitGroup
		var retries, done atomic.Int64
		deadline := time.Now().Add(2 * time.Minute)
		for w := range 48 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(w), 11))
				for range 12 {
					note := notes[r.IntN(len(notes))]
					label := labels[r.IntN(len(labels))]
					note.Tags, label.Notes = nil, nil
					kind := r.IntN(5)
					for attempt := 0; ; attempt++ {
						var err error
						switch kind {
						case 0:
							err = db.Unscoped().Model(&note).Association("Tags").Append(&label)
						case 1:
							err = db.Unscoped().Model(&note).Association("Tags").Delete(&label)
						case 2:
							err = db.Delete(&M2Note{ID: note.ID}).Error
						case 3:
							err = db.Unscoped().Model(&M2Note{}).Where("id = ?", note.ID).Update("deleted_at", nil).Error
						case 4:
							err = db.Model(&label).Association("Notes").Append(&M2Note{ID: note.ID, Title: note.Title})
						}
						if err == nil {
							done.Add(1)
							break
						}
						if slotted.ConflictOf(err) == slotted.NoConflict || time.Now().After(deadline) {
							t.Errorf("op %d: %v", kind, err)
							return
						}
						retries.Add(1)
						time.Sleep(time.Duration(r.IntN(1+min(attempt, 20))) * time.Millisecond)
					}
				}
			}()
		}
		wg.Wait()
		t.Logf("%s: %d ops, %d retried after a conflict", dialect(db), done.Load(), retries.Load())
		assertNotes(t, db, "after the race")
	})
}

func TestCounterCacheMany2ManyRefusals(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		m2mDB(t, db)
		for name, opts := range map[string]slotted.CacheOptions{
			"where":      {Where: "name = ?", WhereArgs: []any{"x"}},
			"match":      {Where: "1 = 1", Match: func(*M2Note) bool { return true }},
			"sum":        {Sum: "ID"},
			"sumCounter": {SumCounter: "tags"},
			"touch":      {Touch: true}, // M2Label has no UpdatedAt
		} {
			err := slotted.CounterCache(db, &M2Label{}, "Notes", "other", opts)
			assert.ErrorIs(t, err, slotted.ErrInvalidConfig, name)
		}
		assert.ErrorIs(t, slotted.CounterCache(db, &M2Tag{}, "Posts", "posts"), slotted.ErrInvalidConfig, "duplicate")
		assert.ErrorIs(t, slotted.CounterCache(db, &M2Tag{}, "Posts", "nope"), slotted.ErrUnknownCounter)
		assert.ErrorIs(t, slotted.CounterCache(db, &M2Group{}, "Tags", "posts", slotted.CacheOptions{SumCounter: "posts"}), slotted.ErrInvalidConfig, "SumCounter over join rows")

		// An update of a pair column would move a join row: refused, nothing written.
		tag := M2Tag{Name: "t"}
		post := M2Post{Title: "p", Tags: []M2Tag{tag}}
		require.NoError(t, db.Create(&post).Error)
		err := db.Model(&M2PostTag{}).Where("m2_post_id = ?", post.ID).Update("m2_post_id", post.ID+100).Error
		assert.ErrorIs(t, err, slotted.ErrUnsupportedModel)
		assertM2M(t, db, "refused update")
		// Join rows from maps cannot be counted: refused.
		err = db.Model(&M2PostTag{}).Create(map[string]any{"m2_post_id": post.ID, "m2_tag_id": post.Tags[0].ID}).Error
		assert.ErrorIs(t, err, slotted.ErrUnsupportedModel)
		assertM2M(t, db, "refused create from a map")
	})
}

// TestCounterCacheMany2ManyConcurrent: 48 goroutines append, delete and
// replace tags of 12 posts among 3 hot tags; every counter equals the join
// table's count afterwards. Deadlocks (retried) are counted and reported.
func TestCounterCacheMany2ManyConcurrent(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		m2mDB(t, db)
		ops, retries := m2mWorkload(t, db)
		t.Logf("%s: %d ops, %d retried after a conflict", dialect(db), ops, retries)
		assertM2M(t, db, "after the race")
	})
}

// m2mWorkload runs 48 goroutines of 15 random join-row changes each on 12
// posts and 3 hot tags, retrying lock conflicts (deadlocks, SQLite's busy
// database) until a deadline; it returns the changes done and the retries.
func m2mWorkload(t *testing.T, db *gorm.DB) (done, retries int64) {
	limitConns(t, db)
	tags := []M2Tag{{Name: "hot1"}, {Name: "hot2"}, {Name: "hot3"}}
	require.NoError(t, db.Create(&tags).Error)
	posts := make([]M2Post, 12)
	for i := range posts {
		posts[i].Title = fmt.Sprint(i)
	}
	require.NoError(t, db.Create(&posts).Error)
	const workers, ops = 48, 15
	var wg sync.WaitGroup
	var nRetries, nDone atomic.Int64
	deadline := time.Now().Add(2 * time.Minute)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for range ops {
				post := M2Post{ID: posts[r.IntN(len(posts))].ID}
				tag := tags[r.IntN(len(tags))]
				kind := r.IntN(4)
				var subset []M2Tag
				for _, tg := range tags {
					if r.IntN(2) == 0 {
						subset = append(subset, M2Tag{ID: tg.ID})
					}
				}
				for attempt := 0; ; attempt++ {
					var err error
					switch kind {
					case 0:
						err = db.Model(&post).Association("Tags").Append(&M2Tag{ID: tag.ID})
					case 1:
						err = db.Model(&post).Association("Tags").Delete(&M2Tag{ID: tag.ID})
					case 2:
						if len(subset) == 0 {
							err = db.Model(&post).Association("Tags").Clear()
						} else {
							err = db.Model(&post).Association("Tags").Replace(subset)
						}
					case 3:
						err = db.Model(&M2Tag{ID: tag.ID}).Association("Posts").Append(&M2Post{ID: post.ID})
					}
					if err == nil {
						nDone.Add(1)
						break
					}
					if slotted.ConflictOf(err) == slotted.NoConflict || time.Now().After(deadline) {
						t.Errorf("op %d: %v", kind, err)
						return
					}
					nRetries.Add(1)
					time.Sleep(time.Duration(r.IntN(1+min(attempt, 20))) * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	return nDone.Load(), nRetries.Load()
}

// M3Student and M3Course are joined by a Go model of the user's,
// M3Enrollment, given to gorm with SetupJoinTable.
type M3Student struct {
	ID      uint
	Name    string
	Courses []M3Course `gorm:"many2many:m3_enrollments"`
	Count   int64      `gorm:"-" slotted:"courses"`
}

type M3Course struct {
	ID        uint
	Students  []M3Student `gorm:"many2many:m3_enrollments"`
	Count     int64       `gorm:"-" slotted:"students"`
	UpdatedAt time.Time
}

type M3Enrollment struct {
	M3StudentID uint `gorm:"primaryKey"`
	M3CourseID  uint `gorm:"primaryKey"`
	CreatedAt   time.Time
}

func TestCounterCacheMany2ManyJoinModel(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		drop := func() { _ = db.Migrator().DropTable(&M3Enrollment{}, &M3Student{}, &M3Course{}) }
		drop()
		require.NoError(t, db.SetupJoinTable(&M3Student{}, "Courses", &M3Enrollment{}))
		require.NoError(t, db.SetupJoinTable(&M3Course{}, "Students", &M3Enrollment{}))
		require.NoError(t, db.AutoMigrate(&M3Student{}, &M3Course{}))
		t.Cleanup(drop)
		require.NoError(t, slotted.CounterCache(db, &M3Course{}, "Students", "students", slotted.CacheOptions{Touch: true}))
		require.NoError(t, slotted.CounterCache(db, &M3Student{}, "Courses", "courses"))

		course := M3Course{}
		require.NoError(t, db.Create(&course).Error)
		time.Sleep(20 * time.Millisecond) // Touch moves UpdatedAt past this (MySQL stores milliseconds)
		students := []M3Student{{Courses: []M3Course{course}}, {Courses: []M3Course{course}}}
		require.NoError(t, db.Create(&students).Error)
		require.NoError(t, db.Model(&course).Association("Students").Append(&students[0], &M3Student{Name: "new"}))
		count := func(model any, name string) int64 {
			n, err := slotted.Count(db, model, name)
			require.NoError(t, err)
			return n
		}
		assert.Equal(t, int64(3), count(&course, "students"))
		assert.Equal(t, int64(1), count(&students[0], "courses"))
		var touched M3Course
		require.NoError(t, db.First(&touched, course.ID).Error)
		assert.True(t, touched.UpdatedAt.After(course.UpdatedAt), "Touch")
		var e M3Enrollment
		require.NoError(t, db.First(&e).Error)
		assert.False(t, e.CreatedAt.IsZero(), "the join model's own columns are written")

		// The join model's own statements are counted too.
		require.NoError(t, db.Where("m3_student_id = ?", students[1].ID).Delete(&M3Enrollment{}).Error)
		assert.Equal(t, int64(2), count(&course, "students"))
		require.NoError(t, db.Create(&M3Enrollment{M3StudentID: students[1].ID, M3CourseID: course.ID}).Error)
		assert.Equal(t, int64(3), count(&course, "students"))
		require.NoError(t, db.Delete(&M3Enrollment{M3StudentID: students[1].ID, M3CourseID: course.ID}).Error)
		assert.Equal(t, int64(2), count(&course, "students"))
		// An upsert of the join model that updates its columns: only the new pair counts.
		upsert := []M3Enrollment{{M3StudentID: students[0].ID, M3CourseID: course.ID}, {M3StudentID: students[1].ID, M3CourseID: course.ID}}
		require.NoError(t, db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&upsert).Error)
		assert.Equal(t, int64(3), count(&course, "students"))
		require.NoError(t, db.Model(&course).Association("Students").Clear())
		assert.Zero(t, count(&course, "students"))
		assert.Zero(t, count(&students[0], "courses"))
	})
}

// TestMany2ManyConflictsBaseline runs m2mWorkload on plain gorm (no counter
// cache) and logs its lock conflicts, for comparison with
// TestCounterCacheMany2ManyConcurrent's: SLOTTED_M2M_BASELINE=1 to run it.
func TestMany2ManyConflictsBaseline(t *testing.T) {
	if os.Getenv("SLOTTED_M2M_BASELINE") == "" {
		t.Skip("a measurement: SLOTTED_M2M_BASELINE=1")
	}
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		drop := func() { _ = db.Migrator().DropTable("m2_post_tags", &M2Post{}, &M2Tag{}) }
		drop()
		require.NoError(t, db.AutoMigrate(&M2Post{}, &M2Tag{}))
		t.Cleanup(drop)
		ops, retries := m2mWorkload(t, db)
		t.Logf("without the plugin's caches, %s: %d ops, %d retried after a conflict", dialect(db), ops, retries)
	})
}

// M2User follows other users through a self-referential join table: both
// columns name users.
type M2User struct {
	ID        uint
	Following []*M2User `gorm:"many2many:m2_follows;joinForeignKey:UserID;joinReferences:FolloweeID"`
	Count     int64     `gorm:"-" slotted:"following"`
}

func TestCounterCacheMany2ManySelf(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		drop := func() { _ = db.Migrator().DropTable("m2_follows", &M2User{}) }
		drop()
		require.NoError(t, db.AutoMigrate(&M2User{}))
		t.Cleanup(drop)
		require.NoError(t, slotted.CounterCache(db, &M2User{}, "Following", "following"))
		users := []M2User{{}, {}, {}}
		for i := range users {
			require.NoError(t, db.Create(&users[i]).Error)
		}
		count := func(u *M2User) int64 {
			n, err := slotted.Count(db, u, "following")
			require.NoError(t, err)
			return n
		}
		require.NoError(t, db.Model(&users[0]).Association("Following").Append(&users[1], &users[2]))
		require.NoError(t, db.Model(&users[1]).Association("Following").Append(&users[2]))
		assert.Equal(t, []int64{2, 1, 0}, []int64{count(&users[0]), count(&users[1]), count(&users[2])})
		// Deleting user 2 deletes the rows that follow it and the rows it follows.
		require.NoError(t, db.Delete(&users[2]).Error)
		assert.Equal(t, []int64{1, 0}, []int64{count(&users[0]), count(&users[1])})
		var rows int64
		require.NoError(t, db.Table("m2_follows").Count(&rows).Error)
		assert.Equal(t, int64(1), rows)
		drifts, err := slotted.Fix(db, users[:2], slotted.FixOptions{DryRun: true})
		require.NoError(t, err)
		assert.Empty(t, drifts)
	})
}

// Soft delete and restore of a far-side note without gorm's default
// transaction: the plugin's own transaction commits with the statement.
func TestCounterCacheMany2ManySkipTxSoftDelete(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		m2NotesDB(t, db)
		label := M2Label{Name: "l"}
		require.NoError(t, db.Create(&label).Error)
		note := M2Note{Title: "n", Tags: []M2Label{label}}
		require.NoError(t, db.Create(&note).Error)
		skip := db.Session(&gorm.Session{SkipDefaultTransaction: true})
		committed := func(deleted bool) {
			t.Helper()
			// Another connection, bounded: an uncommitted change would block it or hide.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var n M2Note
			require.NoError(t, db.WithContext(ctx).Unscoped().First(&n, note.ID).Error)
			assert.Equal(t, deleted, n.DeletedAt.Valid, "the change is committed")
		}
		require.NoError(t, skip.Delete(&note).Error)
		committed(true)
		assertNotes(t, db, "soft deleted without the default transaction")
		require.NoError(t, skip.Unscoped().Model(&note).Update("deleted_at", nil).Error)
		committed(false)
		assertNotes(t, db, "restored without the default transaction")
	})
}

type M2Comment struct {
	ID       uint
	M2PostID uint
	M2Post   M2Post
}

// A hard delete of a post that a foreign key refuses, without the default
// transaction: the join rows deleted before it come back with it.
func TestCounterCacheMany2ManySkipTxCascade(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		needForeignKeys(t, db)
		m2mDB(t, db)
		require.NoError(t, db.AutoMigrate(&M2Comment{}))
		t.Cleanup(func() { _ = db.Migrator().DropTable(&M2Comment{}) })
		tag := M2Tag{Name: "t"}
		require.NoError(t, db.Create(&tag).Error)
		post := M2Post{Title: "p", Tags: []M2Tag{tag}}
		require.NoError(t, db.Create(&post).Error)
		require.NoError(t, db.Create(&M2Comment{M2PostID: post.ID}).Error)
		skip := db.Session(&gorm.Session{SkipDefaultTransaction: true})
		require.Error(t, skip.Delete(&post).Error, "the comment's foreign key refuses the delete")
		var rows, posts int64
		require.NoError(t, db.Table("m2_post_tags").Where("m2_post_id = ?", post.ID).Count(&rows).Error)
		require.NoError(t, db.Model(&M2Post{}).Where("id = ?", post.ID).Count(&posts).Error)
		assert.Equal(t, int64(1), posts)
		assert.Equal(t, int64(1), rows, "a refused delete keeps the post's join rows")
		assertM2M(t, db, "after the refused delete")
		require.NoError(t, db.Where("m2_post_id = ?", post.ID).Delete(&M2Comment{}).Error)
		require.NoError(t, skip.Delete(&post).Error)
		assertM2M(t, db, "after the delete")
	})
}

// DELETE ... LIMIT: MySQL builds the LIMIT, and the plugin refuses it on a
// join table and on a many-to-many side's hard delete, writing nothing; the
// other databases ignore the LIMIT (gorm), so every matching row goes.
func TestCounterCacheMany2ManyLimitDelete(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		m2mDB(t, db)
		tag := M2Tag{Name: "t"}
		require.NoError(t, db.Create(&tag).Error)
		for i := 0; i < 3; i++ {
			require.NoError(t, db.Create(&M2Post{Title: "lim", Tags: []M2Tag{tag}}).Error)
		}
		var rows int64
		err := db.Where("m2_tag_id = ?", tag.ID).Limit(1).Delete(&M2PostTag{}).Error
		require.NoError(t, db.Table("m2_post_tags").Count(&rows).Error)
		if dialect(db) == dbMySQL {
			require.ErrorIs(t, err, slotted.ErrUnsupportedModel)
			assert.Equal(t, int64(3), rows, "nothing deleted")
		} else {
			require.NoError(t, err)
			assert.Equal(t, int64(0), rows, "LIMIT is not built: every matching row")
			require.NoError(t, db.Model(&tag).Association("Posts").Append(&[]M2Post{{Title: "lim"}, {Title: "lim"}}))
		}
		assertM2M(t, db, "join rows deleted with LIMIT 1")
		err = db.Where("title = ?", "lim").Limit(1).Delete(&M2Post{}).Error
		if dialect(db) == dbMySQL {
			require.ErrorIs(t, err, slotted.ErrUnsupportedModel)
		} else {
			require.NoError(t, err)
		}
		var posts int64
		require.NoError(t, db.Model(&M2Post{}).Count(&posts).Error)
		require.NoError(t, db.Table("m2_post_tags").Count(&rows).Error)
		assert.Equal(t, posts, rows, "each remaining post keeps its tag")
		assertM2M(t, db, "posts deleted with LIMIT 1")
	})
}

// MySQL's INSERT IGNORE makes a foreign key's error a warning; the plugin
// returns it as PostgreSQL and SQLite do, and a present pair still counts
// nothing.
func TestCounterCacheMany2ManyIgnoreSwallowsFK(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		needForeignKeys(t, db)
		m2mDB(t, db)
		tag := M2Tag{Name: "t"}
		require.NoError(t, db.Create(&tag).Error)
		assert.Error(t, db.Model(&M2Post{ID: 424242}).Association("Tags").Append(&tag), "Append to a post that does not exist")
		assert.Error(t, db.Clauses(clause.OnConflict{DoNothing: true}).Create(&M2PostTag{M2PostID: 424243, M2TagID: tag.ID}).Error,
			"DO NOTHING create naming a missing post")
		var rows int64
		require.NoError(t, db.Table("m2_post_tags").Count(&rows).Error)
		assert.Equal(t, int64(0), rows)
		assertM2M(t, db, "after the refused pairs")
		post := M2Post{Title: "p", Tags: []M2Tag{tag}}
		require.NoError(t, db.Create(&post).Error)
		require.NoError(t, db.Model(&post).Association("Tags").Append(&tag), "a present pair")
		res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&M2PostTag{M2PostID: post.ID, M2TagID: tag.ID})
		require.NoError(t, res.Error)
		assert.Equal(t, int64(0), res.RowsAffected)
		assertM2M(t, db, "present pairs again")
		var tg M2Tag
		require.NoError(t, db.First(&tg, tag.ID).Error)
		assert.Equal(t, int64(1), tg.PostCount)
	})
}

// A join model created by value (not addressable).
func TestCounterCacheMany2ManyNonPointer(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		m2mDB(t, db)
		tag := M2Tag{Name: "t"}
		require.NoError(t, db.Create(&tag).Error)
		post := M2Post{Title: "p"}
		require.NoError(t, db.Create(&post).Error)
		require.NoError(t, db.Clauses(clause.OnConflict{DoNothing: true}).Create(M2PostTag{M2PostID: post.ID, M2TagID: tag.ID}).Error)
		require.NoError(t, db.Clauses(clause.OnConflict{DoNothing: true}).Create([]M2PostTag{{M2PostID: post.ID, M2TagID: tag.ID}}).Error)
		assertM2M(t, db, "created by value")
		var tg M2Tag
		require.NoError(t, db.First(&tg, tag.ID).Error)
		assert.Equal(t, int64(1), tg.PostCount)
	})
}

type M2Enroll struct {
	M2StudentID uint   `gorm:"primaryKey"`
	M2CourseID  uint   `gorm:"primaryKey"`
	Note        string `gorm:"size:32;default:dflt"`
}
type M2Student struct {
	ID      uint
	Courses []M2Course `gorm:"many2many:m2_enrolls"`
}
type M2Course struct {
	ID       uint
	Students []M2Student `gorm:"many2many:m2_enrolls"`
	Count    int64       `gorm:"-" slotted:"students"`
}

// Omit on a join model's create holds for the row the plugin inserts.
func TestCounterCacheMany2ManyOmitJoinModel(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		drop := func() { _ = db.Migrator().DropTable(&M2Enroll{}, &M2Student{}, &M2Course{}) }
		drop()
		require.NoError(t, db.SetupJoinTable(&M2Student{}, "Courses", &M2Enroll{}))
		require.NoError(t, db.SetupJoinTable(&M2Course{}, "Students", &M2Enroll{}))
		require.NoError(t, db.AutoMigrate(&M2Student{}, &M2Course{}))
		t.Cleanup(drop)
		require.NoError(t, slotted.CounterCache(db, &M2Course{}, "Students", "students"))
		s, c := M2Student{}, M2Course{}
		require.NoError(t, db.Create(&s).Error)
		require.NoError(t, db.Create(&c).Error)
		require.NoError(t, db.Omit("note").Clauses(clause.OnConflict{DoNothing: true}).Create(&M2Enroll{M2StudentID: s.ID, M2CourseID: c.ID, Note: "given"}).Error)
		var e M2Enroll
		require.NoError(t, db.First(&e).Error)
		assert.Equal(t, "dflt", e.Note, "Omit(note) honoured")
		require.NoError(t, db.First(&c, c.ID).Error)
		assert.Equal(t, int64(1), c.Count)
	})
}

// m2Flag is a soft-delete field that is not gorm.DeletedAt (as
// gorm.io/plugin/soft_delete's flags): a live row is not deleted_at IS NULL.
type m2Flag uint

func (m2Flag) DeleteClauses(*schema.Field) []clause.Interface { return nil }

type M2FlagNote struct {
	ID      uint
	Labels  []M2FlagLabel `gorm:"many2many:m2_flag_note_labels"`
	Deleted m2Flag
}
type M2FlagLabel struct {
	ID    uint
	Notes []M2FlagNote `gorm:"many2many:m2_flag_note_labels"`
	Count int64        `gorm:"-" slotted:"notes"`
}

func TestCounterCacheMany2ManyFarSoftDeleteType(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		err := slotted.CounterCache(db, &M2FlagLabel{}, "Notes", "notes")
		require.ErrorIs(t, err, slotted.ErrUnsupportedModel)
		t.Log(err)
	})
}

// gorm's Save of a soft-deleted note finds no live row to update and falls
// back to an upsert (ON CONFLICT UPDATE ALL), which restores it; a Save of a
// slice upserts too, and soft-deletes a note whose DeletedAt is set.
func TestCounterCacheMany2ManySaveRestore(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		m2NotesDB(t, db)
		label := M2Label{Name: "l"}
		require.NoError(t, db.Create(&label).Error)
		note := M2Note{Title: "n", Tags: []M2Label{label}}
		require.NoError(t, db.Create(&note).Error)
		require.NoError(t, db.Delete(&note).Error)
		assertNotes(t, db, "soft deleted")
		note.Tags = nil
		note.DeletedAt = gorm.DeletedAt{}
		require.NoError(t, db.Save(&note).Error)
		var n M2Note
		require.NoError(t, db.First(&n, note.ID).Error)
		assertNotes(t, db, "restored by Save")
		n.DeletedAt = gorm.DeletedAt{Time: time.Now(), Valid: true}
		require.NoError(t, db.Save(&[]M2Note{n}).Error)
		assertNotes(t, db, "soft deleted by Save of a slice")
		var l M2Label
		require.NoError(t, db.First(&l, label.ID).Error)
		assert.Equal(t, [2]int64{0, 1}, [2]int64{l.Count, l.Other})
		n.DeletedAt = gorm.DeletedAt{}
		require.NoError(t, db.Session(&gorm.Session{SkipDefaultTransaction: true}).Save(&[]M2Note{n}).Error)
		assertNotes(t, db, "restored by Save of a slice without the default transaction")
	})
}

// needForeignKeys skips a test whose subject is a foreign key's refusal on a
// SQLite connection that does not enforce them (PRAGMA foreign_keys is off
// by default in mattn/go-sqlite3, the -tags sqlite_cgo run; the pure-Go
// driver turns it on): nothing would refuse the row there.
func needForeignKeys(t *testing.T, db *gorm.DB) {
	t.Helper()
	if dialect(db) != "sqlite" {
		return
	}
	var on int
	require.NoError(t, db.Raw("PRAGMA foreign_keys").Scan(&on).Error)
	if on == 0 {
		t.Skip("this SQLite driver's connections do not enforce foreign keys")
	}
}
