package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// TestConflictOfDriverErrors classifies errors built as the drivers build
// them (their own types, the servers' codes and messages), including the
// distributed engines' transaction conflicts: TiDB speaks the MySQL protocol
// with codes of its own, CockroachDB the PostgreSQL protocol with 40001.
func TestConflictOfDriverErrors(t *testing.T) {
	my := func(n uint16, state, msg string) error {
		e := &mysql.MySQLError{Number: n, Message: msg}
		copy(e.SQLState[:], state)
		return e
	}
	pg := func(code, msg string) error { return &pgconn.PgError{Severity: "ERROR", Code: code, Message: msg} }
	cases := []struct {
		name string
		err  error
		want slotted.Conflict
	}{
		{"mysql deadlock", my(1213, "40001", "Deadlock found when trying to get lock; try restarting transaction"), slotted.Deadlock},
		{"mysql lock wait timeout", my(1205, "HY000", "Lock wait timeout exceeded; try restarting transaction"), slotted.LockTimeout},
		{"mysql duplicate key", my(1062, "23000", "Duplicate entry 'x' for key 'PRIMARY'"), slotted.NoConflict},
		{"tidb write conflict", my(9007, "HY000", "Write conflict, txnStartTS=445014188662194445, conflictStartTS=445014189016088693, conflictCommitTS=445014189016088709, key={tableID=5500, handle=1} primary={tableID=5500, handle=1} [try again later]"), slotted.SerializationFailure},
		{"tidb stale write conflict", my(8005, "HY000", "Write Conflict, txnStartTS is stale"), slotted.SerializationFailure},
		{"tidb select for update conflict", my(8002, "HY000", "[tikv:8002]can not retry select for update statement"), slotted.SerializationFailure},
		{"tidb commit rolled back", my(8022, "HY000", "Error: KV error safe to retry Txn(Mvcc(TxnLockNotFound { start_ts: TimeStamp(425904341916582174) })) [try again later]"), slotted.SerializationFailure},
		{"tidb schema changed", my(8028, "HY000", "Information schema is changed during the execution of the statement"), slotted.NoConflict},
		{"tidb pessimistic deadlock", my(1213, "40001", "Deadlock found when trying to get lock; try restarting transaction"), slotted.Deadlock},
		{"postgres deadlock", pg("40P01", "deadlock detected"), slotted.Deadlock},
		{"postgres lock timeout", pg("55P03", "canceling statement due to lock timeout"), slotted.LockTimeout},
		{"postgres serialization", pg("40001", "could not serialize access due to concurrent update"), slotted.SerializationFailure},
		{"cockroach restart", pg("40001", "restart transaction: TransactionRetryWithProtoRefreshError: WriteTooOldError: write for key /Table/104/1/1/0 at timestamp 1700000000.000000000,0 too old; wrote at 1700000000.000000001,1: \"sql txn\" meta={id=3f0e8b4c key=/Table/104/1/1/0 pri=0.01 epo=0 ts=1700000000.000000001,1 min=1700000000.000000000,0 seq=1} lock=true stat=PENDING rts=1700000000.000000000,0 wto=false gul=1700000000.500000000,0"), slotted.SerializationFailure},
		{"cockroach uncertainty restart", pg("40001", "restart transaction: TransactionRetryWithProtoRefreshError: ReadWithinUncertaintyIntervalError: read at time 1700000000.000000000,0 encountered previous write with future timestamp 1700000000.000000001,0 within uncertainty interval `t <= (local=1700000000.000000002,0, global=1700000000.500000000,0)`"), slotted.SerializationFailure},
		{"cockroach ambiguous result", pg("40003", "result is ambiguous: error=rpc error: code = Unavailable desc = transport is closing"), slotted.NoConflict},
		{"postgres unique violation", pg("23505", "duplicate key value violates unique constraint"), slotted.NoConflict},
		{"context deadline", context.DeadlineExceeded, slotted.NoConflict},
		{"nil", nil, slotted.NoConflict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, slotted.ConflictOf(tc.err), "%v", tc.err)
			if tc.err != nil {
				wrapped := fmt.Errorf("callback: %w", tc.err)
				assert.Equal(t, tc.want, slotted.ConflictOf(wrapped), "wrapped: %v", wrapped)
			}
		})
	}
}

// TestConflictOfSQLiteBusy classifies a real SQLITE_BUSY from whichever SQLite
// driver the suite runs (the default pure-Go one, or -tags sqlite_cgo): a
// second writer with no busy timeout while another holds the write lock.
func TestConflictOfSQLiteBusy(t *testing.T) {
	dsn := sqliteDSN(filepath.Join(t.TempDir(), "busy.db"), 0, false)
	db, err := gorm.Open(sqliteOpen(dsn), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	t.Cleanup(func() { _ = sqlDB.Close() })
	ctx := context.Background()
	holder, err := sqlDB.Conn(ctx)
	require.NoError(t, err)
	defer holder.Close()
	other, err := sqlDB.Conn(ctx)
	require.NoError(t, err)
	defer other.Close()
	_, err = holder.ExecContext(ctx, "BEGIN IMMEDIATE")
	require.NoError(t, err)
	defer holder.ExecContext(ctx, "ROLLBACK") //nolint:errcheck
	_, err = other.ExecContext(ctx, "BEGIN IMMEDIATE")
	require.Error(t, err, sqliteDriverName)
	assert.Equal(t, slotted.Busy, slotted.ConflictOf(err), "%s: %v", sqliteDriverName, err)
	assert.Equal(t, slotted.Busy, slotted.ConflictOf(fmt.Errorf("callback: %w", err)))
}
