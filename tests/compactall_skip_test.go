package tests

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// TestCompactAllSkipsLockedCounter: a counter whose compaction keeps failing
// (its rows are locked by another connection past the lock timeout, as a hot
// counter on Galera keeps failing certification) holds back only itself.
// CompactAll compacts the counters after it, lists it in Skipped and says so
// in its error; the next run, with the lock gone, compacts it too.
func TestCompactAllSkipsLockedCounter(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		const typ = "skip.test"
		hot := slotted.Ref{Type: typ, ID: "a"} // first in key order: the first batch holds it
		refs := []slotted.Ref{hot}
		for _, id := range "bcdefghijk" {
			refs = append(refs, slotted.Ref{Type: typ, ID: string(id)})
		}
		for _, ref := range refs {
			for slot := range 3 {
				require.NoError(t, db.Create(&slotted.SlottedCounter{RecordType: slotted.Key(ref.Type),
					RecordID: slotted.Key(ref.ID), Slot: int32(slot), Count: int64(slot + 1)}).Error)
			}
		}
		release := holdLock(t, db, hot)
		singleConn(t, db)

		prog, err := slotted.CompactAll(db, slotted.CompactOptions{RecordType: typ, BatchSize: 100})
		release()
		require.Error(t, err, "the skipped counter is reported")
		assert.NotEqual(t, slotted.NoConflict, slotted.ConflictOf(err), "as the lock conflict it was: %v", err)
		assert.Equal(t, len(refs), prog.Counters)
		if dialect(db) == dbSQLite {
			// SQLite's lock is the whole database: every counter waits, none is lost.
			assert.Equal(t, refs, prog.Skipped)
		} else {
			assert.Equal(t, []slotted.Ref{hot}, prog.Skipped)
			assert.EqualValues(t, 3, slotRows(t, db, hot), "the locked counter is left as it was")
			for _, ref := range refs[1:] {
				assert.EqualValues(t, 1, slotRows(t, db, ref), "%v compacted past the locked counter", ref)
			}
		}
		for _, ref := range refs {
			n, err := slotted.CountRef(db, ref)
			require.NoError(t, err)
			assert.EqualValues(t, 6, n, "%v keeps its total", ref)
		}

		prog, err = slotted.CompactAll(db, slotted.CompactOptions{RecordType: typ})
		require.NoError(t, err)
		assert.Empty(t, prog.Skipped)
		for _, ref := range refs {
			assert.EqualValues(t, 1, slotRows(t, db, ref))
		}
	}, slotted.Config{MaxRetries: 1, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: time.Millisecond})
}
