package tests

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/plugin/dbresolver"

	"github.com/slotted-go/slotted"
)

// The plugin under gorm.io/plugin/dbresolver. Sources and replicas here are
// spied pools on the test's own database, so every pool sees the same rows
// and the spies tell which pool ran each statement.

// resolved opens an application pool on a spied primary and registers
// dbresolver with cfg (its Sources/Replicas filled by the caller) before the
// plugin, as applications usually do.
func resolved(t *testing.T, db *gorm.DB, cfg dbresolver.Config, extra ...func(*dbresolver.DBResolver)) (app *gorm.DB, primaryLog *spyLog) {
	t.Helper()
	d, log := spied(t, dialect(db), "primary", sameDatabase)
	app, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	r := dbresolver.Register(cfg)
	for _, fn := range extra {
		fn(r)
	}
	require.NoError(t, app.Use(r))
	require.NoError(t, app.Use(slotted.New(slotted.Config{})))
	return app, log
}

// TestMigrationDecidedOnPrimary: with dbresolver registered before the
// plugin and a replica that lacks the counter table, db.Use still finds the
// primary's table (and does not try to create it again), and creates it on a
// primary that lacks it even when the replica has one.
func TestMigrationDecidedOnPrimary(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		emptyReplicaSchema(t, db)
		replica, replicaLog := spied(t, dialect(db), "replica", emptyDatabase)
		app, primaryLog := resolved(t, db, dbresolver.Config{Replicas: []gorm.Dialector{replica}})
		assert.Positive(t, primaryLog.count("", "slotted_counters"), "the table was looked up on the primary")
		assert.Zero(t, replicaLog.count("", "slotted_counters"), "and not on the replica: %v", replicaLog.statements())
		post := Post{Title: "migrated"}
		require.NoError(t, app.Create(&post).Error)
		require.NoError(t, slotted.Add(app, &post, "likes", 2))
		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 2, n)

		if dialect(db) == dbMySQL {
			return // MySQL's stand-in replica, information_schema, cannot have the table
		}
		// The replica has the table, the primary does not: the primary gets it.
		withTable, _ := spied(t, dialect(db), "replica with the table", emptyDatabase)
		rdb, err := gorm.Open(withTable, &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		require.NoError(t, rdb.Table(slotted.DefaultTable).AutoMigrate(&slotted.SlottedCounter{}))
		require.NoError(t, db.Migrator().DropTable(slotted.DefaultTable))
		_, _ = resolved(t, db, dbresolver.Config{Replicas: []gorm.Dialector{withTable}})
		assert.True(t, db.Migrator().HasTable(slotted.DefaultTable), "created on the primary")
	})
}

// TestRoutingReadsThatDecideWrites: the reads of Sweep, the CompactAll scan,
// RollUpAll's pages and Compact/Reset run on the primary, never on a replica
// (one that lags would make Sweep delete live counters); the writes too; and
// a caller's dbresolver.Use picks the resolver for all of them.
func TestRoutingReadsThatDecideWrites(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		name := dialect(db)
		replica, replicaLog := spied(t, name, "replica", sameDatabase)
		namedSource, namedLog := spied(t, name, "named source", sameDatabase)
		namedReplica, namedReplicaLog := spied(t, name, "named replica", sameDatabase)
		app, primaryLog := resolved(t, db, dbresolver.Config{Replicas: []gorm.Dialector{replica}}, func(r *dbresolver.DBResolver) {
			r.Register(dbresolver.Config{Sources: []gorm.Dialector{namedSource}, Replicas: []gorm.Dialector{namedReplica}}, "named")
		})
		logs := []*spyLog{primaryLog, replicaLog, namedLog, namedReplicaLog}
		reset := func() {
			for _, l := range logs {
				l.reset()
			}
		}

		posts := make([]Post, 3)
		articles := make([]Article, 3)
		for i := range posts {
			posts[i] = Post{Title: fmt.Sprint("p", i)}
			require.NoError(t, app.Create(&posts[i]).Error)
			articles[i] = Article{Title: fmt.Sprint("a", i)}
			require.NoError(t, app.Create(&articles[i]).Error)
			for range 30 {
				require.NoError(t, slotted.Increment(app, &posts[i], "likes"))
				require.NoError(t, slotted.Increment(app, &articles[i], "likes"))
			}
		}
		orphan := slotted.Ref{Type: "posts.likes", ID: "999999"}
		require.NoError(t, slotted.AddRef(app, orphan, 5))

		onPrimaryOnly := func(what string, ran func(*gorm.DB) error, want *spyLog) {
			t.Helper()
			reset()
			require.NoError(t, ran(app), what)
			for _, l := range logs {
				if l == want {
					assert.Positive(t, l.count(""), "%s ran on the %s", what, l.name)
				} else {
					assert.Zero(t, l.count(""), "%s ran nothing on the %s: %v", what, l.name, l.statements())
				}
			}
		}
		onPrimaryOnly("Sweep", func(db *gorm.DB) error { _, err := slotted.Sweep(db, &Post{}); return err }, primaryLog)
		onPrimaryOnly("CompactAll", func(db *gorm.DB) error { _, err := slotted.CompactAll(db); return err }, primaryLog)
		onPrimaryOnly("RollUpAll", func(db *gorm.DB) error {
			_, err := slotted.RollUpAll(db, &Article{})
			return err
		}, primaryLog)
		onPrimaryOnly("RollUp", func(db *gorm.DB) error { return slotted.RollUp(db, &articles) }, primaryLog)
		onPrimaryOnly("Compact", func(db *gorm.DB) error { return slotted.Compact(db, &posts[0], "likes") }, primaryLog)
		onPrimaryOnly("Reset", func(db *gorm.DB) error { return slotted.Reset(db, &posts[0], "likes", 40) }, primaryLog)
		onPrimaryOnly("Migrate", slotted.Migrate, primaryLog)

		named := func(db *gorm.DB) *gorm.DB { return db.Clauses(dbresolver.Use("named")) }
		require.NoError(t, slotted.AddRef(app, orphan, 5))
		onPrimaryOnly("Sweep with Use", func(db *gorm.DB) error {
			_, err := slotted.Sweep(named(db), &Post{})
			return err
		}, namedLog)
		onPrimaryOnly("CompactAll with Use", func(db *gorm.DB) error { _, err := slotted.CompactAll(named(db)); return err }, namedLog)
		onPrimaryOnly("RollUpAll with Use", func(db *gorm.DB) error {
			_, err := slotted.RollUpAll(named(db), &Article{})
			return err
		}, namedLog)
		onPrimaryOnly("Compact with Use", func(db *gorm.DB) error { return slotted.Compact(named(db), &posts[1], "likes") }, namedLog)
		onPrimaryOnly("Reset with Use", func(db *gorm.DB) error { return slotted.Reset(named(db), &posts[1], "likes", 41) }, namedLog)
		onPrimaryOnly("Increment with Use", func(db *gorm.DB) error { return slotted.Increment(named(db), &posts[1], "likes") }, namedLog)
		onPrimaryOnly("Count with Use", func(db *gorm.DB) error { _, err := slotted.Count(named(db), &posts[1], "likes"); return err }, namedReplicaLog)
		onPrimaryOnly("Count with Use and Write", func(db *gorm.DB) error {
			_, err := slotted.Count(named(db).Clauses(dbresolver.Write), &posts[1], "likes")
			return err
		}, namedLog)
		onPrimaryOnly("Delete with Use", func(db *gorm.DB) error { return named(db).Delete(&posts[2]).Error }, namedLog)

		// What they did is right, too.
		n, err := slotted.CountRef(db, orphan)
		require.NoError(t, err)
		assert.Zero(t, n, "the orphan was swept")
		for i, want := range []int64{40, 42, 0} {
			n, err := slotted.Count(db, &posts[i], "likes")
			require.NoError(t, err)
			assert.Equal(t, want, n, "post %d", i)
		}
		var got []Article
		require.NoError(t, db.Order("id").Find(&got).Error)
		for _, a := range got {
			assert.EqualValues(t, 30, a.LikesCount, "article %d rolled up", a.ID)
		}
	})
}

// TestFillReadsTheRecordsReplica: auto-fill reads the counters from the
// replica the records came from, whichever of two dbresolver picks; with a
// resolver of their own for the counter table, counters are read there.
func TestFillReadsTheRecordsReplica(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		name := dialect(db)
		r1, log1 := spied(t, name, "replica 1", sameDatabase)
		r2, log2 := spied(t, name, "replica 2", sameDatabase)
		app, _ := resolved(t, db, dbresolver.Config{Replicas: []gorm.Dialector{r1, r2}})
		post := Post{Title: "filled"}
		require.NoError(t, app.Create(&post).Error)
		require.NoError(t, slotted.Add(app, &post, "likes", 3))

		from := func(l *spyLog, table string) int { // statements run (not prepared) reading table
			return l.count("stmt", "FROM "+quote(name, table)) + l.count("direct", "FROM "+quote(name, table))
		}
		mixed := 0
		for range 24 {
			log1.reset()
			log2.reset()
			var got []Post
			require.NoError(t, app.Find(&got).Error)
			require.Len(t, got, 1)
			assert.EqualValues(t, 3, got[0].Likes)
			switch {
			case from(log1, "posts") == 1 && from(log1, slotted.DefaultTable) == 1 && from(log2, slotted.DefaultTable) == 0:
			case from(log2, "posts") == 1 && from(log2, slotted.DefaultTable) == 1 && from(log1, slotted.DefaultTable) == 0:
			default:
				mixed++
				t.Logf("replica 1: %v; replica 2: %v", log1.statements(), log2.statements())
			}
		}
		assert.Zero(t, mixed, "Finds whose counters came from another replica than their records")

		// The counter table routed to a resolver of its own: the fill follows it.
		cr, countersLog := spied(t, name, "counters replica", sameDatabase)
		cs, _ := spied(t, name, "counters source", sameDatabase)
		r3, log3 := spied(t, name, "replica 3", sameDatabase)
		app2, _ := resolved(t, db, dbresolver.Config{Replicas: []gorm.Dialector{r3}}, func(r *dbresolver.DBResolver) {
			r.Register(dbresolver.Config{Sources: []gorm.Dialector{cs}, Replicas: []gorm.Dialector{cr}}, slotted.DefaultTable)
		})
		var got []Post
		require.NoError(t, app2.Find(&got).Error)
		require.Len(t, got, 1)
		assert.EqualValues(t, 3, got[0].Likes)
		assert.Equal(t, 1, from(log3, "posts"))
		assert.Zero(t, from(log3, slotted.DefaultTable), "the counter table's resolver is not bypassed")
		assert.Equal(t, 1, from(countersLog, slotted.DefaultTable))
	})
}

// TestPreparedUnderDBResolver: with dbresolver registered (here after the
// plugin), increments and counts still run as the plugin's prepared
// statements on whichever pool dbresolver picks: prepared once per
// connection, not prepared, executed and closed (MySQL) or sent unprepared
// (PostgreSQL, SQLite) every time.
func TestPreparedUnderDBResolver(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		name := dialect(db)
		d, primaryLog := spied(t, name, "primary", sameDatabase)
		app, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		require.NoError(t, app.Use(slotted.New(slotted.Config{})))
		replica, replicaLog := spied(t, name, "replica", sameDatabase)
		require.NoError(t, app.Use(dbresolver.Register(dbresolver.Config{Replicas: []gorm.Dialector{replica}})))

		post := Post{Title: "prepared"}
		require.NoError(t, app.Create(&post).Error)
		primaryLog.reset()
		replicaLog.reset()
		const n = 30
		for range n {
			require.NoError(t, slotted.Increment(app, &post, "likes"))
			_, err := slotted.Count(app, &post, "likes")
			require.NoError(t, err)
		}
		insert, sum := "INSERT INTO", "SUM("
		assert.Equal(t, n, primaryLog.count("stmt", insert), "every increment ran as a prepared statement: %v", primaryLog.statements())
		assert.Zero(t, primaryLog.count("direct", insert))
		assert.LessOrEqual(t, primaryLog.count("prepare", insert), 2, "prepared once per connection")
		assert.Equal(t, n, replicaLog.count("stmt", sum), "every count ran as a prepared statement on the replica: %v", replicaLog.statements())
		assert.Zero(t, replicaLog.count("direct", sum))
		assert.LessOrEqual(t, replicaLog.count("prepare", sum), 2)
		assert.Zero(t, primaryLog.count("", sum), "counts went to the replica")
		got, err := slotted.Count(app.Clauses(dbresolver.Write), &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, n, got)

		// The user's own statements are not kept prepared by the plugin (on
		// MySQL database/sql prepares, executes and closes each one itself).
		primaryLog.reset()
		for range 2 {
			require.NoError(t, app.Exec("UPDATE posts SET title = ? WHERE id = ?", "x", post.ID).Error)
		}
		assert.Equal(t, primaryLog.count("prepare", "UPDATE posts"), primaryLog.count("stmt", "UPDATE posts"))
	})
}

// quote quotes an identifier as the dialect's gorm statements do.
func quote(name, ident string) string {
	if name == dbPostgres {
		return `"` + ident + `"`
	}
	return "`" + ident + "`"
}

// TestRoutingFixAllOnPrimary: FixAll's pages of parents decide which counter
// caches it rewrites, so they are read on the primary like RollUpAll's: a
// lagging replica would skip parents created since its last replay.
func TestRoutingFixAllOnPrimary(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		replica, replicaLog := spied(t, dialect(db), "replica", sameDatabase)
		app, primaryLog := resolved(t, db, dbresolver.Config{Replicas: []gorm.Dialector{replica}})
		declareCaches(t, app)
		for i := range 3 {
			topic := Topic{Title: fmt.Sprint("t", i)}
			require.NoError(t, app.Create(&topic).Error)
			require.NoError(t, app.Create(&Reply{TopicID: &topic.ID, Published: true}).Error)
		}
		primaryLog.reset()
		replicaLog.reset()
		prog, err := slotted.FixAll(app, &Topic{}, slotted.FixOptions{BatchSize: 2})
		require.NoError(t, err)
		assert.Equal(t, 3, prog.Records)
		assert.Positive(t, primaryLog.count(""), "FixAll ran on the primary")
		assert.Zero(t, replicaLog.count(""), "FixAll ran nothing on the replica: %v", replicaLog.statements())
	})
}

// TestRoutingRetentionOnPrimary: retention's reads decide which bucket rows
// it deletes (the next expired bucket, the rows of one), so they run on the
// primary: a lagging replica would miss buckets written since its last replay
// and leave them behind.
func TestRoutingRetentionOnPrimary(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migratePages(t, db)
		replica, replicaLog := spied(t, dialect(db), "replica", sameDatabase)
		app, primaryLog := resolved(t, db, dbresolver.Config{Replicas: []gorm.Dialector{replica}})
		page := Page{Title: "old"}
		require.NoError(t, app.Create(&page).Error)
		ref, err := slotted.RefOf(app, &page, "recent")
		require.NoError(t, err)
		for _, day := range []string{"2020-01-01", "2020-01-02"} {
			old := slotted.Ref{Type: ref.Type + "@" + day, ID: ref.ID, Slots: 4}
			for range 3 {
				require.NoError(t, slotted.AddRef(app, old, 1))
			}
		}
		primaryLog.reset()
		replicaLog.reset()
		prog, err := slotted.MaintainBuckets(app, &Page{}, slotted.BucketOptions{Closed: 1, BatchSize: 2})
		require.NoError(t, err)
		assert.Equal(t, 2, prog.Expired, "both old days expired")
		assert.Positive(t, primaryLog.count(""), "retention ran on the primary")
		assert.Zero(t, replicaLog.count(""), "retention read nothing on the replica: %v", replicaLog.statements())
	})
}
