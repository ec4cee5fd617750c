package session

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// A lock conflict that Retrier.Do retries and then gets past is no failure:
// the caller's call succeeds. gorm's logger would still print the attempt
// that conflicted as an error line (19 red "Deadlock found" lines in one 20-s
// run in which no call failed). So, inside a retry scope, the statement that
// conflicted is not traced when it fails: slotted:quiet_retry (after every
// chain's execution) keeps its trace in the scope, and Retrier.Do hands that
// trace to the logger only when the conflict is final (retries exhausted, the
// context done). A conflict that is retried goes to the logger's Info level
// instead ("slotted: retrying after ..."), which gorm's default logger prints
// with the SQL only at logger.Info, where it prints every statement anyway.
// Every other statement, the retried attempt included, is traced as gorm
// does. Retries also show in Stats (Retries, Conflicts) and to an Observer.

// retryScope is one Retrier.Do call's deferred trace. Retrier.Do puts it in
// the context its op gets; the plugin's statements run on that context.
type retryScope struct {
	begin time.Time // of the attempt: the elapsed time a replayed line shows
	trace func()    // the last conflicting statement's trace, not yet printed
	info  func()    // the same statement at Info level, for a retry
}

type retryScopeKey struct{}

// scoped returns ctx carrying a fresh scope, or ctx itself when nothing will
// be retried (inside the caller's transaction every conflict is final).
func (r *Retrier) scoped(ctx context.Context, inTx bool) (context.Context, *retryScope) {
	if inTx || r.MaxRetries == 0 {
		return ctx, nil
	}
	s := &retryScope{}
	return context.WithValue(ctx, retryScopeKey{}, s), s
}

// quietRetry is the slotted:quiet_retry callback, last on every chain. It costs
// nothing for statements that succeed.
func quietRetry(db *gorm.DB) {
	if db.Error == nil || db.Statement.SQL.Len() == 0 || db.Statement.Context == nil {
		return
	}
	s, ok := db.Statement.Context.Value(retryScopeKey{}).(*retryScope)
	if !ok || ConflictOf(db.Error) == NoConflict {
		return
	}
	stmt, lg, d := db.Statement, db.Logger, db.Dialector
	ctx, query, vars, rows, err, begin := stmt.Context, stmt.SQL.String(), stmt.Vars, db.RowsAffected, db.Error, s.begin
	explain := func() (string, int64) {
		q, v := query, vars
		if filter, ok := lg.(gorm.ParamsFilter); ok {
			q, v = filter.ParamsFilter(ctx, query, vars...)
		}
		return d.Explain(q, v...), rows
	}
	s.trace = func() { lg.Trace(ctx, begin, explain, err) }
	s.info = func() {
		q, _ := explain()
		lg.Info(ctx, "slotted: retrying after a lock conflict (%v): %s", err, q)
	}
	// gorm traces a statement only when its SQL is set, and resets it after the trace anyway.
	stmt.SQL.Reset()
}

// attempt starts an attempt: the previous one's conflict was retried, so
// its trace goes to Info level instead.
func (s *retryScope) attempt() {
	if s == nil {
		return
	}
	if s.trace != nil {
		s.info()
	}
	s.begin, s.trace, s.info = time.Now(), nil, nil
}

// final prints the trace of the conflict that ends the retries.
func (s *retryScope) final() {
	if s != nil && s.trace != nil {
		s.trace()
		s.trace = nil
	}
}

// RegisterQuietRetry puts slotted:quiet_retry after every chain's execution.
func RegisterQuietRetry(db *gorm.DB) error {
	cb := db.Callback()
	for _, r := range []interface {
		Register(string, func(*gorm.DB)) error
	}{cb.Create().After("gorm:create"), cb.Query().After("gorm:query"), cb.Update().After("gorm:update"),
		cb.Delete().After("gorm:delete"), cb.Raw().After("gorm:raw"), cb.Row().After("gorm:row")} {
		if err := r.Register("slotted:quiet_retry", quietRetry); err != nil {
			return err
		}
	}
	return nil
}
