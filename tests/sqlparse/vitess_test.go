package sqlparse

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"vitess.io/vitess/go/sqltypes"
	"vitess.io/vitess/go/test/vschemawrapper"
	querypb "vitess.io/vitess/go/vt/proto/query"
	vschemapb "vitess.io/vitess/go/vt/proto/vschema"
	"vitess.io/vitess/go/vt/sqlparser"
	"vitess.io/vitess/go/vt/vtenv"
	"vitess.io/vitess/go/vt/vtgate/engine"
	"vitess.io/vitess/go/vt/vtgate/planbuilder"
	"vitess.io/vitess/go/vt/vtgate/vindexes"

	"github.com/slotted-go/slotted"
)

// reach is how many shards a statement's rows of the counter table are on,
// with the table sharded by record_id.
type reach int

const (
	noCounterRows reach = iota // reads or writes no row of the counter table (DDL, schema lookups, parent tables)
	oneShard                   // names one record_id: routed to one shard
	someShards                 // an IN over several record_ids (or a multi-row insert): only their shards
	allShards                  // no record_id to route by: every shard (scatter)
)

func (r reach) String() string {
	return [...]string{"-", "one shard", "some shards", "all shards"}[r]
}

// keyspace is the sharded keyspace the plans are made for: the counter table
// sharded by record_id, each model's table by its primary key (xxhash, the
// vindex Vitess suggests for integers and binary strings). It is named main
// because the planner's test wrapper picks "main" when it needs any keyspace
// (its fallback for other names returns none).
const keyspace = "main"

func vschema(env *vtenv.Environment) *vindexes.VSchema {
	col := func(name string, typ querypb.Type) *vschemapb.Column { return &vschemapb.Column{Name: name, Type: typ} }
	table := func(vindex, column string, cols ...*vschemapb.Column) *vschemapb.Table {
		return &vschemapb.Table{
			ColumnVindexes:          []*vschemapb.ColumnVindex{{Column: column, Name: vindex}},
			Columns:                 cols,
			ColumnListAuthoritative: true,
		}
	}
	u64, i64, text, bin := querypb.Type_UINT64, querypb.Type_INT64, querypb.Type_VARCHAR, querypb.Type_VARBINARY
	srv := &vschemapb.SrvVSchema{Keyspaces: map[string]*vschemapb.Keyspace{keyspace: {
		Sharded: true,
		Vindexes: map[string]*vschemapb.Vindex{
			"xxhash":               {Type: "xxhash"},
			"unicode_loose_xxhash": {Type: "unicode_loose_xxhash"},
		},
		Tables: map[string]*vschemapb.Table{
			slotted.DefaultTable: table("xxhash", "record_id",
				col("record_type", bin), col("record_id", bin), col("slot", querypb.Type_INT32), col("count", i64)),
			// AddOnce's keys live beside the counter they guard.
			slotted.DefaultOnceTable: table("xxhash", "record_id",
				col("record_type", bin), col("record_id", bin), col("op_key", bin), col("delta", i64),
				col("expires_at", querypb.Type_DATETIME)),
			"authors": table("xxhash", "id", col("id", u64), col("name", text)),
			"posts":   table("xxhash", "id", col("id", u64), col("author_id", u64), col("title", text)),
			"articles": table("xxhash", "id", col("id", u64), col("title", text), col("likes_count", i64),
				col("shares_count", i64), col("deleted_at", querypb.Type_DATETIME)),
			"tags": table("unicode_loose_xxhash", "name", col("name", text)),
		},
	}}}
	return vindexes.BuildVSchema(srv, env.Parser())
}

// routed is the Vitess plan of one statement.
type routed struct {
	reach    reach
	plan     string // operators and variants, e.g. "Route EqualUnique"
	counters bool   // a statement on the counter table's rows
	err      error
}

// checkRouting plans every statement as it was sent (with placeholders) for
// the sharded keyspace, checks that Vitess can plan it, and that each
// scenario's statements on the counter table reach as many shards as the
// scenario says. With -v it logs the plan of every distinct statement.
func checkRouting(t *testing.T, stmts []captured) {
	env := vtenv.NewTestEnv()
	vs := vschema(env)
	vw, err := vschemawrapper.NewVschemaWrapper(env, vs, planbuilder.TestBuilder)
	must(t, err)
	vw.Keyspace = vs.Keyspaces[keyspace].Keyspace

	plans := map[string]routed{} // by statement
	widest := map[string]reach{} // by scenario
	var table strings.Builder
	table.WriteString("\n| scenario | reach | Vitess plan | statement |\n| --- | --- | --- | --- |\n")
	for _, s := range stmts {
		if s.form == formLogged {
			continue // the statements sent, with their values inlined
		}
		p, seen := plans[s.sql]
		if !seen {
			p = plan(vw, s.sql)
			plans[s.sql] = p
			if p.err != nil {
				t.Errorf("Vitess cannot plan a statement of %q (%s form): %v\n\t%s", s.scenario, s.form, p.err, s.sql)
				continue
			}
			fmt.Fprintf(&table, "| %s | %s | %s | `%s` |\n", s.scenario, p.reach, p.plan, truncate(oneLine(s.sql), 200))
		}
		if p.counters {
			widest[s.scenario] = max(widest[s.scenario], p.reach)
		}
	}
	t.Log(table.String())
	for _, sc := range scenarios {
		if got := widest[sc.name]; got != sc.vitess {
			t.Errorf("scenario %q: its statements on the counter table reach %s with record_id as the vindex, the scenario says %s", sc.name, got, sc.vitess)
		}
	}
}

func plan(vw *vschemawrapper.VSchemaWrapper, sql string) (r routed) {
	stmt, err := vw.Env.Parser().Parse(sql)
	if err != nil {
		r.err = err
		return r
	}
	r.counters = dml(stmt) && touches(stmt, slotted.DefaultTable)
	p, err := planbuilder.TestBuilder(sql, vw, vw.CurrentDb())
	if err != nil {
		r.err = err
		return r
	}
	if p == nil || p.Instructions == nil { // BEGIN, COMMIT, ROLLBACK: the vtgate session, no route
		r.plan = "transaction control"
		return r
	}
	var ops []string
	var walk func(d engine.PrimitiveDescription)
	walk = func(d engine.PrimitiveDescription) {
		ops = append(ops, strings.TrimSpace(d.OperatorType+" "+d.Variant))
		if d.Keyspace != nil && d.Keyspace.Sharded {
			r.reach = max(r.reach, variantReach(d, stmt))
		}
		for _, in := range d.Inputs {
			walk(in)
		}
	}
	walk(engine.PrimitiveToPlanDescription(p.Instructions, nil))
	if set, ok := p.Instructions.(*engine.Set); ok {
		for _, op := range set.Ops {
			if rc, ok := op.(*engine.SysVarReservedConn); ok {
				ops[0] += " (" + rc.Name + " for the session: a reserved connection)"
			}
		}
	}
	r.plan = strings.Join(ops, " > ")
	if !r.counters {
		r.reach = noCounterRows
	}
	return r
}

// variantReach maps a routing operator to the shards it sends the statement to.
func variantReach(d engine.PrimitiveDescription, stmt sqlparser.Statement) reach {
	switch d.Variant {
	case "EqualUnique", "Equal":
		return oneShard
	case "IN", "MultiEqual", "Between":
		return someShards
	case "Scatter":
		return allShards
	case "Sharded": // an insert: one shard per distinct vindex value
		if ins, ok := stmt.(*sqlparser.Insert); ok {
			if rows, ok := ins.Rows.(sqlparser.Values); ok && len(rows) == 1 {
				return oneShard
			}
		}
		return someShards
	}
	return noCounterRows // DBA (schema tables: one shard), Unsharded, Reference, None, session settings
}

func dml(stmt sqlparser.Statement) bool {
	switch stmt.(type) {
	case *sqlparser.Select, *sqlparser.Insert, *sqlparser.Update, *sqlparser.Delete:
		return true
	}
	return false
}

func touches(stmt sqlparser.Statement, table string) bool {
	found := false
	_ = sqlparser.Walk(func(node sqlparser.SQLNode) (bool, error) {
		if tn, ok := node.(sqlparser.TableName); ok && tn.Name.String() == table {
			found = true
		}
		return !found, nil
	}, stmt)
	return found
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// TestVitessColocation: with the same vindex (xxhash) on a parent table's
// integer primary key and on record_id, a record and its counters live on
// the same shard, because record_id is the key's decimal text and Vitess
// hashes an integer's decimal text too. Deleting a record with its counters,
// or rolling up one record, is then a single-shard transaction.
func TestVitessColocation(t *testing.T) {
	db, err := gorm.Open(mysql.New(mysql.Config{DSN: "u@tcp(127.0.0.1:1)/x", SkipInitializeWithVersion: true}),
		&gorm.Config{DryRun: true, DisableAutomaticPing: true, Logger: logger.Discard})
	must(t, err)
	must(t, db.Use(slotted.New(slotted.Config{DisableAutoMigrate: true})))
	xxhash, err := vindexes.CreateVindex("xxhash", "xxhash", nil)
	must(t, err)
	loose, err := vindexes.CreateVindex("unicode_loose_xxhash", "unicode_loose_xxhash", nil)
	must(t, err)
	shard := func(v vindexes.Vindex, val sqltypes.Value) string {
		t.Helper()
		dests, err := v.(vindexes.SingleColumn).Map(context.Background(), nil, []sqltypes.Value{val})
		must(t, err)
		return dests[0].String()
	}
	for _, id := range []uint{1, 42, 1 << 40} {
		ref, err := slotted.RefOf(db, &Post{ID: id}, "likes")
		must(t, err)
		parent, counters := shard(xxhash, sqltypes.NewUint64(uint64(id))), shard(xxhash, sqltypes.NewVarBinary(ref.ID))
		if parent != counters {
			t.Errorf("post %d maps to %s, its counter (record_id %q) to %s", id, parent, ref.ID, counters)
		}
	}
	// A text key under unicode_loose_xxhash (the vindex Vitess suggests for
	// text columns) is not co-located with record_id under xxhash.
	ref, err := slotted.RefOf(db, &Tag{Name: "Go"}, "uses")
	must(t, err)
	if shard(loose, sqltypes.NewVarChar("Go")) == shard(xxhash, sqltypes.NewVarBinary(ref.ID)) {
		t.Error("unicode_loose_xxhash and xxhash agree on a key: the README's advice to use the same vindex is moot")
	}
}
