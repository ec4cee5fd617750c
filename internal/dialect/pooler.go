package dialect

import (
	"reflect"
	"regexp"
)

// Transaction-mode poolers (PgBouncer pool_mode=transaction, and the hosted
// poolers built like it) hand each statement outside a transaction to
// whichever server connection is free. A server-side prepared statement made
// on one is missing on the next (26000) or, as pgx names statements by a hash
// of their SQL, already there from another client (42P05). Such deployments
// run pgx on the simple protocol (or exec mode), under which gorm's own
// statements are not prepared; the plugin's stmtPool prepares explicitly,
// so it must step aside too.

// simpleExecMode matches the pgx DSN settings under which pgx prepares
// nothing on the server: simple_protocol, and exec (the unnamed statement,
// parsed and run in one round trip). describe_exec is left out: its describe
// and its execute are two round trips a pooler may split.
var simpleExecMode = regexp.MustCompile(`default_query_exec_mode=(simple_protocol|exec)(\s|&|$)`)

// PrefersUnprepared reports whether the dialector runs PostgreSQL without
// server-side prepared statements: gorm.io/driver/postgres's
// Config.PreferSimpleProtocol, or a DSN whose default_query_exec_mode is
// simple_protocol or exec. Read by reflection: the library imports no driver.
// A pool the user opened with its own pgx config (postgres.Config{Conn: ...})
// is not seen here: such users set Config.DisablePrepared.
//
// There is no recovery from 42P05/26000 once statements were prepared: pgx
// files a statement prepared through database/sql under its SQL text and runs
// every later plain Exec of the same text as that statement, on that
// connection, for as long as the connection lives (a DEALLOCATE through the
// pooler reaches some other server connection). The decision has to be made
// before the first prepare.
func PrefersUnprepared(dialector any) bool {
	v := reflect.ValueOf(dialector)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return false
	}
	field := func(name string) (reflect.Value, bool) {
		sf, ok := v.Type().FieldByName(name)
		if !ok {
			return reflect.Value{}, false
		}
		f, err := v.FieldByIndexErr(sf.Index) // an embedded *Config may be nil
		return f, err == nil
	}
	if f, ok := field("PreferSimpleProtocol"); ok && f.Kind() == reflect.Bool && f.Bool() {
		return true
	}
	if f, ok := field("DSN"); ok && f.Kind() == reflect.String && simpleExecMode.MatchString(f.String()) {
		return true
	}
	return false
}
