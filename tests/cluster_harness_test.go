package tests

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// The cluster suites run on real distributed setups started by the scripts:
//
//	scripts/galera.sh start && eval "$(scripts/galera.sh env)"        # SLOTTED_GALERA_DSNS: three nodes
//	scripts/pgreplica.sh start && eval "$(scripts/pgreplica.sh env)"  # SLOTTED_PG_PRIMARY_DSN, SLOTTED_PG_REPLICA_DSN
//
// Without their DSNs they are skipped; SLOTTED_REQUIRE_CLUSTERS=1 makes a
// missing DSN a failure instead.

// clusterEnv returns the environment variable's value, skipping (or failing,
// with SLOTTED_REQUIRE_CLUSTERS=1) the test when it is not set.
func clusterEnv(t testing.TB, key string) string {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		if os.Getenv("SLOTTED_REQUIRE_CLUSTERS") == "1" {
			t.Fatalf("SLOTTED_REQUIRE_CLUSTERS=1 but %s is not set", key)
		}
		t.Skipf("%s not set (see scripts/galera.sh and scripts/pgreplica.sh)", key)
	}
	return v
}

// openCluster opens one connection pool on dialector d with a fresh
// gorm.Config and closes it when the test ends.
func openCluster(t testing.TB, d gorm.Dialector) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db
}

// galeraDSNs returns the three nodes' DSNs.
func galeraDSNs(t testing.TB) []string {
	t.Helper()
	dsns := strings.Split(clusterEnv(t, "SLOTTED_GALERA_DSNS"), ",")
	require.Len(t, dsns, 3, "SLOTTED_GALERA_DSNS holds three comma-separated DSNs")
	return dsns
}

// galeraCluster recreates the test tables on node 1 and returns one *gorm.DB
// per node with the plugin registered with cfg.
func galeraCluster(t testing.TB, cfg slotted.Config) []*gorm.DB {
	t.Helper()
	dsns := galeraDSNs(t)
	first := openCluster(t, mysql.Open(dsns[0]))
	require.NoError(t, first.Migrator().DropTable(append(testModels, slotted.DefaultTable)...))
	require.NoError(t, first.Use(slotted.New(cfg)))
	require.NoError(t, first.AutoMigrate(testModels...))
	nodes := []*gorm.DB{first}
	for _, dsn := range dsns[1:] {
		nodes = append(nodes, galeraNode(t, dsn, cfg))
	}
	return nodes
}

// galeraNode opens one more pool on a node of a cluster whose tables exist,
// once the node has applied their creation.
func galeraNode(t testing.TB, dsn string, cfg slotted.Config) *gorm.DB {
	t.Helper()
	db := openCluster(t, mysql.Open(dsn))
	require.NoError(t, db.Exec("SET STATEMENT wsrep_sync_wait=1 FOR SELECT 1").Error)
	require.NoError(t, db.Use(slotted.New(cfg)))
	return db
}

// causalCount reads a counter's total on a Galera node after the node has
// applied every write acknowledged anywhere, without the plugin.
func causalCount(t testing.TB, db *gorm.DB, ref slotted.Ref) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.Raw("SET STATEMENT wsrep_sync_wait=1 FOR SELECT COALESCE(SUM(count), 0) FROM slotted_counters WHERE record_type = ? AND record_id = ?",
		ref.Type, ref.ID).Row().Scan(&n))
	return n
}

// pausedNode holds FLUSH TABLES WITH READ LOCK on a Galera node, which stops
// it from applying the other nodes' writes (it desyncs; the rest of the
// cluster goes on), until resume is called. Reads on the node keep working
// and see the state at the pause.
func pausedNode(t testing.TB, dsn string) (resume func()) {
	t.Helper()
	db := openCluster(t, mysql.Open(dsn))
	sqlDB, err := db.DB()
	require.NoError(t, err)
	sqlDB.SetMaxOpenConns(1) // the lock belongs to the session that took it
	require.NoError(t, db.Exec("FLUSH TABLES WITH READ LOCK").Error)
	done := false
	resume = func() {
		if !done {
			done = true
			require.NoError(t, db.Exec("UNLOCK TABLES").Error)
		}
	}
	t.Cleanup(resume)
	return resume
}

// waitFor polls cond every 50 ms until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pgPair returns a plain pool on the primary and the DSNs of both servers.
func pgPair(t testing.TB) (primary *gorm.DB, primaryDSN, replicaDSN string) {
	t.Helper()
	primaryDSN = clusterEnv(t, "SLOTTED_PG_PRIMARY_DSN")
	replicaDSN = clusterEnv(t, "SLOTTED_PG_REPLICA_DSN")
	return openCluster(t, postgres.Open(primaryDSN)), primaryDSN, replicaDSN
}
