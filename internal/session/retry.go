package session

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Conflict is the kind of transient lock conflict a database error reports
// (slotted.Conflict).
type Conflict int

const (
	NoConflict           Conflict = iota // not a lock conflict (or no error)
	Deadlock                             // MySQL 1213, PostgreSQL 40P01
	LockTimeout                          // MySQL 1205 (innodb_lock_wait_timeout), PostgreSQL 55P03 (lock_timeout)
	SerializationFailure                 // PostgreSQL and CockroachDB 40001; TiDB write conflicts 9007, 8005, 8002, 8022
	Busy                                 // SQLite SQLITE_BUSY / SQLITE_LOCKED ("database is locked")
)

func (c Conflict) String() string {
	switch c {
	case Deadlock:
		return "deadlock"
	case LockTimeout:
		return "lock wait timeout"
	case SerializationFailure:
		return "serialization failure"
	case Busy:
		return "busy"
	}
	return "none"
}

// ConflictOf classifies err. It reads driver errors through small interfaces
// and their stable message prefixes instead of importing every driver:
// pgx's SQLState(), go-sql-driver/mysql's "Error 1213 (40001): ..." format,
// and SQLite's "database is locked" text. Context errors are NoConflict.
//
// The distributed engines report transaction conflicts their own way, and
// each of these means the transaction was rolled back and can be run again:
// CockroachDB's "restart transaction" errors carry SQLSTATE 40001 (its
// 40003 "result is ambiguous" may have committed and is not a conflict);
// TiDB's optimistic write conflicts are 9007 (TiKV) and 8005 (TiDB), 8002 a
// SELECT FOR UPDATE transaction that hit one, 8022 a commit that failed and
// was rolled back (its docs: "safe to retry"). TiDB's 8028 (schema changed)
// is not a lock conflict and is left to the caller.
func ConflictOf(err error) Conflict {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return NoConflict
	}
	var state interface{ SQLState() string }
	if errors.As(err, &state) {
		switch state.SQLState() {
		case "40P01":
			return Deadlock
		case "55P03":
			return LockTimeout
		case "40001":
			return SerializationFailure
		}
		return NoConflict
	}
	// go-sql-driver/mysql's *MySQLError prints as "Error 1213 (40001): ...";
	// look along the chain, as another callback may have wrapped it.
	for e := err; e != nil; e = errors.Unwrap(e) {
		if rest, ok := strings.CutPrefix(e.Error(), "Error "); ok {
			if num, _, ok := strings.Cut(rest, " "); ok {
				if n, err := strconv.Atoi(strings.TrimSuffix(num, ":")); err == nil {
					switch n {
					case 1213:
						return Deadlock
					case 1205:
						return LockTimeout
					case 9007, 8005, 8002, 8022: // TiDB
						return SerializationFailure
					}
					return NoConflict
				}
			}
		}
	}
	msg := err.Error()
	if strings.Contains(msg, "database is locked") || strings.Contains(msg, "database table is locked") ||
		strings.Contains(msg, "SQLITE_BUSY") {
		return Busy
	}
	return NoConflict
}

// Retrier retries transient lock conflicts with full-jitter exponential
// backoff (Config.MaxRetries, MinRetryBackoff, MaxRetryBackoff).
type Retrier struct {
	MaxRetries             int
	MinBackoff, MaxBackoff time.Duration
	// OnConflict, if set, sees every conflict, retried or final (the
	// plugin's Observer).
	OnConflict func(ctx context.Context, kind Conflict, attempt int, retried bool, err error)

	retries   atomic.Uint64
	conflicts [Busy + 1]atomic.Uint64
}

// Counts returns the retries so far and the conflicts seen, by kind.
func (r *Retrier) Counts() (retries uint64, conflicts map[Conflict]uint64) {
	conflicts = map[Conflict]uint64{}
	for c := Deadlock; c <= Busy; c++ {
		if n := r.conflicts[c].Load(); n > 0 {
			conflicts[c] = n
		}
	}
	return r.retries.Load(), conflicts
}

// Do runs op, retrying transient lock conflicts. inTx disables retries: a
// deadlock has already rolled the caller's transaction back, so repeating one
// statement would be wrong. op runs its statements on the context it gets: a
// conflict it retries past is kept out of the user's logger (quiet.go).
func (r *Retrier) Do(ctx context.Context, inTx bool, op func(ctx context.Context) error) error {
	opCtx, scope := r.scoped(ctx, inTx)
	for attempt := 0; ; attempt++ {
		scope.attempt()
		err := op(opCtx)
		if err == nil {
			return nil
		}
		kind := ConflictOf(err)
		if kind == NoConflict {
			scope.final()
			return err
		}
		r.conflicts[kind].Add(1)
		if inTx || attempt >= r.MaxRetries {
			r.conflicted(ctx, kind, attempt, false, err)
			scope.final()
			return err
		}
		r.conflicted(ctx, kind, attempt, true, err)
		ceiling := r.MinBackoff << min(attempt, 20)
		if ceiling <= 0 || ceiling > r.MaxBackoff {
			ceiling = r.MaxBackoff
		}
		if ceiling > 0 {
			t := time.NewTimer(rand.N(ceiling))
			select {
			case <-ctx.Done():
				t.Stop()
				scope.final()
				return errors.Join(ctx.Err(), err)
			case <-t.C:
			}
		}
		r.retries.Add(1)
	}
}

func (r *Retrier) conflicted(ctx context.Context, kind Conflict, attempt int, retried bool, err error) {
	if r.OnConflict != nil {
		r.OnConflict(ctx, kind, attempt, retried, err)
	}
}
