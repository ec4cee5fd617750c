// Package sqlparse checks that every statement the plugin emits on the MySQL
// dialect parses with the Vitess and TiDB SQL parsers, and where Vitess routes
// each one when the counter table is sharded by record_id.
//
// It is a module of its own so that users never download Vitess and TiDB,
// and it is left out of go.work on purpose: in the workspace their
// dependencies would raise the versions of modules the other modules share
// (golang.org/x/text, go-sql-driver/mysql...). So it runs with GOWORK=off
// (without it the go command refuses a module that go.work does not list):
//
//	cd tests/sqlparse && GOWORK=off SLOTTED_MYSQL_DSN='root@tcp(127.0.0.1:3306)/slotted_test?parseTime=true' go test ./...
//
// Without SLOTTED_MYSQL_DSN it skips (fails with SLOTTED_REQUIRE_DBS=1). The
// scenarios run against that database: they drop and create the counter
// table and the tables of models_test.go. A new API gets one entry in
// scenarios (scenarios_test.go). The README's Deployments section says what the results mean for
// Vitess and TiDB deployments.
package sqlparse

import (
	"database/sql"
	"os"
	"slices"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	tidb "github.com/pingcap/tidb/pkg/parser"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // literal values for the TiDB parser's AST
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/slotted-go/slotted"
)

func TestEmittedSQLParses(t *testing.T) {
	db := openMySQL(t)
	c := db.Logger.(*capture)
	for _, sc := range scenarios {
		t.Run("scenario/"+sc.name, func(t *testing.T) {
			resetSchema(t, db)
			if sc.setup != nil {
				sc.setup(t, db)
			}
			c.start(sc.name)
			defer c.stop()
			sc.run(t, db)
		})
	}
	stmts := c.all()
	for _, sc := range scenarios {
		if !slices.ContainsFunc(stmts, func(s captured) bool { return s.scenario == sc.name }) {
			t.Errorf("scenario %q emitted no SQL", sc.name)
		}
	}
	forms := map[string]int{}
	for _, s := range stmts {
		forms[s.form]++
	}
	for _, f := range []string{formLogged, formBound, formWire} {
		if forms[f] == 0 {
			t.Errorf("no statement captured in the %s form", f)
		}
	}
	if t.Failed() {
		return
	}

	distinct := dedupe(stmts)
	vt, err := sqlparser.New(sqlparser.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ti := tidb.New()
	parsed := 0
	for _, s := range distinct {
		if _, err := vt.ParseStrictDDL(s.sql); err != nil {
			t.Errorf("Vitess cannot parse a statement of %q (%s form): %v\n\t%s", s.scenario, s.form, err, s.sql)
		}
		nodes, warns, err := ti.Parse(s.sql, "", "")
		switch {
		case err != nil:
			t.Errorf("TiDB cannot parse a statement of %q (%s form): %v\n\t%s", s.scenario, s.form, err, s.sql)
		case len(nodes) != 1:
			t.Errorf("TiDB parses %d statements from one of %q (%s form):\n\t%s", len(nodes), s.scenario, s.form, s.sql)
		}
		for _, w := range warns {
			t.Logf("TiDB warns about a statement of %q (%s form): %v\n\t%s", s.scenario, s.form, w, s.sql)
		}
		parsed++
	}
	perForm := map[string]int{}
	for _, s := range distinct {
		perForm[s.form]++
	}
	t.Logf("%d scenarios, %d statements captured (logged %d, bound %d, wire %d); %d distinct parsed by Vitess and TiDB (logged %d, bound %d, wire %d)",
		len(scenarios), len(stmts), forms[formLogged], forms[formBound], forms[formWire],
		parsed, perForm[formLogged], perForm[formBound], perForm[formWire])

	t.Run("vitess routing", func(t *testing.T) { checkRouting(t, stmts) })
}

// dedupe keeps the first occurrence of each (form, statement).
func dedupe(stmts []captured) []captured {
	seen := map[[2]string]bool{}
	var out []captured
	for _, s := range stmts {
		k := [2]string{s.form, s.sql}
		if !seen[k] {
			seen[k] = true
			out = append(out, s)
		}
	}
	return out
}

// openMySQL connects to SLOTTED_MYSQL_DSN through the recording connector,
// with the plugin registered.
func openMySQL(t *testing.T) *gorm.DB {
	dsn := os.Getenv("SLOTTED_MYSQL_DSN")
	if dsn == "" {
		if os.Getenv("SLOTTED_REQUIRE_DBS") == "1" {
			t.Fatal("SLOTTED_REQUIRE_DBS=1 but SLOTTED_MYSQL_DSN is not set")
		}
		t.Skip("SLOTTED_MYSQL_DSN is not set")
	}
	cfg, err := gomysql.ParseDSN(dsn)
	must(t, err)
	conn, err := gomysql.NewConnector(cfg)
	must(t, err)
	c := &capture{}
	sqlDB := sql.OpenDB(wireConnector{Connector: conn, c: c})
	t.Cleanup(func() { _ = sqlDB.Close() })
	return open(t, sqlDB, c, slotted.Config{})
}

// open opens a gorm DB on sqlDB that records into c, then registers the
// plugin (so the migration db.Use runs is recorded when c is started).
func open(t *testing.T, sqlDB *sql.DB, c *capture, cfg slotted.Config) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(mysql.New(mysql.Config{Conn: sqlDB}), &gorm.Config{Logger: c})
	must(t, err)
	must(t, c.register(db))
	// The statements checked are those a MySQL, TiDB or Vitess server gets:
	// there the plugin finds no RETURNING (returning.go) and batches AddOnce
	// keys without it. The MariaDB this test runs on has it, so it is turned
	// off as it is on those servers.
	cfg.DisableReturning = true
	// Outcome markers add a row under another record_id to every coalesced
	// statement, so on a Vitess keyspace sharded by record_id each statement
	// would reach a second shard: the README's Vitess section says to turn
	// them off there, and the routing checked here is that setup's.
	cfg.DisableOutcomeMarkers = true
	must(t, db.Use(slotted.New(cfg)))
	return db
}

// reopen is a second application instance starting on db's connection pool.
func reopen(t *testing.T, db *gorm.DB, cfg slotted.Config) *gorm.DB {
	t.Helper()
	sqlDB, err := db.DB()
	must(t, err)
	return open(t, sqlDB, db.Logger.(*capture), cfg)
}

// resetSchema drops and recreates the counter table and the models' tables.
func resetSchema(t *testing.T, db *gorm.DB) {
	t.Helper()
	tables := append([]any{slotted.DefaultTable, slotted.DefaultOnceTable}, models...) // a key left by an earlier run would make AddOnce a retry
	must(t, db.Migrator().DropTable(tables...))
	must(t, slotted.Migrate(db))
	must(t, db.AutoMigrate(models...))
}

// oneLine is a statement on one line, for tables in logs.
func oneLine(sql string) string {
	return strings.Join(strings.Fields(sql), " ")
}
