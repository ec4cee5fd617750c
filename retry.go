package slotted

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// retryable reports whether err is a transient lock conflict that a fresh
// autocommit statement can get past. It reads driver errors through small
// interfaces and their stable message prefixes instead of importing every driver:
//
//   - PostgreSQL (pgx): SQLSTATE 40P01 deadlock, 40001 serialization failure, 55P03 lock not available;
//   - MySQL/MariaDB (go-sql-driver formats "Error 1213 (40001): ..."): 1213 deadlock, 1205 lock wait timeout;
//   - SQLite: SQLITE_BUSY / SQLITE_LOCKED ("database is locked", "database table is locked").
func retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var state interface{ SQLState() string }
	if errors.As(err, &state) {
		switch state.SQLState() {
		case "40P01", "40001", "55P03":
			return true
		}
		return false
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "Error "); ok {
		if num, _, ok := strings.Cut(rest, " "); ok {
			if n, err := strconv.Atoi(strings.TrimSuffix(num, ":")); err == nil {
				return n == 1213 || n == 1205
			}
		}
	}
	return strings.Contains(msg, "database is locked") || strings.Contains(msg, "database table is locked") ||
		strings.Contains(msg, "SQLITE_BUSY")
}

// withRetry runs op, retrying transient lock conflicts with full-jitter
// exponential backoff. inTx disables retries: a deadlock has already rolled
// the caller's transaction back, so repeating one statement would be wrong.
func (p *Plugin) withRetry(ctx context.Context, inTx bool, op func() error) error {
	for attempt := 0; ; attempt++ {
		err := op()
		if err == nil || inTx || attempt >= p.cfg.MaxRetries || !retryable(err) {
			return err
		}
		if ctx == nil {
			ctx = context.Background()
		}
		ceiling := p.cfg.MinRetryBackoff << min(attempt, 20)
		if ceiling <= 0 || ceiling > p.cfg.MaxRetryBackoff {
			ceiling = p.cfg.MaxRetryBackoff
		}
		if ceiling > 0 {
			t := time.NewTimer(rand.N(ceiling))
			select {
			case <-ctx.Done():
				t.Stop()
				return err
			case <-t.C:
			}
		}
	}
}
