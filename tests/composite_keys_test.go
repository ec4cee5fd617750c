package tests

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// Membership has a composite primary key of an integer and a string.
type Membership struct {
	OrgID      uint   `gorm:"primaryKey;autoIncrement:false"`
	Handle     string `gorm:"primaryKey;size:64"`
	Logins     int64  `gorm:"-" slotted:"logins"`
	Score      int64  `gorm:"-" slotted:"score;cache:score_cache"`
	ScoreCache int64
}

// Edge has a key of two strings, so that a separator inside one part could
// be read as the boundary between parts.
type Edge struct {
	Src  string `gorm:"primaryKey;size:64"`
	Dst  string `gorm:"primaryKey;size:64"`
	Hits int64  `gorm:"-" slotted:"hits"`
}

// compositeDB is testEachDB's database with the composite-key tables fresh.
func compositeDB(t *testing.T, db *gorm.DB) {
	t.Helper()
	require.NoError(t, db.Migrator().DropTable(&Membership{}, &Edge{}))
	require.NoError(t, db.AutoMigrate(&Membership{}, &Edge{}))
	t.Cleanup(func() { _ = db.Migrator().DropTable(&Membership{}, &Edge{}) })
}

// Handles holding the encoding's separator and escape character, and the escapes themselves.
var trickyHandles = []string{"a,b", "a", "b", "50%", "%2C", "a%2Cb", ",", "%", "x,%25", "żółw"}

// crossedEdges would collide under a plain join of their parts.
var crossedEdges = []Edge{{Src: "a,b", Dst: "c"}, {Src: "a", Dst: "b,c"}, {Src: "a%2Cb", Dst: "c"}, {Src: "a", Dst: "b%2Cc"}}

func recordIDs(t *testing.T, db *gorm.DB, recordType string) []string {
	t.Helper()
	var ids []string
	require.NoError(t, slotted.Table(db).Distinct("record_id").Where("record_type = ?", recordType).Pluck("record_id", &ids).Error)
	slices.Sort(ids) // byte order, not the database's collation
	return ids
}

func TestCompositeKeyCountsLoadAndFill(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		compositeDB(t, db)
		ms := make([]Membership, 0, len(trickyHandles)+1)
		for _, h := range trickyHandles {
			ms = append(ms, Membership{OrgID: 1, Handle: h})
		}
		ms = append(ms, Membership{OrgID: 2, Handle: "a,b"})
		require.NoError(t, db.Create(&ms).Error)
		want := map[[2]any]int64{}
		for i := range ms {
			require.NoError(t, slotted.Add(db, &ms[i], "logins", int64(i+1)))
			assert.EqualValues(t, i+1, ms[i].Logins, "the field moves with the write")
			want[[2]any{ms[i].OrgID, ms[i].Handle}] = int64(i + 1)
		}
		assert.Len(t, recordIDs(t, db, "memberships.logins"), len(ms), "one record_id per key")

		ref, err := slotted.RefOf(db, &ms[0], "logins")
		require.NoError(t, err)
		assert.Equal(t, slotted.Ref{Type: "memberships.logins", ID: "1,a%2Cb", Slots: slotted.DefaultSlots}, ref)
		byKey, err := slotted.RefOfKey(db, &Membership{}, "logins", 1, "a,b") // an int for the uint column
		require.NoError(t, err)
		assert.Equal(t, ref, byKey)
		ref, err = slotted.RefOf(db, &ms[3], "logins")
		require.NoError(t, err)
		assert.Equal(t, "1,50%25", ref.ID)
		parts, err := slotted.SplitKeyID("1,x%2C%2525")
		require.NoError(t, err)
		assert.Equal(t, []string{"1", "x,%25"}, parts)

		// A hand-built Ref names the model's counter.
		require.NoError(t, slotted.AddRef(db, byKey, 10))
		want[[2]any{uint(1), "a,b"}] += 10
		n, err := slotted.Count(db, &Membership{OrgID: 1, Handle: "a,b"}, "logins")
		require.NoError(t, err)
		assert.EqualValues(t, 11, n)

		// Load by key values.
		loaded := make([]Membership, len(ms))
		for i := range ms {
			loaded[i] = Membership{OrgID: ms[i].OrgID, Handle: ms[i].Handle}
		}
		require.NoError(t, slotted.Load(db, &loaded))
		for _, m := range loaded {
			assert.Equal(t, want[[2]any{m.OrgID, m.Handle}], m.Logins, "Load %d/%q", m.OrgID, m.Handle)
		}
		// Auto-fill on Find.
		var found []Membership
		require.NoError(t, db.Order("org_id, handle").Find(&found).Error)
		require.Len(t, found, len(ms))
		for _, m := range found {
			assert.Equal(t, want[[2]any{m.OrgID, m.Handle}], m.Logins, "auto-fill %d/%q", m.OrgID, m.Handle)
		}

		// Parts that a plain join would merge are separate counters.
		edges := append([]Edge(nil), crossedEdges...)
		require.NoError(t, db.Create(&edges).Error)
		for i := range edges {
			require.NoError(t, slotted.Add(db, &edges[i], "hits", int64(i+1)))
		}
		var got []Edge
		require.NoError(t, db.Find(&got).Error)
		require.Len(t, got, len(edges))
		for _, e := range got {
			for i := range edges {
				if edges[i].Src == e.Src && edges[i].Dst == e.Dst {
					assert.EqualValues(t, i+1, e.Hits, "edge %q -> %q", e.Src, e.Dst)
				}
			}
		}
		assert.Len(t, recordIDs(t, db, "edges.hits"), len(edges))
	})
}

func TestCompositeKeyCompact(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		compositeDB(t, db)
		edges := append([]Edge(nil), crossedEdges[:2]...)
		require.NoError(t, db.Create(&edges).Error)
		for range 40 {
			require.NoError(t, slotted.Increment(db, &edges[0], "hits"))
			require.NoError(t, slotted.Increment(db, &edges[1], "hits"))
		}
		rows := func(e Edge) int64 {
			ref, err := slotted.RefOf(db, &e, "hits")
			require.NoError(t, err)
			var n int64
			require.NoError(t, slotted.Table(db).Where("record_type = ? AND record_id = ?", ref.Type, ref.ID).Count(&n).Error)
			return n
		}
		before := rows(edges[1])
		require.Greater(t, rows(edges[0]), int64(1), "40 increments over 100 slots")
		require.NoError(t, slotted.Compact(db, &edges[0], "hits"))
		assert.EqualValues(t, 1, rows(edges[0]))
		assert.Equal(t, before, rows(edges[1]), "the other key's rows stay")
		for _, e := range edges {
			n, err := slotted.Count(db, &e, "hits")
			require.NoError(t, err)
			assert.EqualValues(t, 40, n)
		}
	})
}

func TestCompositeKeyDeleteCleanup(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		compositeDB(t, db)
		edges := append(append([]Edge(nil), crossedEdges...), Edge{Src: "a", Dst: "b"}, Edge{Src: "z", Dst: "z"})
		require.NoError(t, db.Create(&edges).Error)
		for i := range edges {
			require.NoError(t, slotted.Add(db, &edges[i], "hits", int64(i+1)))
		}
		count := func(e Edge) int64 {
			n, err := slotted.Count(db, &e, "hits")
			require.NoError(t, err)
			return n
		}

		// A rolled-back delete keeps the counters.
		require.Error(t, db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, tx.Delete(&edges[0]).Error)
			return gorm.ErrInvalidTransaction
		}))
		assert.EqualValues(t, 1, count(edges[0]))

		// By the record's key: ("a,b", "c") goes, ("a", "b,c") stays.
		require.NoError(t, db.Delete(&edges[0]).Error)
		assert.EqualValues(t, 0, count(edges[0]))
		assert.Len(t, recordIDs(t, db, "edges.hits"), len(edges)-1)
		for i := 1; i < len(edges); i++ {
			assert.EqualValues(t, i+1, count(edges[i]), "edge %d", i)
		}

		// By conditions: the keys are selected first.
		require.NoError(t, db.Where("src = ?", "a").Delete(&Edge{}).Error)
		ids := recordIDs(t, db, "edges.hits")
		assert.Equal(t, []string{"a%252Cb,c", "z,z"}, ids)

		// A slice of records.
		require.NoError(t, db.Delete(&[]Edge{edges[2], edges[5]}).Error)
		assert.Empty(t, recordIDs(t, db, "edges.hits"))
	})
}

func TestCompositeKeySweep(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		compositeDB(t, db)
		ms := []Membership{{OrgID: 1, Handle: "a,b"}, {OrgID: 1, Handle: "a"}, {OrgID: 2, Handle: "50%"}, {OrgID: 10, Handle: "x"}}
		require.NoError(t, db.Create(&ms).Error)
		for i := range ms {
			require.NoError(t, slotted.Add(db, &ms[i], "logins", int64(i+1)))
		}
		// Removed behind the plugin's back.
		require.NoError(t, db.Exec("DELETE FROM memberships WHERE org_id = ? AND handle = ?", 1, "a,b").Error)
		// Ids no Membership can have: one part, three parts, a non-integer org, an unknown escape.
		for _, id := range []string{"1", "1,a,b", "x,a", "1,%zz"} {
			require.NoError(t, slotted.AddRef(db, slotted.Ref{Type: "memberships.logins", ID: id}, 1))
		}
		prog, err := slotted.Sweep(db, &Membership{}, slotted.SweepOptions{BatchSize: 2})
		require.NoError(t, err)
		assert.Equal(t, 8, prog.Checked)
		assert.Equal(t, 5, prog.Orphans)
		assert.Equal(t, []string{"1,a", "10,x", "2,50%25"}, recordIDs(t, db, "memberships.logins"))
		for i := 1; i < len(ms); i++ {
			n, err := slotted.Count(db, &ms[i], "logins")
			require.NoError(t, err)
			assert.EqualValues(t, i+1, n)
		}

		edges := append([]Edge(nil), crossedEdges...)
		require.NoError(t, db.Create(&edges).Error)
		for i := range edges {
			require.NoError(t, slotted.Increment(db, &edges[i], "hits"))
		}
		require.NoError(t, db.Exec("DELETE FROM edges WHERE src = ? AND dst = ?", "a", "b,c").Error)
		prog, err = slotted.Sweep(db, &Edge{})
		require.NoError(t, err)
		assert.Equal(t, slotted.SweepProgress{Checked: 4, Orphans: 1, Rows: 1}, prog)
		assert.Equal(t, []string{"a%252Cb,c", "a%2Cb,c", "a,b%252Cc"}, recordIDs(t, db, "edges.hits"))
	})
}

func TestCompositeKeyTopAndOrderBy(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		compositeDB(t, db)
		ms := []Membership{{OrgID: 1, Handle: "a,b"}, {OrgID: 1, Handle: "50%"}, {OrgID: 2, Handle: "%2C"}, {OrgID: 2, Handle: "quiet"}}
		require.NoError(t, db.Create(&ms).Error)
		logins := []int64{3, 1, 2, 0}
		for i := range ms {
			if logins[i] > 0 {
				require.NoError(t, slotted.Add(db, &ms[i], "logins", logins[i]))
			}
			require.NoError(t, slotted.Add(db, &ms[i], "score", 10-logins[i]))
		}
		handles := func(ms []Membership) []string {
			out := make([]string, len(ms))
			for i, m := range ms {
				out[i] = m.Handle
			}
			return out
		}

		top, err := slotted.Top(db, &Membership{}, "logins", 2)
		require.NoError(t, err)
		assert.Equal(t, []string{"a,b", "%2C"}, handles(top))
		assert.Equal(t, []int64{3, 2}, []int64{top[0].Logins, top[1].Logins})

		var asc []Membership
		require.NoError(t, db.Scopes(slotted.OrderBy(&Membership{}, "logins", "ASC")).Order("org_id").Find(&asc).Error)
		assert.Equal(t, []string{"quiet", "50%", "%2C", "a,b"}, handles(asc), "every escaped key joins its counter")
		var busy []Membership
		require.NoError(t, db.Scopes(slotted.WhereCounter(&Membership{}, "logins", ">=", 2)).Order("org_id").Find(&busy).Error)
		assert.Equal(t, []string{"a,b", "%2C"}, handles(busy))

		// Two string parts: the join must escape each part before joining them.
		edges := append([]Edge(nil), crossedEdges...)
		require.NoError(t, db.Create(&edges).Error)
		for i := range edges {
			require.NoError(t, slotted.Add(db, &edges[i], "hits", int64(10*(i+1))))
		}
		var byHits []Edge
		require.NoError(t, db.Scopes(slotted.OrderBy(&Edge{}, "hits", "DESC")).Find(&byHits).Error)
		require.Len(t, byHits, len(edges))
		for i, e := range byHits {
			want := edges[len(edges)-1-i]
			assert.Equal(t, [2]string{want.Src, want.Dst}, [2]string{e.Src, e.Dst})
			assert.EqualValues(t, 10*(len(edges)-i), e.Hits)
		}
		topEdges, err := slotted.Top(db, &Edge{}, "hits", 1)
		require.NoError(t, err)
		require.Len(t, topEdges, 1)
		assert.Equal(t, edges[3].Dst, topEdges[0].Dst)
		refs, err := slotted.TopRefs(db, &Edge{}, "hits", 1)
		require.NoError(t, err)
		parts, err := slotted.SplitKeyID(refs[0].Ref.ID)
		require.NoError(t, err)
		assert.Equal(t, []string{edges[3].Src, edges[3].Dst}, parts)

		// The cache column: RollUp, RollUpAll (keyset pages over the key) and Top by it.
		require.NoError(t, slotted.RollUp(db, &ms))
		var cached []Membership
		require.NoError(t, db.Order("org_id, handle").Find(&cached).Error)
		for _, m := range cached {
			assert.Equal(t, m.Score, m.ScoreCache, "RollUp %q", m.Handle)
		}
		require.NoError(t, db.Model(&Membership{}).Where("1 = 1").Update("score_cache", 0).Error)
		prog, err := slotted.RollUpAll(db, &Membership{}, slotted.RollUpOptions{BatchSize: 3})
		require.NoError(t, err)
		assert.Equal(t, 4, prog.Records)
		topScore, err := slotted.Top(db, &Membership{}, "score", 1)
		require.NoError(t, err)
		assert.Equal(t, "quiet", topScore[0].Handle)
		scoreRefs, err := slotted.TopRefs(db, &Membership{}, "score", 2)
		require.NoError(t, err)
		assert.Equal(t, "2,quiet", scoreRefs[0].Ref.ID)
		assert.EqualValues(t, 10, scoreRefs[0].Total)
		assert.Equal(t, "1,50%25", scoreRefs[1].Ref.ID)
	})
}

func TestCompositeKeyOnceAndMustExist(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		compositeDB(t, db)
		if db.Migrator().HasTable(slotted.DefaultOnceTable) { // a previous run's keys of the same ids
			require.NoError(t, db.Exec("DELETE FROM "+slotted.DefaultOnceTable+" WHERE record_type = ?", "memberships.logins").Error)
		}
		ms := []Membership{{OrgID: 1, Handle: "a,b"}, {OrgID: 1, Handle: "a"}}
		require.NoError(t, db.Create(&ms).Error)
		applied, err := slotted.AddOnce(db, &ms[0], "logins", 1, "user:7")
		require.NoError(t, err)
		assert.True(t, applied)
		var mine []Membership
		require.NoError(t, db.Scopes(slotted.WhereApplied(&Membership{}, "logins", "user:7")).Find(&mine).Error)
		require.Len(t, mine, 1)
		assert.Equal(t, "a,b", mine[0].Handle)

		require.NoError(t, slotted.Increment(slotted.MustExist(db), &ms[1], "logins"))
		err = slotted.Increment(slotted.MustExist(db), &Membership{OrgID: 1, Handle: "b"}, "logins")
		assert.ErrorIs(t, err, slotted.ErrRecordNotFound)
		assert.Equal(t, []string{"1,a", "1,a%2Cb"}, recordIDs(t, db, "memberships.logins"))
	})
}

func TestCompositeKeyBadInput(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		compositeDB(t, db)
		for _, c := range []struct {
			parts []any
			want  error
		}{
			{[]any{1}, slotted.ErrUnsupportedKey},
			{[]any{1, "a", "b"}, slotted.ErrUnsupportedKey},
			{[]any{}, slotted.ErrUnsupportedKey},
			{[]any{nil, "a"}, slotted.ErrMissingPrimaryKey},
			{[]any{1, (*string)(nil)}, slotted.ErrMissingPrimaryKey},
			{[]any{0, "a"}, slotted.ErrMissingPrimaryKey},
			{[]any{1, ""}, slotted.ErrMissingPrimaryKey},
			{[]any{"1", "a"}, slotted.ErrUnsupportedKey},
			{[]any{-1, "a"}, slotted.ErrUnsupportedKey},
			{[]any{1.0, "a"}, slotted.ErrUnsupportedKey},
			{[]any{1, strings.Repeat(",", 50)}, slotted.ErrUnsupportedKey}, // 150 bytes escaped
		} {
			_, err := slotted.RefOfKey(db, &Membership{}, "logins", c.parts...)
			assert.ErrorIs(t, err, c.want, "RefOfKey%v", c.parts)
		}
		_, err := slotted.RefOfKey(db, &Membership{}, "nope", 1, "a")
		assert.ErrorIs(t, err, slotted.ErrUnknownCounter)

		for _, c := range []struct {
			m    Membership
			want error
		}{
			{Membership{Handle: "a"}, slotted.ErrMissingPrimaryKey},
			{Membership{OrgID: 1}, slotted.ErrMissingPrimaryKey},
			{Membership{OrgID: 1, Handle: strings.Repeat("%", 50)}, slotted.ErrUnsupportedKey}, // 150 bytes escaped
		} {
			err := slotted.Increment(db, &c.m, "logins")
			assert.ErrorIs(t, err, c.want, "%+v", c.m)
			assert.Zero(t, c.m.Logins)
		}
		assert.Zero(t, counterRows(t, db), "nothing was written")
	})
}
