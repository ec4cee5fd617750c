package tests

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted"
)

// Models without counters, for checking that the plugin leaves plain gorm
// alone. Their tables are their own: no other test touches them.
type PlainAuthor struct {
	ID    uint
	Name  string      `gorm:"size:64"`
	Books []PlainBook `gorm:"foreignKey:AuthorID"`
}

type PlainBook struct {
	ID        uint
	Title     string `gorm:"size:64"`
	Slug      string `gorm:"size:64"`
	Pages     int
	Published bool
	AuthorID  uint
	Author    PlainAuthor
	DeletedAt gorm.DeletedAt `gorm:"index"`
	Finds     int            `gorm:"-"` // counted by AfterFind
}

// BeforeCreate derives the slug, so the INSERT shows what the hook did.
func (b *PlainBook) BeforeCreate(*gorm.DB) error {
	b.Slug = strings.ReplaceAll(strings.ToLower(b.Title), " ", "-")
	return nil
}

func (b *PlainBook) AfterFind(*gorm.DB) error {
	b.Finds++
	return nil
}

type PlainTag struct {
	ID   uint
	Name string `gorm:"size:64"`
}

var errForbidden = errors.New("forbidden tag")

// BeforeSave refuses one name: a failing hook must roll its statement back.
func (t *PlainTag) BeforeSave(*gorm.DB) error {
	if t.Name == "forbidden" {
		return errForbidden
	}
	return nil
}

var plainModels = []any{&PlainAuthor{}, &PlainBook{}, &PlainTag{}}

func published(db *gorm.DB) *gorm.DB { return db.Where("published = ?", true) }

func longerThan(pages int) func(*gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB { return db.Where("pages > ?", pages) }
}

// TestPlainGORMUnchanged runs one plain-gorm workload twice on each database,
// first on a *gorm.DB without the plugin and then on one with it registered,
// and requires the same results and the same SQL, statement by statement
// (values inlined, as the logger shows them).
func TestPlainGORMUnchanged(t *testing.T) {
	testEachDB(t, func(t *testing.T, withPlugin *gorm.DB) {
		plain := openRaw(t, dialect(withPlugin))
		_, err := slotted.StatsOf(plain)
		require.ErrorIs(t, err, slotted.ErrNotRegistered, "the first run must not have the plugin")
		_, err = slotted.StatsOf(withPlugin)
		require.NoError(t, err, "the second run must have the plugin")

		wantResults, wantSQL := runPlainWorkload(t, plain)
		gotResults, gotSQL := runPlainWorkload(t, withPlugin)

		require.Equal(t, wantResults, gotResults, "results with the plugin")
		require.Equal(t, wantSQL, gotSQL, "SQL with the plugin")

		// The workload itself did what it says (so equality above means something).
		assert.GreaterOrEqual(t, len(wantSQL), 50)
		assert.Contains(t, strings.Join(wantSQL, "\n"), "SAVEPOINT")
		assert.Contains(t, wantResults, "nested transaction: [commit outer]")
		assert.Contains(t, wantResults, "soft deleted: visible 5, unscoped 6")
		assert.Contains(t, wantResults, "hook error: forbidden tag, tags 3")
		for _, s := range gotSQL {
			assert.NotContains(t, s, slotted.DefaultTable, "no counter SQL for models without counters")
		}
	})
}

// runPlainWorkload recreates the plain tables and runs the workload on db,
// returning what it observed and every statement it sent.
func runPlainWorkload(t *testing.T, db *gorm.DB) (results, sql []string) {
	t.Helper()
	// Fixed time, so soft deletes render the same SQL in both runs.
	db.Config.NowFunc = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	require.NoError(t, db.Migrator().DropTable(plainModels...))
	require.NoError(t, db.AutoMigrate(plainModels...))
	rdb, rec := recorded(db)
	w := &plainRun{t: t, db: rdb}
	w.run()
	sql = rec.statements()
	for i, s := range sql {
		sql[i] = savepoint.ReplaceAllString(s, "sp<random>") // gorm names savepoints at random
	}
	return w.results, sql
}

var savepoint = regexp.MustCompile(`\bsp\d+\b`)

type plainRun struct {
	t       *testing.T
	db      *gorm.DB
	results []string
}

func (w *plainRun) see(label string, v any) {
	w.results = append(w.results, fmt.Sprintf("%s: %+v", label, v))
}

// ok fails the test on an unexpected error and returns the rows affected.
func (w *plainRun) ok(res *gorm.DB) int64 {
	w.t.Helper()
	require.NoError(w.t, res.Error)
	return res.RowsAffected
}

// books summarises books without pointers or times, for comparing runs.
func books(bs []PlainBook) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = fmt.Sprintf("%d %s %s p%d pub=%v a%d(%s) finds=%d del=%v",
			b.ID, b.Title, b.Slug, b.Pages, b.Published, b.AuthorID, b.Author.Name, b.Finds, b.DeletedAt.Valid)
	}
	return out
}

func (w *plainRun) run() {
	db := w.db

	// Create: one, a batch, in batches, and with an association.
	ann := PlainAuthor{Name: "Ann"}
	w.ok(db.Create(&ann))
	bs := []PlainBook{
		{Title: "Go Fast", Pages: 120, Published: true, AuthorID: ann.ID},
		{Title: "Go Slow", Pages: 80, AuthorID: ann.ID},
		{Title: "Lock Free", Pages: 300, Published: true, AuthorID: ann.ID},
		{Title: "Slots", Pages: 40, AuthorID: ann.ID},
	}
	w.see("batch create rows", w.ok(db.Create(&bs)))
	w.see("batch create", books(bs))
	bob := PlainAuthor{Name: "Bob", Books: []PlainBook{{Title: "Rows And Locks", Pages: 200, Published: true}, {Title: "Sums", Pages: 60}}}
	w.ok(db.Create(&bob))
	w.see("create with association", books(bob.Books))
	tags := []PlainTag{{Name: "t1"}, {Name: "t2"}, {Name: "t3"}, {Name: "t4"}, {Name: "t5"}}
	w.see("create in batches", w.ok(db.CreateInBatches(&tags, 2)))

	// Find, First, Take, Last; not found.
	var all []PlainBook
	w.ok(db.Order("id").Find(&all))
	w.see("find", books(all))
	var b PlainBook
	w.ok(db.First(&b))
	w.see("first", books([]PlainBook{b}))
	b = PlainBook{}
	w.ok(db.Take(&b, "title = ?", "Slots"))
	w.see("take", books([]PlainBook{b}))
	b = PlainBook{}
	w.ok(db.Last(&b))
	w.see("last", books([]PlainBook{b}))
	err := db.First(&PlainBook{}, 999).Error
	w.see("not found", errors.Is(err, gorm.ErrRecordNotFound))
	var some []PlainBook
	w.ok(db.Where(&PlainBook{Published: true}).Or(map[string]any{"pages": 40}).Order("id").Find(&some))
	w.see("struct and map conditions", books(some))
	w.ok(db.Order("pages DESC").Limit(2).Offset(1).Find(&some, "author_id IN ?", []uint{ann.ID, bob.ID}))
	w.see("inline conditions, limit, offset", books(some))

	// Joins (belongs-to, and a hand-written join scanned into another type).
	w.ok(db.Joins("Author").Where(clause.Eq{Column: clause.Column{Table: "Author", Name: "name"}, Value: "Bob"}).Order("plain_books.id").Find(&some))
	w.see("joins", books(some))
	var pairs []struct {
		Title string
		Name  string
	}
	w.ok(db.Model(&PlainBook{}).Select("plain_books.title, plain_authors.name").
		Joins("JOIN plain_authors ON plain_authors.id = plain_books.author_id").Order("plain_books.id").Scan(&pairs))
	w.see("join scan", pairs)

	// Preload: has-many and belongs-to.
	var authors []PlainAuthor
	w.ok(db.Preload("Books", func(db *gorm.DB) *gorm.DB { return db.Order("id") }).Order("id").Find(&authors))
	for _, a := range authors {
		w.see("preload has-many "+a.Name, books(a.Books))
	}
	w.ok(db.Preload("Author").Order("id").Find(&some))
	w.see("preload belongs-to", books(some))

	// Update, Updates (map and struct), Save, and an update by conditions with an expression.
	b = bs[1]
	w.see("update", w.ok(db.Model(&b).Update("pages", 90)))
	w.see("updates map", w.ok(db.Model(&b).Updates(map[string]any{"title": "Go Steady", "published": true})))
	w.see("updates struct", w.ok(db.Model(&b).Updates(PlainBook{Pages: 95})))
	b.Title = "Go Steadier"
	w.ok(db.Save(&b))
	w.see("save", books([]PlainBook{b}))
	w.see("update expression", w.ok(db.Model(&PlainBook{}).Where("published = ?", false).Update("pages", gorm.Expr("pages + ?", 1))))

	// Scopes, Count, Pluck, Scan.
	var n int64
	w.ok(db.Model(&PlainBook{}).Scopes(published, longerThan(100)).Count(&n))
	w.see("scopes count", n)
	var titles []string
	w.ok(db.Model(&PlainBook{}).Scopes(published).Order("id").Pluck("title", &titles))
	w.see("pluck", titles)
	var groups []struct {
		AuthorID uint
		N        int64
		Pages    int64
	}
	w.ok(db.Model(&PlainBook{}).Select("author_id, COUNT(*) AS n, SUM(pages) AS pages").Group("author_id").Order("author_id").Scan(&groups))
	w.see("group scan", groups)

	// Raw SQL.
	var title string
	w.ok(db.Raw("SELECT title FROM plain_books WHERE id = ?", bs[2].ID).Scan(&title))
	w.see("raw scan", title)
	w.see("exec", w.ok(db.Exec("UPDATE plain_books SET pages = pages * 2 WHERE id = ?", bs[2].ID)))
	var raw []PlainBook
	w.ok(db.Raw("SELECT * FROM plain_books WHERE pages > ? ORDER BY id", 100).Scan(&raw))
	w.see("raw into model", books(raw))

	// Soft delete, Unscoped, hard delete.
	w.see("soft delete", w.ok(db.Delete(&bs[3])))
	var visible, unscoped int64
	w.ok(db.Model(&PlainBook{}).Count(&visible))
	w.ok(db.Unscoped().Model(&PlainBook{}).Count(&unscoped))
	w.see("soft deleted", fmt.Sprintf("visible %d, unscoped %d", visible, unscoped))
	b = PlainBook{}
	w.ok(db.Unscoped().First(&b, bs[3].ID))
	w.see("unscoped first", books([]PlainBook{b}))
	w.see("soft delete by conditions", w.ok(db.Where("pages < ?", 70).Delete(&PlainBook{})))
	w.see("hard delete", w.ok(db.Unscoped().Delete(&bs[3])))

	// Delete by key, by keys, by conditions.
	w.see("delete by key", w.ok(db.Delete(&PlainTag{}, tags[0].ID)))
	w.see("delete by keys", w.ok(db.Delete(&PlainTag{}, []uint{tags[1].ID, tags[2].ID})))
	w.see("delete by conditions", w.ok(db.Where("name = ?", "t4").Delete(&PlainTag{})))

	// Transactions: commit, rollback, nested with a savepoint rolled back, manual.
	require.NoError(w.t, db.Transaction(func(tx *gorm.DB) error {
		return tx.Create(&PlainTag{Name: "commit"}).Error
	}))
	err = db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&PlainTag{Name: "rollback"}).Error; err != nil {
			return err
		}
		return errors.New("roll back")
	})
	w.see("rollback", err)
	require.NoError(w.t, db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&PlainTag{Name: "outer"}).Error; err != nil {
			return err
		}
		w.see("inner", tx.Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&PlainTag{Name: "inner"}).Error; err != nil {
				return err
			}
			return errors.New("inner rolls back")
		}))
		return nil
	}))
	tx := db.Begin()
	w.ok(tx.Create(&PlainTag{Name: "manual"}))
	w.ok(tx.Rollback())
	var names []string
	w.ok(db.Model(&PlainTag{}).Where("name NOT LIKE ?", "t%").Order("id").Pluck("name", &names))
	w.see("nested transaction", names)

	// A failing hook: nothing written.
	err = db.Create(&PlainTag{Name: "forbidden"}).Error
	var count int64
	w.ok(db.Model(&PlainTag{}).Count(&count))
	w.see("hook error", fmt.Sprintf("%v, tags %d", err, count))

	// What is left, soft-deleted rows included.
	w.ok(db.Unscoped().Order("id").Find(&all))
	w.see("final books", books(all))
	var finalTags []PlainTag
	w.ok(db.Order("id").Find(&finalTags))
	w.see("final tags", finalTags)
}
