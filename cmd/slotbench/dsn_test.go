package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDialectOf(t *testing.T) {
	for dsn, want := range map[string]string{
		"root@tcp(127.0.0.1:3306)/slotted_test?parseTime=true":                       dialectMySQL,
		"mysql://root:pw@localhost:3306/db":                                          dialectMySQL,
		"MYSQL://root@localhost/db":                                                  dialectMySQL,
		"postgres://u:p@localhost:5432/db?sslmode=disable":                           dialectPostgres,
		"postgresql://u@localhost/db":                                                dialectPostgres,
		"host=127.0.0.1 port=5432 user=postgres dbname=slotted_test sslmode=disable": dialectPostgres,
		"postgres://u@h/db?note=@tcp(":                                               dialectPostgres,
		"app.db":                                                                     dialectSQLite,
		"file:/tmp/x.db?_busy_timeout=5000":                                          dialectSQLite,
		"":                                                                           dialectSQLite,
	} {
		assert.Equal(t, want, dialectOf(dsn), dsn)
	}
}

func TestNewTarget(t *testing.T) {
	tg, err := newTarget("app.db", "tag")
	require.NoError(t, err)
	assert.Equal(t, "app.db?_busy_timeout=10000&_journal_mode=WAL", tg.dsn)

	tg, err = newTarget("file:app.db?_busy_timeout=5000", "tag")
	require.NoError(t, err)
	assert.Equal(t, "file:app.db?_busy_timeout=5000&_journal_mode=WAL", tg.dsn, "the user's own busy timeout is kept")

	tg, err = newTarget("", "tag")
	require.NoError(t, err)
	assert.Contains(t, tg.dsn, "slotbench.db?_busy_timeout=10000&_journal_mode=WAL", "empty: a temporary SQLite file")
	tg.cleanup()

	_, err = newTarget(":memory:", "tag")
	assert.ErrorIs(t, err, errUsage)

	tg, err = newTarget("mysql://root:p%40ss@db.example:3307/stats?parseTime=true", "tag")
	require.NoError(t, err)
	assert.Equal(t, dialectMySQL, tg.dialect)
	assert.Equal(t, "root:p@ss@tcp(db.example:3307)/stats?parseTime=true", tg.dsn)
	tg, err = newTarget("mysql://root@localhost/stats", "tag")
	require.NoError(t, err)
	assert.Equal(t, "root@tcp(localhost:3306)/stats", tg.dsn)

	tg, err = newTarget("host=127.0.0.1 dbname=x", "tag")
	require.NoError(t, err)
	assert.Equal(t, "host=127.0.0.1 dbname=x application_name=tag", tg.dsn)
	assert.Equal(t, "tag", tg.appName)
	tg, err = newTarget("postgres://u@h/db?sslmode=disable", "tag")
	require.NoError(t, err)
	assert.Equal(t, "postgres://u@h/db?application_name=tag&sslmode=disable", tg.dsn)
	tg, err = newTarget("host=h application_name=mine", "tag")
	require.NoError(t, err)
	assert.Equal(t, "", tg.appName, "the user's application_name wins; the sampler then counts the whole database")
}
