package slotted

import (
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Galera (MariaDB Galera Cluster, detected by wsrep_on = ON at Initialize) is
// multi-primary: every node takes writes, and a node applies the others' write
// sets asynchronously. Two things follow for the plugin.
//
// A read on one node does not see a write acknowledged on another node until
// that node has applied it. Reset, Compact and RollUp therefore make the node
// catch up (wsrep_sync_wait) before their transaction reads; otherwise a Reset
// on node 2 keeps an increment acknowledged on node 1 whose slot row node 2
// had not applied yet (it locks and deletes only the rows it sees, so nothing
// conflicts at certification). The wait cannot go inside the transaction: the
// server skips wsrep_sync_wait for every statement of an active transaction
// (checked on MariaDB 10.11: SET SESSION or SET STATEMENT after BEGIN reads
// stale rows), so it runs just before BEGIN on the same pinned connection.
//
// Writes to the same row on different nodes are not serialized by locks but
// by certification at commit: the loser gets 1213 (deadlock), also for an
// autocommit upsert. Hot counters conflict far more often than on one server,
// so Galera gets more retries and a longer backoff by default (measured in
// README "Deployments").

// Retry defaults when Galera is detected and Config leaves them zero.
const (
	galeraMaxRetries      = 10
	galeraMinRetryBackoff = 5 * time.Millisecond
	galeraMaxRetryBackoff = 500 * time.Millisecond
)

// syncWait scopes wsrep_sync_wait=1 (wait for reads) to the one statement it
// prefixes, so pooled connections keep their own setting (MariaDB syntax).
const syncWait = "SET STATEMENT wsrep_sync_wait=1 FOR"

// causalWait returns once this node has applied every write set committed
// anywhere in the cluster before it started.
const causalWait = syncWait + " SELECT 1"

// detectGalera asks the server whether it is a MariaDB Galera node. The
// first statement is not a SELECT, so dbresolver sends it to a source. Other
// wsrep servers (Percona XtraDB Cluster) lack MariaDB's SET STATEMENT and are
// left as they were: untested here.
func detectGalera(db *gorm.DB) (bool, error) {
	if db.DryRun {
		return false, nil
	}
	tx := db.Session(&gorm.Session{NewDB: true})
	rows, err := tx.Raw("SHOW VARIABLES LIKE 'wsrep_on'").Rows()
	if err != nil {
		return false, err
	}
	defer rows.Close()
	on := false
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return false, err
		}
		on = strings.EqualFold(value, "ON")
	}
	if err := rows.Err(); err != nil || !on {
		return false, err
	}
	version, err := serverVersion(db)
	return strings.Contains(version, "MariaDB"), err
}

// serverVersion is the server's VERSION(), asked on the primary: it decides
// how the plugin writes (Galera's waits, RETURNING), and during a rolling
// upgrade a replica may already run the next version.
func serverVersion(db *gorm.DB) (string, error) {
	// Rows, not Row: see sum.
	rows, err := primary(db, "").Raw("SELECT VERSION()").Rows()
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var version string
	for rows.Next() {
		if err := rows.Scan(&version); err != nil {
			return "", err
		}
	}
	return version, rows.Err()
}

// waitCausally makes a gorm-built SELECT wait like causalWait does before
// reading (Config.CausalReads).
func waitCausally(q *gorm.DB) {
	c, ok := q.Statement.Clauses["SELECT"]
	if !ok {
		return
	}
	c.BeforeExpression = clause.Expr{SQL: syncWait}
	q.Statement.Clauses["SELECT"] = c
}
