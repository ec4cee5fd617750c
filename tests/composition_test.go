package tests

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/plugin/dbresolver"

	"github.com/slotted-go/slotted"
)

// The newer calls composed with the older features (DryRun, TablePrefix,
// dbresolver routing, bucketed counters, bad input).

// TestDryRunNewCallsReportNothingDone is TestDryRunReportsNothingDone for the
// once-table lookups, windows, dashboards, listings and MustExist: each
// returns ErrDryRun instead of an empty answer that looks real (no likes, no
// records, a missing record).
func TestDryRunNewCallsReportNothingDone(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		stories := migrateStories(t, db)
		migrateListed(t, db)
		s := Story{ID: stories[0].ID}
		_, err := slotted.AddOnce(db, &s, "likes", 1, "user:dry")
		require.NoError(t, err)
		require.NoError(t, slotted.Add(db, &s, "views", 2))
		listed := Listed{Grp: 1}
		require.NoError(t, db.Create(&listed).Error)
		require.NoError(t, slotted.Add(db, &listed, "views", 3))
		before := counterRows(t, db)

		dry := db.Session(&gorm.Session{DryRun: true})
		liked, err := slotted.Applied(dry, &s, "likes", "user:dry")
		assert.ErrorIs(t, err, slotted.ErrDryRun, "Applied")
		assert.False(t, liked)
		many, err := slotted.AppliedMany(dry, &[]Story{s}, "likes", "user:dry")
		assert.ErrorIs(t, err, slotted.ErrDryRun, "AppliedMany")
		assert.Nil(t, many)
		ss := []Story{{ID: s.ID}}
		assert.ErrorIs(t, slotted.LoadApplied(dry, &ss, "user:dry"), slotted.ErrDryRun, "LoadApplied")
		assert.False(t, ss[0].Liked)
		keys, err := slotted.OnceKeys(dry, &s, "likes", "", 10)
		assert.ErrorIs(t, err, slotted.ErrDryRun, "OnceKeys")
		assert.Nil(t, keys)
		n, err := slotted.CountIn(dry, &s, "views", slotted.LastDays(7))
		assert.ErrorIs(t, err, slotted.ErrDryRun, "CountIn")
		assert.Zero(t, n)
		series, err := slotted.SeriesIn(dry, &s, "views", slotted.LastDays(7))
		assert.ErrorIs(t, err, slotted.ErrDryRun, "SeriesIn")
		assert.Nil(t, series)
		assert.ErrorIs(t, slotted.LoadIn(dry, &ss, slotted.LastDays(7), "views"), slotted.ErrDryRun, "LoadIn")
		sm, err := slotted.SeriesMany(dry, &ss, "views", slotted.LastDays(7))
		assert.ErrorIs(t, err, slotted.ErrDryRun, "SeriesMany")
		assert.Nil(t, sm)
		assert.ErrorIs(t, slotted.LoadWindows(dry, &ss), slotted.ErrDryRun, "LoadWindows")
		assert.Zero(t, ss[0].ViewsWeek)
		for _, read := range []slotted.Read{slotted.ReadExact, slotted.ReadFast} {
			page, err := slotted.List(dry, &Listed{}, "likes", slotted.ListOptions{Limit: 5, Read: read})
			assert.ErrorIs(t, err, slotted.ErrDryRun, "List %s", read)
			assert.Nil(t, page)
		}
		page, err := slotted.Trending(dry, &Listed{}, "views", slotted.TrendOptions{Limit: 5, Buckets: 3, HalfLife: 1})
		assert.ErrorIs(t, err, slotted.ErrDryRun, "Trending")
		assert.Nil(t, page)
		p := Story{ID: s.ID, Likes: 4}
		assert.ErrorIs(t, slotted.Increment(slotted.MustExist(dry), &p, "likes"), slotted.ErrDryRun, "MustExist Increment")
		_, err = slotted.AddOnce(slotted.MustExist(dry), &p, "likes", 1, "user:dry2")
		assert.ErrorIs(t, err, slotted.ErrDryRun, "MustExist AddOnce")
		assert.EqualValues(t, 4, p.Likes)

		assert.Equal(t, before, counterRows(t, db), "nothing was written")
		liked, err = slotted.Applied(db, &s, "likes", "user:dry2")
		require.NoError(t, err)
		assert.False(t, liked, "the dry AddOnce stored no key")
	})
}

// TestTablePrefixNewReads: with NamingStrategy{TablePrefix: "app_"} the
// once-table lookups, windows, dashboards, listings, Trending and MustExist
// read app_slotted_counters, app_slotted_once and app_<model>.
func TestTablePrefixNewReads(t *testing.T) {
	for _, name := range dbNames(t) {
		t.Run(name, func(t *testing.T) {
			dropNamingTables(t, name) // unprefixed counter tables would be kept (naming.go)
			db := prefixedDB(t, name)
			require.NoError(t, db.Migrator().DropTable("app_stories", "app_listeds"))
			p := slotted.New(slotted.Config{})
			require.NoError(t, db.Use(p))
			require.Equal(t, "app_slotted_counters", p.Config().Table)
			require.NoError(t, db.AutoMigrate(&Story{}, &Listed{}))
			stories := []Story{{Title: "a"}, {Title: "b"}}
			require.NoError(t, db.Create(&stories).Error)
			listed := []Listed{{Grp: 1}, {Grp: 1}, {Grp: 2}}
			require.NoError(t, db.Create(&listed).Error)

			_, err := slotted.AddOnce(db, &stories[1], "likes", 1, "user:1")
			require.NoError(t, err)
			require.NoError(t, slotted.Add(db, &stories[1], "views", 5))
			for i, l := range listed {
				require.NoError(t, slotted.Add(db, &l, "likes", int64(10*(i+1))))
				require.NoError(t, slotted.Add(db, &l, "views", int64(i+1)))
			}

			liked, err := slotted.Applied(db, &stories[1], "likes", "user:1")
			require.NoError(t, err)
			assert.True(t, liked, "Applied")
			many, err := slotted.AppliedMany(db, &stories, "likes", "user:1")
			require.NoError(t, err)
			assert.Equal(t, []bool{false, true}, many, "AppliedMany")
			keys, err := slotted.OnceKeys(db, &stories[1], "likes", "", 10)
			require.NoError(t, err)
			assert.Equal(t, []string{"user:1"}, keys, "OnceKeys")
			var found []Story
			require.NoError(t, slotted.WithOnceKey(db, "user:1").Order("id").Find(&found).Error)
			require.Len(t, found, 2)
			assert.True(t, found[1].Liked, "WithOnceKey auto-fill")
			assert.EqualValues(t, 5, found[1].ViewsWeek, "window: auto-fill")
			n, err := slotted.CountIn(db, &stories[1], "views", slotted.LastDays(7))
			require.NoError(t, err)
			assert.EqualValues(t, 5, n, "CountIn")
			series, err := slotted.SeriesMany(db, &stories, "views", slotted.LastDays(7))
			require.NoError(t, err)
			assert.EqualValues(t, 5, series[1][6].Count, "SeriesMany")
			ss := []Story{{ID: stories[1].ID}}
			require.NoError(t, slotted.LoadWindows(db, &ss))
			assert.EqualValues(t, 5, ss[0].ViewsWeek, "LoadWindows")

			page, err := slotted.List(db, &Listed{}, "likes", slotted.ListOptions{Limit: 2, Read: slotted.ReadExact})
			require.NoError(t, err)
			assert.Equal(t, []int64{30, 20}, page.Totals, "List")
			page, err = slotted.List(db.Where("grp = ?", 1), &Listed{}, "views", slotted.ListOptions{Limit: 5, From: time.Now().Add(-48 * time.Hour), To: time.Now().Add(time.Hour)})
			require.NoError(t, err)
			assert.Equal(t, []int64{2, 1}, page.Totals, "List in a window")
			tpage, err := slotted.Trending(db, &Listed{}, "views", slotted.TrendOptions{Limit: 5, Buckets: 2, HalfLife: 1})
			require.NoError(t, err)
			require.Len(t, tpage.Items, 3, "Trending")
			assert.Equal(t, listed[2].ID, tpage.Items[0].ID)

			require.NoError(t, slotted.Increment(slotted.MustExist(db), &Story{ID: stories[0].ID}, "likes"))
			assert.ErrorIs(t, slotted.Increment(slotted.MustExist(db), &Story{ID: stories[1].ID + 100}, "likes"), slotted.ErrRecordNotFound)
		})
	}
}

// TestRoutingNewCalls: under dbresolver the new plain reads go where the
// caller's routing sends reads (a replica, or a Use'd resolver's replica),
// and MustExist's existence check, which decides a write, reads the primary
// (the Use'd resolver's source) with the write.
func TestRoutingNewCalls(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		name := dialect(db)
		stories := migrateStories(t, db)
		migrateListed(t, db)
		replica, replicaLog := spied(t, name, "replica", sameDatabase)
		namedSource, namedLog := spied(t, name, "named source", sameDatabase)
		namedReplica, namedReplicaLog := spied(t, name, "named replica", sameDatabase)
		app, primaryLog := resolved(t, db, dbresolver.Config{Replicas: []gorm.Dialector{replica}}, func(r *dbresolver.DBResolver) {
			r.Register(dbresolver.Config{Sources: []gorm.Dialector{namedSource}, Replicas: []gorm.Dialector{namedReplica}}, "named")
		})
		logs := []*spyLog{primaryLog, replicaLog, namedLog, namedReplicaLog}
		s := Story{ID: stories[0].ID}
		_, err := slotted.AddOnce(app, &s, "likes", 1, "user:1")
		require.NoError(t, err)
		require.NoError(t, slotted.Add(app, &s, "views", 2))
		l := Listed{Grp: 1}
		require.NoError(t, app.Create(&l).Error)
		require.NoError(t, slotted.Add(app, &l, "views", 3))

		ranOn := func(what string, ran func() error, want *spyLog) {
			t.Helper()
			for _, l := range logs {
				l.reset()
			}
			require.NoError(t, ran(), what)
			for _, l := range logs {
				if l == want {
					assert.Positive(t, l.count(""), "%s ran on the %s", what, l.name)
				} else {
					assert.Zero(t, l.count(""), "%s ran nothing on the %s: %v", what, l.name, l.statements())
				}
			}
		}
		named := func(db *gorm.DB) *gorm.DB { return db.Clauses(dbresolver.Use("named")) }
		for _, tc := range []struct {
			label         string
			db            *gorm.DB
			reads, writes *spyLog
		}{{"", app, replicaLog, primaryLog}, {" with Use", named(app), namedReplicaLog, namedLog}} {
			db := tc.db
			ranOn("Applied"+tc.label, func() error { _, err := slotted.Applied(db, &s, "likes", "user:1"); return err }, tc.reads)
			ranOn("AppliedMany"+tc.label, func() error { _, err := slotted.AppliedMany(db, &stories, "likes", "user:1"); return err }, tc.reads)
			ranOn("OnceKeys"+tc.label, func() error { _, err := slotted.OnceKeys(db, &s, "likes", "", 5); return err }, tc.reads)
			ranOn("CountIn"+tc.label, func() error { _, err := slotted.CountIn(db, &s, "views", slotted.LastDays(7)); return err }, tc.reads)
			ranOn("SeriesMany"+tc.label, func() error {
				_, err := slotted.SeriesMany(db, &stories, "views", slotted.LastDays(7))
				return err
			}, tc.reads)
			ranOn("LoadWindows"+tc.label, func() error { return slotted.LoadWindows(db, &stories) }, tc.reads)
			ranOn("List"+tc.label, func() error {
				_, err := slotted.List(db, &Listed{}, "views", slotted.ListOptions{Limit: 5})
				return err
			}, tc.reads)
			ranOn("Trending"+tc.label, func() error {
				_, err := slotted.Trending(db, &Listed{}, "views", slotted.TrendOptions{Limit: 5, Buckets: 2, HalfLife: 1})
				return err
			}, tc.reads)
			ranOn("MustExist Increment"+tc.label, func() error { return slotted.Increment(slotted.MustExist(db), &Story{ID: s.ID}, "likes") }, tc.writes)
			ranOn("MustExist AddOnce"+tc.label, func() error {
				_, err := slotted.AddOnce(slotted.MustExist(db), &Story{ID: s.ID}, "likes", 1, "user:2"+tc.label)
				return err
			}, tc.writes)
			ranOn("MustExist AddMany"+tc.label, func() error {
				return slotted.AddMany(slotted.MustExist(db), []*Story{{ID: s.ID}, {ID: stories[1].ID}}, "likes", 1)
			}, tc.writes)
			ranOn("Applied with Write"+tc.label, func() error {
				_, err := slotted.Applied(db.Clauses(dbresolver.Write), &s, "likes", "user:1")
				return err
			}, tc.writes)
		}
	})
}

// Viewed has a bucketed counter with once keys (one view per user and day
// bucket) and an applied field for it.
type Viewed struct {
	ID     uint
	Title  string
	Views  int64 `gorm:"-" slotted:"views;buckets:day;slots:2"`
	Seen   bool  `gorm:"-" slotted:"views;applied"`
	Week   int64 `gorm:"-" slotted:"views;window:7d"`
	Shares int64 `gorm:"-" slotted:"shares"`
}

// TestBucketedCountersInNewReads: AddOnce on a bucketed counter is seen by
// Applied, AppliedMany, OnceKeys and WithOnceKey; List sorts a bucketed
// counter by its all-time total and by a window; RemoveOnce undoes both.
func TestBucketedCountersInNewReads(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.Migrator().DropTable(&Viewed{}))
		require.NoError(t, db.AutoMigrate(&Viewed{}))
		require.NoError(t, db.Exec("DELETE FROM "+slotted.DefaultOnceTable).Error)
		vs := []Viewed{{Title: "a"}, {Title: "b"}, {Title: "c"}}
		require.NoError(t, db.Create(&vs).Error)
		for i := range vs {
			for u := range i + 1 {
				applied, err := slotted.AddOnce(db, &Viewed{ID: vs[i].ID}, "views", 1, userKey(u))
				require.NoError(t, err)
				require.True(t, applied)
			}
		}
		applied, err := slotted.AddOnce(db, &Viewed{ID: vs[0].ID}, "views", 1, userKey(0))
		require.NoError(t, err)
		assert.False(t, applied, "once per key")

		seen, err := slotted.Applied(db, &vs[1], "views", userKey(1))
		require.NoError(t, err)
		assert.True(t, seen, "Applied")
		many, err := slotted.AppliedMany(db, &vs, "views", userKey(1))
		require.NoError(t, err)
		assert.Equal(t, []bool{false, true, true}, many, "AppliedMany")
		keys, err := slotted.OnceKeys(db, &vs[2], "views", "", 10)
		require.NoError(t, err)
		assert.Equal(t, []string{userKey(0), userKey(1), userKey(2)}, keys, "OnceKeys")
		var found []Viewed
		require.NoError(t, slotted.WithOnceKey(db, userKey(2)).Order("id").Find(&found).Error)
		require.Len(t, found, 3)
		for i, want := range []int64{1, 2, 3} {
			assert.Equal(t, want, found[i].Views, "total of %d", i)
			assert.Equal(t, want, found[i].Week, "week of %d", i)
			assert.Equal(t, i == 2, found[i].Seen, "seen by user 2: %d", i)
		}

		ids := func(p *slotted.Page[Viewed]) []uint {
			var out []uint
			for _, v := range p.Items {
				out = append(out, v.ID)
			}
			return out
		}
		page, err := slotted.List(db, &Viewed{}, "views", slotted.ListOptions{Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, []uint{vs[2].ID, vs[1].ID, vs[0].ID}, ids(page), "List, all time")
		assert.Equal(t, []int64{3, 2, 1}, page.Totals)
		page, err = slotted.List(db, &Viewed{}, "views", slotted.ListOptions{Limit: 10, Ascending: true, From: time.Now().Add(-24 * time.Hour), To: time.Now().Add(time.Hour)})
		require.NoError(t, err)
		assert.Equal(t, []uint{vs[0].ID, vs[1].ID, vs[2].ID}, ids(page), "List in a window")
		assert.Equal(t, []int64{1, 2, 3}, page.Totals)

		removed, err := slotted.RemoveOnce(db, &Viewed{ID: vs[2].ID}, "views", userKey(2))
		require.NoError(t, err)
		assert.True(t, removed)
		seen, err = slotted.Applied(db, &vs[2], "views", userKey(2))
		require.NoError(t, err)
		assert.False(t, seen, "removed")
		n, err := slotted.CountIn(db, &vs[2], "views", slotted.Today())
		require.NoError(t, err)
		assert.EqualValues(t, 2, n, "the removal left today's bucket")
		n, err = slotted.Count(db, &vs[2], "views")
		require.NoError(t, err)
		assert.EqualValues(t, 2, n, "and the total")
	})
}

// TestBadInputToNewCalls: bad arguments to the new calls are typed errors,
// with no statement sent and no panic.
func TestBadInputToNewCalls(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		stories := migrateStories(t, db)
		migrateListed(t, db)
		s := &Story{ID: stories[0].ID}
		var nilStory *Story
		var nilStories *[]Story
		var nilListed *Listed
		type noCounters struct{ ID uint }
		cases := []struct {
			what string
			want error
			call func(db *gorm.DB) error
		}{
			{"Applied nil", slotted.ErrUnsupportedModel, func(db *gorm.DB) error { _, err := slotted.Applied(db, nil, "likes", "k"); return err }},
			{"Applied nil *Story", slotted.ErrUnsupportedModel, func(db *gorm.DB) error { _, err := slotted.Applied(db, nilStory, "likes", "k"); return err }},
			{"Applied no key", slotted.ErrMissingPrimaryKey, func(db *gorm.DB) error { _, err := slotted.Applied(db, &Story{}, "likes", "k"); return err }},
			{"Applied unknown counter", slotted.ErrUnknownCounter, func(db *gorm.DB) error { _, err := slotted.Applied(db, s, "nope", "k"); return err }},
			{"Applied empty key", slotted.ErrUnsupportedKey, func(db *gorm.DB) error { _, err := slotted.Applied(db, s, "likes", ""); return err }},
			{"Applied int", slotted.ErrUnsupportedModel, func(db *gorm.DB) error { _, err := slotted.Applied(db, 7, "likes", "k"); return err }},
			{"AppliedMany nil", slotted.ErrUnsupportedModel, func(db *gorm.DB) error { _, err := slotted.AppliedMany(db, nil, "likes", "k"); return err }},
			{"AppliedMany nil *[]Story", slotted.ErrUnsupportedModel, func(db *gorm.DB) error { _, err := slotted.AppliedMany(db, nilStories, "likes", "k"); return err }},
			{"AppliedMany nil element", slotted.ErrUnsupportedModel, func(db *gorm.DB) error {
				_, err := slotted.AppliedMany(db, []*Story{s, nil}, "likes", "k")
				return err
			}},
			{"AppliedMany no key", slotted.ErrMissingPrimaryKey, func(db *gorm.DB) error {
				_, err := slotted.AppliedMany(db, []Story{{ID: s.ID}, {}}, "likes", "k")
				return err
			}},
			{"AppliedMany unknown counter", slotted.ErrUnknownCounter, func(db *gorm.DB) error { _, err := slotted.AppliedMany(db, []Story{*s}, "nope", "k"); return err }},
			{"LoadApplied no applied field", slotted.ErrUnknownCounter, func(db *gorm.DB) error { return slotted.LoadApplied(db, &[]Post{{ID: 1}}, "k") }},
			{"LoadApplied nil", slotted.ErrUnsupportedModel, func(db *gorm.DB) error { return slotted.LoadApplied(db, nil, "k") }},
			{"OnceKeys limit 0", slotted.ErrInvalidArgument, func(db *gorm.DB) error { _, err := slotted.OnceKeys(db, s, "likes", "", 0); return err }},
			{"OnceKeys NUL after", slotted.ErrUnsupportedKey, func(db *gorm.DB) error { _, err := slotted.OnceKeys(db, s, "likes", "a\x00", 5); return err }},
			{"OnceKeys nil", slotted.ErrUnsupportedModel, func(db *gorm.DB) error { _, err := slotted.OnceKeys(db, nil, "likes", "", 5); return err }},
			{"CountIn not bucketed", slotted.ErrInvalidArgument, func(db *gorm.DB) error { _, err := slotted.CountIn(db, s, "likes", slotted.Today()); return err }},
			{"CountIn zero Window", slotted.ErrInvalidArgument, func(db *gorm.DB) error { _, err := slotted.CountIn(db, s, "views", slotted.Window{}); return err }},
			{"CountIn LastDays(0)", slotted.ErrInvalidArgument, func(db *gorm.DB) error { _, err := slotted.CountIn(db, s, "views", slotted.LastDays(0)); return err }},
			{"CountIn LastDays(-3)", slotted.ErrInvalidArgument, func(db *gorm.DB) error { _, err := slotted.CountIn(db, s, "views", slotted.LastDays(-3)); return err }},
			{"CountIn LastHours on days", slotted.ErrInvalidArgument, func(db *gorm.DB) error { _, err := slotted.CountIn(db, s, "views", slotted.LastHours(3)); return err }},
			{"CountIn nil", slotted.ErrUnsupportedModel, func(db *gorm.DB) error { _, err := slotted.CountIn(db, nil, "views", slotted.Today()); return err }},
			{"SeriesIn unknown", slotted.ErrUnknownCounter, func(db *gorm.DB) error { _, err := slotted.SeriesIn(db, s, "nope", slotted.Today()); return err }},
			{"LoadIn nil", slotted.ErrUnsupportedModel, func(db *gorm.DB) error { return slotted.LoadIn(db, nil, slotted.Today()) }},
			{"LoadIn not bucketed", slotted.ErrInvalidArgument, func(db *gorm.DB) error { return slotted.LoadIn(db, &[]Story{*s}, slotted.Today(), "likes") }},
			{"SeriesMany nil", slotted.ErrUnsupportedModel, func(db *gorm.DB) error {
				_, err := slotted.SeriesMany(db, nil, "views", slotted.Today())
				return err
			}},
			{"SeriesMany not bucketed", slotted.ErrInvalidArgument, func(db *gorm.DB) error {
				_, err := slotted.SeriesMany(db, []Story{*s}, "likes", slotted.Today())
				return err
			}},
			{"SeriesMany no key", slotted.ErrMissingPrimaryKey, func(db *gorm.DB) error {
				_, err := slotted.SeriesMany(db, []Story{{}}, "views", slotted.Today())
				return err
			}},
			{"LoadWindows nil", slotted.ErrUnsupportedModel, func(db *gorm.DB) error { return slotted.LoadWindows(db, nil) }},
			{"LoadWindows unknown field", slotted.ErrUnknownCounter, func(db *gorm.DB) error { return slotted.LoadWindows(db, &[]Story{*s}, "Nope") }},
			{"LoadWindows non-model", slotted.ErrUnsupportedModel, func(db *gorm.DB) error { return slotted.LoadWindows(db, &[]int{1}) }},
			{"List nil model", slotted.ErrUnsupportedModel, func(db *gorm.DB) error {
				_, err := slotted.List(db, nilListed, "likes", slotted.ListOptions{Limit: 5})
				return err
			}},
			{"List non-model", slotted.ErrUnsupportedModel, func(db *gorm.DB) error {
				_, err := slotted.List(db, new(int), "likes", slotted.ListOptions{Limit: 5})
				return err
			}},
			{"List without counters", slotted.ErrUnknownCounter, func(db *gorm.DB) error {
				_, err := slotted.List(db, &noCounters{}, "likes", slotted.ListOptions{Limit: 5})
				return err
			}},
			{"List unknown counter", slotted.ErrUnknownCounter, func(db *gorm.DB) error {
				_, err := slotted.List(db, &Listed{}, "nope", slotted.ListOptions{Limit: 5})
				return err
			}},
			{"List Limit 0", slotted.ErrInvalidArgument, func(db *gorm.DB) error {
				_, err := slotted.List(db, &Listed{}, "likes")
				return err
			}},
			{"List bad cursor", slotted.ErrInvalidArgument, func(db *gorm.DB) error {
				_, err := slotted.List(db, &Listed{}, "likes", slotted.ListOptions{Limit: 5, After: "%%%"})
				return err
			}},
			{"List window on a plain counter", slotted.ErrInvalidArgument, func(db *gorm.DB) error {
				_, err := slotted.List(db, &Listed{}, "shares", slotted.ListOptions{Limit: 5, From: time.Now().Add(-time.Hour)})
				return err
			}},
			{"List To before From", slotted.ErrInvalidArgument, func(db *gorm.DB) error {
				_, err := slotted.List(db, &Listed{}, "views", slotted.ListOptions{Limit: 5, From: time.Now(), To: time.Now().Add(-72 * time.Hour)})
				return err
			}},
			{"Trending nil model", slotted.ErrUnsupportedModel, func(db *gorm.DB) error {
				_, err := slotted.Trending(db, nilListed, "views", slotted.TrendOptions{Limit: 5, Buckets: 2, HalfLife: 1})
				return err
			}},
			{"Trending not bucketed", slotted.ErrInvalidArgument, func(db *gorm.DB) error {
				_, err := slotted.Trending(db, &Listed{}, "likes", slotted.TrendOptions{Limit: 5, Buckets: 2, HalfLife: 1})
				return err
			}},
			{"Trending zero options", slotted.ErrInvalidArgument, func(db *gorm.DB) error {
				_, err := slotted.Trending(db, &Listed{}, "views", slotted.TrendOptions{Limit: 5})
				return err
			}},
			{"Trending unknown", slotted.ErrUnknownCounter, func(db *gorm.DB) error {
				_, err := slotted.Trending(db, &Listed{}, "nope", slotted.TrendOptions{Limit: 5, Buckets: 2, HalfLife: 1})
				return err
			}},
			{"MustExist no key", slotted.ErrMissingPrimaryKey, func(db *gorm.DB) error { return slotted.Increment(slotted.MustExist(db), &Story{}, "likes") }},
			{"MustExist nil", slotted.ErrUnsupportedModel, func(db *gorm.DB) error { return slotted.Increment(slotted.MustExist(db), nilStory, "likes") }},
			{"MustExist unknown", slotted.ErrUnknownCounter, func(db *gorm.DB) error { return slotted.Increment(slotted.MustExist(db), s, "nope") }},
		}
		for _, tc := range cases {
			rdb, rec := recorded(db)
			var err error
			require.NotPanics(t, func() { err = tc.call(rdb) }, tc.what)
			assert.ErrorIs(t, err, tc.want, tc.what)
			assert.Empty(t, rec.statements(), "%s sent nothing", tc.what)
		}
	})
}

// TestNamedExtrasAndNilElements: a misspelt field name in LoadWindows or
// LoadApplied is ErrUnknownCounter, not a silent no-op; a nil element in
// AppliedMany or SeriesMany, whose answers are by position, is refused
// rather than shifting every later answer onto the wrong record.
func TestNamedExtrasAndNilElements(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		stories := migrateStories(t, db)
		_, err := slotted.AddOnce(db, &stories[1], "likes", 1, "user:1")
		require.NoError(t, err)
		ss := []Story{{ID: stories[1].ID}}
		assert.ErrorIs(t, slotted.LoadWindows(db, &ss, "ViewsWeek", "Sprak"), slotted.ErrUnknownCounter)
		assert.ErrorIs(t, slotted.LoadWindows(db, &ss, "Liked"), slotted.ErrUnknownCounter, "an applied field is not a window")
		assert.ErrorIs(t, slotted.LoadApplied(db, &ss, "user:1", "Liked", "Lked"), slotted.ErrUnknownCounter)
		assert.False(t, ss[0].Liked)
		require.NoError(t, slotted.LoadApplied(db, &ss, "user:1", "likes"), "the counter's name")
		assert.True(t, ss[0].Liked)
		require.NoError(t, slotted.LoadWindows(db, &ss, "Spark", "views"))
		assert.Len(t, ss[0].Spark, 7)

		ptrs := []*Story{nil, &stories[1]}
		liked, err := slotted.AppliedMany(db, ptrs, "likes", "user:1")
		assert.ErrorIs(t, err, slotted.ErrUnsupportedModel)
		assert.Nil(t, liked)
		series, err := slotted.SeriesMany(db, ptrs, "views", slotted.Today())
		assert.ErrorIs(t, err, slotted.ErrUnsupportedModel)
		assert.Nil(t, series)
		liked, err = slotted.AppliedMany(db, ptrs[1:], "likes", "user:1")
		require.NoError(t, err)
		assert.Equal(t, []bool{true}, liked)
	})
}

// TestNewReadsInTransaction: inside a transaction the new reads see its own
// uncommitted writes (they run on the transaction, not on another
// connection), and nothing of it after a rollback.
func TestNewReadsInTransaction(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		stories := migrateStories(t, db)
		migrateListed(t, db)
		l := Listed{Grp: 3}
		require.NoError(t, db.Create(&l).Error)
		s := Story{ID: stories[2].ID}
		rollback := assert.AnError
		err := db.Transaction(func(tx *gorm.DB) error {
			applied, err := slotted.AddOnce(slotted.MustExist(tx), &s, "likes", 1, "user:tx")
			require.NoError(t, err)
			require.True(t, applied)
			require.NoError(t, slotted.Add(tx, &s, "views", 4))
			require.NoError(t, slotted.Add(tx, &l, "views", 6))
			liked, err := slotted.Applied(tx, &s, "likes", "user:tx")
			require.NoError(t, err)
			assert.True(t, liked, "Applied sees the transaction's key")
			keys, err := slotted.OnceKeys(tx, &s, "likes", "", 5)
			require.NoError(t, err)
			assert.Equal(t, []string{"user:tx"}, keys)
			n, err := slotted.CountIn(tx, &s, "views", slotted.Today())
			require.NoError(t, err)
			assert.EqualValues(t, 4, n)
			series, err := slotted.SeriesMany(tx, &stories, "views", slotted.Today())
			require.NoError(t, err)
			assert.EqualValues(t, 4, series[2][0].Count)
			page, err := slotted.List(tx.Where("grp = ?", 3), &Listed{}, "views", slotted.ListOptions{Limit: 5})
			require.NoError(t, err)
			assert.Equal(t, []int64{6}, page.Totals)
			tp, err := slotted.Trending(tx.Where("grp = ?", 3), &Listed{}, "views", slotted.TrendOptions{Limit: 5, Buckets: 1, HalfLife: 1})
			require.NoError(t, err)
			require.Len(t, tp.Items, 1)
			assert.EqualValues(t, 6, tp.Items[0].Views)
			return rollback
		})
		require.ErrorIs(t, err, rollback)
		liked, err := slotted.Applied(db, &s, "likes", "user:tx")
		require.NoError(t, err)
		assert.False(t, liked, "rolled back")
		n, err := slotted.CountIn(db, &s, "views", slotted.Today())
		require.NoError(t, err)
		assert.Zero(t, n)
	})
}

// TestMustExistAddMany: AddMany under MustExist (and Config.RequireRecords)
// checks its records on the primary in one statement and writes nothing
// when any is missing or soft-deleted.
func TestMustExistAddMany(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := []Post{{Title: "m1"}, {Title: "m2"}}
		require.NoError(t, db.Create(&posts).Error)
		before := counterRows(t, db)
		missing := []*Post{&posts[0], {ID: posts[1].ID + 1000}, &posts[1]}
		rdb, rec := recorded(slotted.MustExist(db))
		assert.ErrorIs(t, slotted.AddMany(rdb, missing, "likes", 1), slotted.ErrRecordNotFound)
		assert.Len(t, rec.statements(), 1, "one existence check: %v", rec.statements())
		assert.Equal(t, before, counterRows(t, db), "nothing written")
		assert.Zero(t, posts[0].Likes, "no field moved")
		require.NoError(t, slotted.AddMany(slotted.MustExist(db), []*Post{&posts[0], &posts[1], &posts[0]}, "likes", 2))
		assert.EqualValues(t, 2, posts[1].Likes)
		n, err := slotted.Count(db, &posts[0], "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 2, n)

		article := Article{Title: "gone"}
		require.NoError(t, db.Create(&article).Error)
		require.NoError(t, db.Delete(&article).Error)
		assert.ErrorIs(t, slotted.AddMany(slotted.MustExist(db), []Article{{ID: article.ID}}, "likes", 1), slotted.ErrRecordNotFound, "soft-deleted")
		assert.ErrorIs(t, slotted.AddMany(slotted.MustExist(db.Session(&gorm.Session{DryRun: true})), missing, "likes", 1), slotted.ErrDryRun)
		require.NoError(t, slotted.AddMany(slotted.MustExist(db, false), []*Post{{ID: posts[1].ID + 1000}}, "likes", 1), "turned off")
	})
}

// Kept is a day counter that keeps 3 buckets.
type Kept struct {
	ID    uint
	Title string
	Views int64 `gorm:"-" slotted:"views;buckets:day;keep:3;slots:2"`
}

// TestTrendingPastRetention: Trending over more buckets than a keep:N
// counter keeps is ErrPastRetention (as CountIn), with nothing sent, not
// scores missing the pruned buckets.
func TestTrendingPastRetention(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.Migrator().DropTable(&Kept{}))
		require.NoError(t, db.AutoMigrate(&Kept{}))
		k := Kept{Title: "k"}
		require.NoError(t, db.Create(&k).Error)
		require.NoError(t, slotted.Add(db, &k, "views", 2))
		rdb, rec := recorded(db)
		_, err := slotted.Trending(rdb, &Kept{}, "views", slotted.TrendOptions{Limit: 5, Buckets: 4, HalfLife: 1})
		assert.ErrorIs(t, err, slotted.ErrPastRetention)
		assert.Empty(t, rec.statements())
		_, err = slotted.Trending(db, &Kept{}, "views", slotted.TrendOptions{Limit: 5, Buckets: 3, HalfLife: 1, At: time.Now().AddDate(0, 0, -1)})
		assert.ErrorIs(t, err, slotted.ErrPastRetention, "an At in the past moves the window back")
		page, err := slotted.Trending(db, &Kept{}, "views", slotted.TrendOptions{Limit: 5, Buckets: 3, HalfLife: 1})
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		assert.EqualValues(t, 2, page.Scores[0])
		_, err = slotted.CountIn(db, &k, "views", slotted.LastDays(4))
		assert.ErrorIs(t, err, slotted.ErrPastRetention, "as CountIn")
	})
}

// TestExtrasFillReadsTheRecordsReplica: as TestFillReadsTheRecordsReplica,
// for the applied, window: and series: fields: they come from the replica
// the records came from.
func TestExtrasFillReadsTheRecordsReplica(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		name := dialect(db)
		stories := migrateStories(t, db)
		_, err := slotted.AddOnce(db, &stories[0], "likes", 1, "user:r")
		require.NoError(t, err)
		require.NoError(t, slotted.Add(db, &stories[0], "views", 3))
		r1, log1 := spied(t, name, "replica 1", sameDatabase)
		r2, log2 := spied(t, name, "replica 2", sameDatabase)
		app, _ := resolved(t, db, dbresolver.Config{Replicas: []gorm.Dialector{r1, r2}})
		from := func(l *spyLog, table string) int {
			return l.count("stmt", "FROM "+quote(name, table)) + l.count("direct", "FROM "+quote(name, table))
		}
		mixed := 0
		for range 16 {
			log1.reset()
			log2.reset()
			var got []Story
			require.NoError(t, slotted.WithOnceKey(app, "user:r").Where("id = ?", stories[0].ID).Find(&got).Error)
			require.Len(t, got, 1)
			assert.True(t, got[0].Liked)
			assert.EqualValues(t, 3, got[0].ViewsWeek)
			one, other := log1, log2
			if from(log2, "stories") == 1 {
				one, other = log2, log1
			}
			if from(one, "stories") != 1 || from(one, slotted.DefaultOnceTable) != 1 || from(one, slotted.DefaultTable) < 2 ||
				from(other, slotted.DefaultOnceTable)+from(other, slotted.DefaultTable) != 0 {
				mixed++
				t.Logf("replica 1: %v; replica 2: %v", log1.statements(), log2.statements())
			}
		}
		assert.Zero(t, mixed, "Finds whose extras came from another replica than their records")
	})
}

// TestMustExistAddEachChecksOnce: AddEach under MustExist looks the record
// up once, not once per counter.
func TestMustExistAddEachChecksOnce(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "each"}
		require.NoError(t, db.Create(&post).Error)
		rdb, rec := recorded(slotted.MustExist(db))
		require.NoError(t, slotted.AddEach(rdb, &post, map[string]int64{"likes": 1, "views": 2, "stars": 3}))
		assert.Equal(t, 1, rec.count("FROM "+quote(dialect(db), "posts")), "one existence check: %v", rec.statements())
		assert.EqualValues(t, 2, post.Views)
		missing := Post{ID: post.ID + 1000}
		before := counterRows(t, db)
		assert.ErrorIs(t, slotted.AddEach(slotted.MustExist(db), &missing, map[string]int64{"likes": 1, "views": 2}), slotted.ErrRecordNotFound)
		assert.Equal(t, before, counterRows(t, db))
		assert.ErrorIs(t, slotted.AddEach(slotted.MustExist(db), &post, map[string]int64{"likes": 1, "nope": 2}), slotted.ErrUnknownCounter)
	})
}
