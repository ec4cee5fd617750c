package tests

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// Overflow in statements that write several rows (issue #8): SQLite would
// turn the overflowing slot into a REAL and write the other rows, so these
// check, on every database, that the whole statement fails with ErrOverflow,
// that none of its rows is written (the overflowing row comes last in key
// order where it can, so the rows before it are undone), that the slot stays
// an integer (slotState) and that the counter still reads.

const nearMax = math.MaxInt64 - 1

// oneSlot makes every counter of the test one slot row, so a seeded row is the one each write hits.
var oneSlot = slotted.Config{Slots: 1, MaxInFlight: 1}

// seedSlot writes a counter's slot 0 directly.
func seedSlot(t *testing.T, db *gorm.DB, typ, id string, count int64) {
	t.Helper()
	require.NoError(t, slotted.Table(db).Create(&slotted.SlottedCounter{
		RecordType: slotted.Key(typ), RecordID: slotted.Key(id), Count: count}).Error)
}

// assertSlot checks a one-slot counter: no row when want is nil, else slot 0
// holding *want as an integer, and a read returning it.
func assertSlot(t *testing.T, db *gorm.DB, typ, id string, want *int64) {
	t.Helper()
	ref := slotted.Ref{Type: typ, ID: id}
	rows, total := map[int32]int64{}, int64(0)
	if want != nil {
		rows[0], total = *want, *want
	}
	assert.Equal(t, rows, slotState(t, db, ref), "%s %s", typ, id)
	n, err := slotted.CountRef(db, ref)
	require.NoError(t, err, "%s %s still reads", typ, id)
	assert.Equal(t, total, n, "%s %s", typ, id)
}

func i64(n int64) *int64 { return &n }

// TestOverflowMultiRowBulk: AddEach, AddMany (one statement, and several in
// one transaction, the last one a single row) and AddRefs.
func TestOverflowMultiRowBulk(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		// post_stars sorts before posts.likes: the statement updates stars, then likes overflows.
		seedSlot(t, db, "post_stars", "1", 10)
		seedSlot(t, db, "posts.likes", "1", nearMax)
		post := Post{ID: 1}
		require.ErrorIs(t, slotted.AddEach(db, &post, map[string]int64{"likes": 2, "stars": 3}), slotted.ErrOverflow)
		assert.Zero(t, post.Likes, "the model's fields did not move")
		assert.Zero(t, post.Stars)
		assertSlot(t, db, "post_stars", "1", i64(10))
		assertSlot(t, db, "posts.likes", "1", i64(nearMax))

		// 3 rows: one statement; 9: 8 + 1 rows; 10: 8 + 2 rows. The last tag in key order overflows.
		for _, n := range []int{3, 9, 10} {
			tags := make([]Tag, n)
			for i := range tags {
				tags[i].Name = fmt.Sprintf("m%02d-%02d", n, i)
			}
			first, last := tags[0].Name, tags[n-1].Name
			seedSlot(t, db, "tags.uses", first, 7)
			seedSlot(t, db, "tags.uses", last, nearMax)
			require.ErrorIs(t, slotted.AddMany(db, tags, "uses", 5), slotted.ErrOverflow, "%d records", n)
			assertSlot(t, db, "tags.uses", first, i64(7))
			for _, tag := range tags[1 : n-1] {
				assertSlot(t, db, "tags.uses", tag.Name, nil)
				assert.Zero(t, tag.Uses)
			}
			assertSlot(t, db, "tags.uses", last, i64(nearMax))
		}

		seedSlot(t, db, "dl", "a", 10)
		seedSlot(t, db, "dl", "z", nearMax)
		refs := func(z int64) map[slotted.Ref]int64 {
			return map[slotted.Ref]int64{{Type: "dl", ID: "a"}: 1, {Type: "dl", ID: "b"}: 2, {Type: "dl", ID: "z"}: z}
		}
		require.ErrorIs(t, slotted.AddRefs(db, refs(5)), slotted.ErrOverflow)
		assertSlot(t, db, "dl", "a", i64(10))
		assertSlot(t, db, "dl", "b", nil)
		assertSlot(t, db, "dl", "z", i64(nearMax))
		// A sum of exactly MaxInt64 fits, and is written with the rest of the statement.
		require.NoError(t, slotted.AddRefs(db, refs(1)))
		assertSlot(t, db, "dl", "a", i64(11))
		assertSlot(t, db, "dl", "b", i64(2))
		assertSlot(t, db, "dl", "z", i64(math.MaxInt64))
	}, oneSlot)
}

// TestOverflowMultiRowAddWhere: one INSERT … SELECT over three records, the last of which overflows.
func TestOverflowMultiRowAddWhere(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := []Post{{Title: "w"}, {Title: "w"}, {Title: "w"}}
		require.NoError(t, db.Create(&posts).Error)
		a, b, z := itoa(posts[0].ID), itoa(posts[1].ID), itoa(posts[2].ID) // 1, 2, 3: also their text order
		seedSlot(t, db, "posts.likes", a, 7)
		seedSlot(t, db, "posts.likes", z, nearMax)
		query := func() *gorm.DB { return db.Model(&Post{}).Where("title = ?", "w") }
		require.ErrorIs(t, slotted.AddWhere(query(), "likes", 5), slotted.ErrOverflow)
		assertSlot(t, db, "posts.likes", a, i64(7))
		assertSlot(t, db, "posts.likes", b, nil)
		assertSlot(t, db, "posts.likes", z, i64(nearMax))

		require.NoError(t, slotted.AddWhere(query(), "likes", 1), "a sum of exactly MaxInt64 fits")
		assertSlot(t, db, "posts.likes", a, i64(8))
		assertSlot(t, db, "posts.likes", b, i64(1))
		assertSlot(t, db, "posts.likes", z, i64(math.MaxInt64))
	}, oneSlot)
}

// OvfPage has a one-slot bucketed counter: a write is the total's row and the day's row in one statement.
type OvfPage struct {
	ID    uint
	Views int64 `gorm:"-" slotted:"views;buckets:day;slots:1"`
}

// TestOverflowMultiRowBucketed: the two-row write of a bucketed counter, overflowing in either row.
func TestOverflowMultiRowBucketed(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cfg := oneSlot
	cfg.Now = func() time.Time { return now }
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		const total, day = "ovf_pages.views", "ovf_pages.views@2026-11-23"
		window := func(page *OvfPage) int64 {
			n, err := slotted.CountBetween(db, page, "views", now.Add(-time.Hour), now)
			require.NoError(t, err)
			return n
		}

		// The total's row overflows: the day's row (after it in key order) is not written.
		page := OvfPage{ID: 1}
		seedSlot(t, db, total, "1", nearMax)
		require.ErrorIs(t, slotted.Add(db, &page, "views", 5), slotted.ErrOverflow)
		assert.Zero(t, page.Views, "the field did not move")
		assertSlot(t, db, total, "1", i64(nearMax))
		assertSlot(t, db, day, "1", nil)

		// The day's row overflows: the total's row, updated first, is undone.
		page = OvfPage{ID: 2}
		seedSlot(t, db, total, "2", 10)
		seedSlot(t, db, day, "2", nearMax)
		require.ErrorIs(t, slotted.Add(db, &page, "views", 5), slotted.ErrOverflow)
		assertSlot(t, db, total, "2", i64(10))
		assertSlot(t, db, day, "2", i64(nearMax))
		assert.EqualValues(t, nearMax, window(&page), "the window still reads")

		require.NoError(t, slotted.Add(db, &page, "views", 1), "a sum of exactly MaxInt64 fits")
		assertSlot(t, db, total, "2", i64(11))
		assert.EqualValues(t, math.MaxInt64, window(&page))
	}, cfg)
}

// TestOverflowCoalesced queues writes behind a held statement so that one
// batch carries an overflowing counter with two others. The batch fails as a
// whole, and each of its callers then writes alone and gets its own outcome:
// the others succeed, each exactly once (the batch wrote nothing), and of the
// overflowing counter's callers only the +1 that fits.
func TestOverflowCoalesced(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		seedSlot(t, db, "ovf", "a", 10)
		seedSlot(t, db, "ovf", "z", nearMax)
		on, started, release := held(1)
		g := installGate(t, db, on)
		add := func(id string, delta int64) func() error {
			return func() error { return slotted.AddRef(db, slotted.Ref{Type: "ovf", ID: id}, delta) }
		}
		first := queue([]func() error{add("first", 1)})
		<-started
		writes := []func() error{add("a", 1), add("z", 5), add("b", 2), add("a", 1), add("z", 1), add("b", 2), add("z", 5), add("a", 1)}
		rest := queue(writes)
		waitQueued(t, db, int64(len(writes)))
		close(release)
		require.NoError(t, first()[0])
		for i, err := range rest() {
			if i == 1 || i == 6 {
				require.ErrorIs(t, err, slotted.ErrOverflow, "write %d", i)
			} else {
				require.NoError(t, err, "write %d", i)
			}
		}
		assert.Len(t, g.statement(2).vars, (3+markerRows(db))*4, "one batch of three counters (and the outcome marker)")
		assert.EqualValues(t, 2+len(writes), g.n.Load(), "the held statement, the failed batch, each caller alone")
		assertSlot(t, db, "ovf", "a", i64(13))
		assertSlot(t, db, "ovf", "b", i64(4))
		assertSlot(t, db, "ovf", "z", i64(math.MaxInt64))

		// A batch of one row (two callers of one counter) that overflows: both fail, nothing written.
		g.n.Store(0)
		on, started, release = held(1)
		g.on = on
		first = queue([]func() error{add("first", 1)})
		<-started
		rest = queue([]func() error{add("z", -1), add("z", 2)})
		waitQueued(t, db, 2)
		close(release)
		require.NoError(t, first()[0])
		errs := rest()
		require.NoError(t, errs[0], "-1 fits alone")
		require.ErrorIs(t, errs[1], slotted.ErrOverflow)
		assertSlot(t, db, "ovf", "z", i64(math.MaxInt64-1))
	}, oneSlot)
}

// TestOverflowCoalescedConcurrent: 16 writers add 1 to a counter 100 below
// MaxInt64 and 1 to counters of their own, coalesced as they come. Exactly
// 100 of the hot adds succeed, every other one fails with ErrOverflow, and
// every write to the other counters is counted once.
func TestOverflowCoalescedConcurrent(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		const workers, rounds = 16, 25
		sqlDB, err := db.DB()
		require.NoError(t, err)
		sqlDB.SetMaxOpenConns(24)
		seedSlot(t, db, "hot", "z", math.MaxInt64-100)
		var ok, overflowed atomic.Int64
		errs := run(workers, func(w int) error {
			for range rounds {
				switch err := slotted.AddRef(db, slotted.Ref{Type: "hot", ID: "z"}, 1); {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, slotted.ErrOverflow):
					overflowed.Add(1)
				default:
					return err
				}
				if err := slotted.AddRef(db, slotted.Ref{Type: "own", ID: fmt.Sprint(w)}, 1); err != nil {
					return err
				}
			}
			return nil
		})
		for _, err := range errs {
			require.NoError(t, err)
		}
		assert.EqualValues(t, 100, ok.Load())
		assert.EqualValues(t, workers*rounds-100, overflowed.Load())
		assertSlot(t, db, "hot", "z", i64(math.MaxInt64))
		for w := range workers {
			assertSlot(t, db, "own", fmt.Sprint(w), i64(rounds))
		}
		t.Logf("batches %d for %d writes", stats(t, db).Batches, stats(t, db).BatchedWrites)
	}, slotted.Config{Slots: 1})
}

// TestOverflowBufferFlush: a write-behind flush is a multi-row upsert too. A
// delta that would overflow its counter is refused, as Add refuses it: the
// flush reports ErrOverflow for it and writes every other counter, in the
// same statement shape or not, and nothing stays pending to fail again.
func TestOverflowBufferFlush(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		seedSlot(t, db, "buf", "m", nearMax)
		var reported []error
		buf, err := slotted.NewBuffer(db, slotted.BufferOptions{Interval: time.Hour, OnError: func(err error) { reported = append(reported, err) }})
		require.NoError(t, err)
		// 12 counters: one statement of 8 rows (the overflowing "m" among them) and one of 4.
		ids := []string{"a", "b", "c", "d", "e", "f", "m", "n", "o", "p", "q", "r"}
		for _, id := range ids {
			require.NoError(t, buf.AddRef(slotted.Ref{Type: "buf", ID: id}, 2))
			require.NoError(t, buf.AddRef(slotted.Ref{Type: "buf", ID: id}, 3))
		}
		err = buf.Flush(context.Background())
		require.ErrorIs(t, err, slotted.ErrOverflow)
		assert.Contains(t, err.Error(), "+5 to buf/m from 2 Add calls refused")
		for _, id := range ids {
			if id == "m" {
				assertSlot(t, db, "buf", id, i64(nearMax))
			} else {
				assertSlot(t, db, "buf", id, i64(5))
			}
		}
		st := buf.Stats()
		assert.EqualValues(t, 2, st.Overflowed)
		assert.EqualValues(t, 22, st.Written)
		assert.Zero(t, st.Pending, "nothing kept to fail again")
		assert.Zero(t, st.PendingWrites)
		assert.EqualValues(t, 1, st.Flushes)
		assert.Zero(t, st.FlushErrors)
		require.ErrorIs(t, st.LastError, slotted.ErrOverflow)

		// Alone in a flush, and through Close: the same refusal, the rest written.
		require.NoError(t, buf.AddRef(slotted.Ref{Type: "buf", ID: "m"}, 2))
		require.NoError(t, buf.AddRef(slotted.Ref{Type: "buf", ID: "a"}, 1))
		require.ErrorIs(t, buf.Close(context.Background()), slotted.ErrOverflow)
		assertSlot(t, db, "buf", "a", i64(6))
		assertSlot(t, db, "buf", "m", i64(nearMax))
		require.NoError(t, buf.Flush(context.Background()), "nothing left")
		assert.Empty(t, reported, "Flush and Close return the error; OnError is for background flushes")
	}, oneSlot)
}

// upsertUpdate is how every upsert of the plugin ends on db's dialect: delta
// added to the slot, checked for overflow on SQLite (see addExpr).
func upsertUpdate(db *gorm.DB, delta string) string {
	switch dialect(db) {
	case dbMySQL:
		return "ON DUPLICATE KEY UPDATE `count`=`slotted_counters`.`count` + " + delta
	case dbPostgres:
		return `ON CONFLICT ("record_type","record_id","slot") DO UPDATE SET "count"="slotted_counters"."count" + ` + delta
	}
	return "ON CONFLICT (`record_type`,`record_id`,`slot`) DO UPDATE SET `count`=CASE WHEN typeof(`slotted_counters`.`count` + " + delta +
		") = 'integer' THEN `slotted_counters`.`count` + " + delta + " ELSE abs(-9223372036854775807 - 1) END"
}

// inserted is a multi-row upsert's delta: the row it tried to insert.
var inserted = map[string]string{dbMySQL: "VALUES(`count`)", dbPostgres: `"excluded"."count"`, dbSQLite: "`excluded`.`count`"}
