package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted"
)

func newTopics(t testing.TB, db *gorm.DB, n int) []uint {
	t.Helper()
	topics := make([]Topic, n)
	for i := range topics {
		topics[i].Title = string(rune('a' + i))
	}
	require.NoError(t, db.Create(&topics).Error)
	ids := make([]uint, n)
	for i, tp := range topics {
		ids[i] = tp.ID
	}
	return ids
}

func ptr[T any](v T) *T { return &v }

func TestCounterCacheCreate(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		ids := newTopics(t, db, 2)
		a, b := ids[0], ids[1]

		one := Reply{TopicID: ptr(a), Published: true, Points: 12}
		require.NoError(t, db.Create(&one).Error)
		assert.Equal(t, topicTruth{1, 1, 1, 12}, countersOf(t, db, a))

		// A batch: one upsert for every topic and counter, not one per reply
		// nor per parent: topics.points of b, topics.published of a, topics.replies of a and b.
		rdb, rec := recorded(db)
		batch := []Reply{{TopicID: ptr(a)}, {TopicID: ptr(b), Points: 3}, {TopicID: ptr(a), Published: true}, {TopicID: ptr(b)}, {TopicID: ptr(a)}, {}}
		require.NoError(t, rdb.Create(&batch).Error)
		require.Equal(t, 1, rec.count("slotted_counters"), "one upsert: %q", rec.statements())
		for _, s := range rec.statements() {
			if strings.Contains(s, "slotted_counters") {
				s = strings.ReplaceAll(s, `"`, "'") // SQLite quotes strings with "
				assert.Equal(t, 4, strings.Count(s, "),(")+1, "four rows: %s", s)
				ia, ib := strings.Index(s, fmt.Sprintf("'topics.replies','%d'", a)), strings.Index(s, fmt.Sprintf("'topics.replies','%d'", b))
				assert.True(t, strings.Index(s, "'topics.points'") < strings.Index(s, "'topics.published'") && (ia < ib) == (fmt.Sprint(a) < fmt.Sprint(b)), "rows in key order: %s", s)
			}
		}
		requireTopicsExact(t, db, a, b)

		// Nested: the topic first, then its replies (gorm's association save, an upsert).
		nested := Topic{Title: "nested", Replies: []Reply{{Published: true}, {Points: 20}}}
		require.NoError(t, db.Create(&nested).Error)
		assert.Equal(t, topicTruth{2, 1, 1, 20}, countersOf(t, db, nested.ID))

		// Belongs-to: the reply's new topic is created first, then counted.
		withParent := Reply{Topic: &Topic{Title: "parent"}, Points: 1}
		require.NoError(t, db.Create(&withParent).Error)
		assert.Equal(t, topicTruth{1, 0, 0, 1}, countersOf(t, db, withParent.Topic.ID))

		// A column left out of the INSERT holds the database's value, not the struct's: read back.
		omitted := []Reply{{TopicID: ptr(a), Points: 5}, {TopicID: ptr(b), Points: 6}}
		require.NoError(t, db.Omit("TopicID").Create(&omitted).Error)
		require.NoError(t, db.Select("Body", "Points").Create(&Reply{TopicID: ptr(a), Points: 7}).Error)
		require.NoError(t, db.Omit(clause.Associations).Create(&Reply{TopicID: ptr(a), Points: 1}).Error)
		requireTopicsExact(t, db, a, b)

		// CreateInBatches and a soft-deleted new row (counts nowhere).
		many := make([]Reply, 25)
		for i := range many {
			many[i].TopicID = ptr(b)
			many[i].Points = int64(i)
		}
		many[0].DeletedAt = gorm.DeletedAt{Time: many[0].DeletedAt.Time.AddDate(2000, 1, 1), Valid: true}
		require.NoError(t, db.CreateInBatches(&many, 10).Error)
		requireTopicsExact(t, db, a, b, nested.ID, withParent.Topic.ID)

		// The parent's counters are normal counters: auto-filled.
		var got []Topic
		require.NoError(t, db.Order("id").Find(&got, []uint{a, b}).Error)
		assert.EqualValues(t, 5, got[0].Count)
		assert.EqualValues(t, 2+24, got[1].Count)
	})
}

func TestCounterCacheBelongsToStringKeySum(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		c := Customer{ID: "c-1", Name: "Ann"}
		require.NoError(t, db.Create(&c).Error)
		invoices := []Invoice{{CustomerID: "c-1", Total: 40}, {CustomerID: "c-1", Total: 2}}
		require.NoError(t, db.Create(&invoices).Error)
		require.NoError(t, db.First(&c, "id = ?", "c-1").Error)
		assert.EqualValues(t, 2, c.Invoices)
		assert.EqualValues(t, 42, c.Spent)

		// From a map: the values are read as gorm stores them.
		require.NoError(t, db.Model(&Invoice{}).Create(map[string]any{"CustomerID": "c-1", "Total": 8}).Error)
		require.NoError(t, db.Model(&Invoice{}).Create(map[string]any{"customer_id": "c-1", "total": -1}).Error)

		// A refund larger than everything: the counter goes negative, the
		// unsigned field reads 0 (saturating), Count tells the truth.
		require.NoError(t, db.Create(&Invoice{CustomerID: "c-1", Total: -100}).Error)
		require.NoError(t, db.First(&c, "id = ?", "c-1").Error)
		assert.Zero(t, c.Spent)
		spent, err := slotted.Count(db, &c, "spent")
		require.NoError(t, err)
		assert.EqualValues(t, 42+8-1-100, spent)
		assert.EqualValues(t, 5, c.Invoices)

		// Moving an invoice to another customer (the belongs-to declaration's foreign key).
		d := Customer{ID: "c-2"}
		require.NoError(t, db.Create(&d).Error)
		require.NoError(t, db.Model(&invoices[0]).Update("customer_id", "c-2").Error)
		require.NoError(t, db.First(&d, "id = ?", "c-2").Error)
		assert.EqualValues(t, 1, d.Invoices)
		assert.EqualValues(t, 40, d.Spent)

		// A column left out of the INSERT holds the database's value (0), not the struct's: read back.
		require.NoError(t, db.Omit("Total").Create(&Invoice{CustomerID: "c-2", Total: 1000}).Error)
		require.NoError(t, db.Select("CustomerID", "Memo").Create(&Invoice{CustomerID: "c-2", Total: 1000}).Error)
		require.NoError(t, db.First(&d, "id = ?", "c-2").Error)
		assert.EqualValues(t, 3, d.Invoices)
		assert.EqualValues(t, 40, d.Spent)

		// An update of a column no cache reads does not read the rows.
		rdb, rec := recorded(db)
		require.NoError(t, rdb.Model(&invoices[1]).Update("memo", "paid").Error)
		require.NoError(t, rdb.Model(&invoices[1]).Updates(Invoice{Memo: "paid twice"}).Error)
		assert.Zero(t, rec.count("SELECT"), "%q", rec.statements())
		require.NoError(t, rdb.Model(&invoices[1]).Updates(Invoice{Memo: "and changed", Total: 3}).Error)
		assert.Equal(t, 2, rec.count("SELECT"), "before and after images when the total changes")
		spent, err = slotted.Count(db, &c, "spent")
		require.NoError(t, err)
		assert.EqualValues(t, 2+8-1-100+1, spent)
	})
}

func TestCounterCacheDelete(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		ids := newTopics(t, db, 2)
		a, b := ids[0], ids[1]
		rs := make([]Reply, 12)
		for i := range rs {
			rs[i] = Reply{TopicID: ptr(ids[i%2]), Published: i%3 == 0, Points: int64(i * 2)}
		}
		require.NoError(t, db.Create(&rs).Error)

		// The case: the deleted value carries only the key. The
		// foreign key is read from the row (SELECT ... FOR UPDATE) first.
		rdb, rec := recorded(db)
		require.NoError(t, rdb.Delete(&Reply{ID: rs[0].ID}).Error)
		assert.Equal(t, 1, rec.count("SELECT", "replies", "topic_id"), "%q", rec.statements())
		requireTopicsExact(t, db, a, b)

		// Deleting the soft-deleted row for good does not count it again; neither does soft-deleting it twice.
		require.NoError(t, db.Delete(&Reply{ID: rs[0].ID}).Error)
		require.NoError(t, db.Unscoped().Delete(&Reply{ID: rs[0].ID}).Error)
		requireTopicsExact(t, db, a, b)

		// Restore: deleted_at back to NULL counts the row again.
		require.NoError(t, db.Delete(&rs[1]).Error)
		requireTopicsExact(t, db, a, b)
		require.NoError(t, db.Unscoped().Model(&rs[1]).Update("deleted_at", nil).Error)
		assert.Equal(t, truthOf(t, db, b), countersOf(t, db, b))
		assert.EqualValues(t, 6, truthOf(t, db, b).Replies, "restored")

		// By conditions, a batch of structs, with Unscoped on live rows, and with Limit.
		require.NoError(t, db.Where("points < ? AND topic_id = ?", 8, a).Delete(&Reply{}).Error)
		requireTopicsExact(t, db, a, b)
		require.NoError(t, db.Delete(&[]Reply{rs[5], rs[7]}).Error)
		requireTopicsExact(t, db, a, b)
		require.NoError(t, db.Unscoped().Delete(&Reply{}, rs[9].ID).Error)
		requireTopicsExact(t, db, a, b)
		before := truthOf(t, db, a).Replies
		require.NoError(t, db.Where("topic_id = ?", a).Order("id").Limit(1).Delete(&Reply{}).Error)
		requireTopicsExact(t, db, a, b)
		if dialect(db) == dbMySQL {
			assert.Equal(t, before-1, truthOf(t, db, a).Replies, "MySQL deletes one row; the image locked that one")
		}

		// Deleting a topic's replies through the association.
		require.NoError(t, db.Unscoped().Select("Replies").Delete(&Topic{ID: b}).Error)
		assert.Equal(t, topicTruth{}, countersOf(t, db, b), "the topic's counters went with it")
	})
}

func TestCounterCacheMove(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		ids := newTopics(t, db, 3)
		a, b, c := ids[0], ids[1], ids[2]
		rs := make([]Reply, 9)
		for i := range rs {
			rs[i] = Reply{TopicID: ptr(a), Published: i%2 == 0, Points: int64(i * 3)}
		}
		require.NoError(t, db.Create(&rs).Error)
		check := func(msg string) {
			t.Helper()
			for _, id := range ids {
				require.Equal(t, truthOf(t, db, id), countersOf(t, db, id), "%s: topic %d", msg, id)
			}
		}

		var loaded Reply
		require.NoError(t, db.First(&loaded, rs[0].ID).Error)
		loaded.TopicID = ptr(b)
		require.NoError(t, db.Save(&loaded).Error)
		check("Save")

		require.NoError(t, db.Model(&rs[1]).Update("topic_id", b).Error)
		check("Update")
		require.NoError(t, db.Model(&rs[2]).Updates(Reply{TopicID: ptr(c), Points: 50}).Error)
		check("Updates(struct)")
		require.NoError(t, db.Model(&rs[3]).Updates(map[string]any{"topic_id": c, "published": true}).Error)
		check("Updates(map)")
		require.NoError(t, db.Model(&rs[4]).UpdateColumn("topic_id", b).Error)
		check("UpdateColumn (no hooks, still counted)")
		require.NoError(t, db.Model(&rs[5]).Update("topic_id", nil).Error)
		check("to no topic")
		require.NoError(t, db.Model(&rs[5]).Update("topic_id", a).Error)
		check("from no topic")

		require.NoError(t, db.Model(&Reply{}).Where("topic_id = ? AND points > ?", a, 10).Update("topic_id", c).Error)
		check("bulk Update with conditions")
		require.NoError(t, db.Model(&Reply{}).Where("topic_id = ?", c).Updates(map[string]any{"points": 1, "published": false}).Error)
		check("bulk condition and sum flip")

		// Through gorm's associations.
		require.NoError(t, db.Model(&Topic{ID: a}).Association("Replies").Append(&rs[8]))
		check("Association Append")
		require.NoError(t, db.Model(&Topic{ID: c}).Association("Replies").Clear())
		check("Association Clear")

		// Save of a slice (an upsert): existing rows move, a new one is counted.
		var two []Reply
		require.NoError(t, db.Order("id").Limit(2).Find(&two).Error)
		for i := range two {
			two[i].TopicID = ptr(c)
		}
		two = append(two, Reply{TopicID: ptr(c), Points: 7})
		require.NoError(t, db.Save(&two).Error)
		check("Save(slice)")
		assert.NotZero(t, truthOf(t, db, c).Replies)
	})
}

func TestCounterCacheConditions(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		a := newTopics(t, db, 1)[0]
		r := Reply{TopicID: ptr(a), Points: 3}
		require.NoError(t, db.Create(&r).Error)
		assert.Equal(t, topicTruth{1, 0, 0, 3}, countersOf(t, db, a))
		require.NoError(t, db.Model(&r).Update("published", true).Error)
		assert.Equal(t, topicTruth{1, 1, 0, 3}, countersOf(t, db, a), "published: counted")
		require.NoError(t, db.Model(&r).Update("points", popularPoints).Error)
		assert.Equal(t, topicTruth{1, 1, 1, popularPoints}, countersOf(t, db, a), "popular: the database evaluates points >= 10")
		require.NoError(t, db.Model(&r).Update("points", gorm.Expr("points - ?", 1)).Error)
		assert.Equal(t, topicTruth{1, 1, 0, popularPoints - 1}, countersOf(t, db, a), "an SQL expression is read back")
		require.NoError(t, db.Model(&r).Update("published", false).Error)
		assert.Equal(t, topicTruth{1, 0, 0, popularPoints - 1}, countersOf(t, db, a))
		require.NoError(t, db.Delete(&r).Error)
		assert.Equal(t, topicTruth{}, countersOf(t, db, a))
	})
}

func TestCounterCacheRollback(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		ids := newTopics(t, db, 2)
		a, b := ids[0], ids[1]
		rs := []Reply{{TopicID: ptr(a), Points: 5, Published: true}, {TopicID: ptr(a), Points: 20}, {TopicID: ptr(b)}}
		require.NoError(t, db.Create(&rs).Error)
		want := []topicTruth{countersOf(t, db, a), countersOf(t, db, b)}

		err := db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, tx.Create(&Reply{TopicID: ptr(a)}).Error)
			require.NoError(t, tx.Delete(&rs[0]).Error)
			require.NoError(t, tx.Model(&rs[1]).Update("topic_id", b).Error)
			require.NoError(t, tx.Unscoped().Delete(&rs[2]).Error)
			assert.Equal(t, truthOf(t, tx, a), countersOf(t, tx, a), "inside the transaction")
			return gorm.ErrInvalidData // roll back
		})
		require.ErrorIs(t, err, gorm.ErrInvalidData)
		assert.Equal(t, want, []topicTruth{countersOf(t, db, a), countersOf(t, db, b)})
		requireTopicsExact(t, db, a, b)

		// A counter write that fails takes the child's change back with it
		// (gorm's default transaction): the counter table is renamed away.
		const away = "slotted_counters_away"
		require.NoError(t, db.Migrator().DropTable(away))
		require.NoError(t, db.Migrator().RenameTable(slotted.DefaultTable, away))
		require.Error(t, db.Create(&Reply{TopicID: ptr(a)}).Error)
		require.Error(t, db.Delete(&rs[0]).Error)
		require.Error(t, db.Model(&rs[1]).Update("topic_id", b).Error)
		require.NoError(t, db.Migrator().RenameTable(away, slotted.DefaultTable))
		requireTopicsExact(t, db, a, b)
		var n int64
		require.NoError(t, db.Model(&Reply{}).Count(&n).Error)
		assert.EqualValues(t, 3, n)
	})
}

// Without gorm's default transaction the plugin opens one for a statement
// that reads an image, so the locks last until the counters are written.
func TestCounterCacheSkipDefaultTransaction(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		ids := newTopics(t, db, 2)
		a, b := ids[0], ids[1]
		sdb := db.Session(&gorm.Session{SkipDefaultTransaction: true})
		rdb, rec := recorded(sdb)
		rs := []Reply{{TopicID: ptr(a), Points: 12}, {TopicID: ptr(a)}, {TopicID: ptr(b)}}
		require.NoError(t, rdb.Create(&rs).Error)
		require.NoError(t, rdb.Model(&rs[0]).Update("topic_id", b).Error)
		require.NoError(t, rdb.Delete(&rs[1]).Error)
		requireTopicsExact(t, db, a, b)
		if dialect(db) != dbSQLite {
			assert.Equal(t, 4, rec.count("FOR UPDATE", "replies"), "the create's read-back (a Where without Match), the update's before and after images, the delete's before image: %q", rec.statements())
		}

		// That transaction is real: a counter write that fails takes the child's change back.
		const away = "slotted_counters_away"
		require.NoError(t, db.Migrator().DropTable(away))
		require.NoError(t, db.Migrator().RenameTable(slotted.DefaultTable, away))
		require.Error(t, sdb.Model(&Reply{ID: rs[0].ID}).Update("topic_id", a).Error)
		require.Error(t, sdb.Delete(&Reply{ID: rs[2].ID}).Error)
		require.Error(t, sdb.Create(&Reply{TopicID: ptr(a)}).Error)
		require.NoError(t, db.Migrator().RenameTable(away, slotted.DefaultTable))
		requireTopicsExact(t, db, a, b)
		var n int64
		require.NoError(t, db.Model(&Reply{}).Count(&n).Error)
		assert.EqualValues(t, 2, n)
	})
}

// Changes the callbacks cannot see: Fix's dry run reports exactly them, Fix repairs them.
func TestFixRepairsUntrackedChanges(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		ids := newTopics(t, db, 3)
		a, b, c := ids[0], ids[1], ids[2]
		rs := []Reply{{TopicID: ptr(a), Published: true, Points: 11}, {TopicID: ptr(a), Points: 1}, {TopicID: ptr(b), Points: 4}}
		require.NoError(t, db.Create(&rs).Error)

		// Raw SQL, db.Table() without the model, and a counter nudged by hand.
		require.NoError(t, db.Exec("INSERT INTO replies (topic_id, published, points, body) VALUES (?, ?, ?, 'raw')", a, true, 2).Error)
		require.NoError(t, db.Table("replies").Where("id = ?", rs[2].ID).Update("topic_id", c).Error)
		require.NoError(t, slotted.Add(db, &Topic{ID: c}, "popular", 3))

		want := []slotted.Drift{ // in (record_type, record_id) order
			{Record: a, Counter: "points", Stored: 12, Actual: 14},
			{Record: b, Counter: "points", Stored: 4, Actual: 0},
			{Record: c, Counter: "points", Stored: 0, Actual: 4},
			{Record: c, Counter: "popular", Stored: 3, Actual: 0},
			{Record: a, Counter: "published", Stored: 1, Actual: 2},
			{Record: a, Counter: "replies", Stored: 2, Actual: 3},
			{Record: b, Counter: "replies", Stored: 1, Actual: 0},
			{Record: c, Counter: "replies", Stored: 0, Actual: 1},
		}
		norm := func(ds []slotted.Drift) []slotted.Drift {
			for i := range ds {
				ds[i].Ref = slotted.Ref{}
				ds[i].Record = toUint(ds[i].Record)
			}
			return ds
		}
		topics := []Topic{{ID: a}, {ID: b}, {ID: c}}
		drift, err := slotted.Fix(db, &topics, slotted.FixOptions{DryRun: true})
		require.NoError(t, err)
		assert.Equal(t, want, norm(drift))
		assert.Zero(t, topics[0].Count, "a dry run leaves the fields alone")
		drift, err = slotted.Fix(db, &topics, slotted.FixOptions{DryRun: true})
		require.NoError(t, err)
		assert.Len(t, drift, len(want), "a dry run changes nothing")

		// Inside a transaction of yours a dry run rolls back to a savepoint.
		require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
			drift, err := slotted.Fix(tx, &topics, slotted.FixOptions{DryRun: true})
			require.NoError(t, err)
			assert.Len(t, drift, len(want))
			return tx.Create(&Reply{TopicID: ptr(c)}).Error // and the transaction goes on
		}))
		want[7].Actual, want[7].Stored = 2, 1

		var seen []slotted.Drift
		var progress []slotted.FixProgress
		prog, err := slotted.FixAll(db, &Topic{}, slotted.FixOptions{BatchSize: 2,
			OnDrift:  func(d slotted.Drift) { seen = append(seen, d) },
			Progress: func(p slotted.FixProgress) { progress = append(progress, p) }})
		require.NoError(t, err)
		assert.ElementsMatch(t, want, norm(seen), "batch by batch")
		assert.Equal(t, slotted.FixProgress{Batches: 2, Records: 3, Drifted: 8, Last: prog.Last}, prog)
		assert.Len(t, progress, 2)
		assert.EqualValues(t, c, toUint(prog.Last))
		requireTopicsExact(t, db, a, b, c)
		var rows int64
		require.NoError(t, slotted.Table(db).Where("record_type LIKE ?", "topics.%").Where("count = 0").Count(&rows).Error)
		assert.Zero(t, rows, "Fix leaves one row per counter, none for 0")

		drift, err = slotted.Fix(db, &topics)
		require.NoError(t, err)
		assert.Empty(t, drift)
		assert.EqualValues(t, 3, topics[0].Count, "fields are set to the recomputed values")

		// Resuming after a, and a scope.
		require.NoError(t, db.Exec("DELETE FROM replies WHERE topic_id = ?", c).Error)
		prog, err = slotted.FixAll(db, &Topic{}, slotted.FixOptions{After: b, Counters: []string{"replies"}})
		require.NoError(t, err)
		assert.Equal(t, 1, prog.Records)
		assert.Equal(t, 1, prog.Drifted)
		prog, err = slotted.FixAll(db, &Topic{}, slotted.FixOptions{Scope: func(q *gorm.DB) *gorm.DB { return q.Where("title = ?", "c") }})
		require.NoError(t, err)
		assert.Equal(t, slotted.FixProgress{Batches: 1, Records: 1, Drifted: 1, Last: prog.Last}, prog, "points was left for this run")
		requireTopicsExact(t, db, a, b, c)
	})
}

func toUint(v any) uint {
	switch v := v.(type) {
	case uint:
		return v
	case int64:
		return uint(v)
	}
	panic(v)
}
