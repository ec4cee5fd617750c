package dialect

import (
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Writes to the same row on different Galera nodes are not serialized by
// locks but by certification at commit: the loser gets 1213 (deadlock), also
// for an autocommit upsert. Hot counters conflict far more often than on one
// server, so Galera gets more retries and a longer backoff by default
// (measured in docs/deployments.md).

// Retry defaults when Galera is detected and Config leaves them zero.
const (
	GaleraMaxRetries      = 10
	GaleraMinRetryBackoff = 5 * time.Millisecond
	GaleraMaxRetryBackoff = 500 * time.Millisecond
)

// SyncWait scopes wsrep_sync_wait=1 (wait for reads) to the one statement it
// prefixes, so pooled connections keep their own setting (MariaDB syntax).
const SyncWait = "SET STATEMENT wsrep_sync_wait=1 FOR"

// CausalWait returns once this node has applied every write set committed
// anywhere in the cluster before it started.
const CausalWait = SyncWait + " SELECT 1"

// Detect asks a MySQL-protocol server (d.ServerDetect) what it is: a MariaDB
// Galera node, and whether it takes RETURNING. primary must run its
// statements on the primary: the answers decide how the plugin writes, and
// during a rolling upgrade a replica may already run the next version. Other
// wsrep servers (Percona XtraDB Cluster) lack MariaDB's SET STATEMENT and are
// left as they were: untested here.
func (d *Dialect) Detect(primary *gorm.DB) error {
	if !d.ServerDetect || primary.DryRun {
		return nil
	}
	version, err := serverVersion(primary)
	if err != nil {
		return err
	}
	d.Returning = MariaDBReturning(version)
	if !strings.Contains(version, "MariaDB") {
		return nil
	}
	rows, err := primary.Raw("SHOW VARIABLES LIKE 'wsrep_on'").Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	on := false
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return err
		}
		on = strings.EqualFold(value, "ON")
	}
	d.Galera = on
	return rows.Err()
}

// serverVersion is the server's VERSION().
func serverVersion(db *gorm.DB) (string, error) {
	// Rows, not Row: gorm's Row skips the statement's error callbacks.
	rows, err := db.Raw("SELECT VERSION()").Rows()
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

// MariaDBReturning reports whether version is MariaDB 10.5 or later
// ("10.11.19-MariaDB-0+deb12u1", "5.5.5-10.11.6-MariaDB" through some proxies):
// INSERT … RETURNING and DELETE … RETURNING. MySQL, TiDB and Vitess (whose
// VERSION() names the MySQL they emulate) have neither.
func MariaDBReturning(version string) bool {
	if !strings.Contains(version, "MariaDB") {
		return false
	}
	version = strings.TrimPrefix(version, "5.5.5-")
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return false
	}
	return major > 10 || major == 10 && minor >= 5
}

// WaitCausally makes a gorm-built SELECT wait like CausalWait does before
// reading (Config.CausalReads).
func WaitCausally(q *gorm.DB) {
	c, ok := q.Statement.Clauses["SELECT"]
	if !ok {
		return
	}
	c.BeforeExpression = clause.Expr{SQL: SyncWait}
	q.Statement.Clauses["SELECT"] = c
}
