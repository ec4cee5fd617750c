package session

import (
	"context"
	"database/sql"
	"fmt"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/dialect"
)

// database/sql's Tx.Commit takes no context, and go-sql-driver/mysql does
// not watch the context during COMMIT: a server that stalls at COMMIT holds
// the caller until it answers, whatever the caller's deadline (a plain gorm
// transaction does the same). Every transaction the plugin opens for itself
// therefore commits through awaitCommit, which gives up waiting when the
// caller's context ends. The COMMIT itself goes on in the background and its
// connection returns to the pool when it ends; the caller gets its context's
// error, whose outcome is unknown like any write cut short by its context
// (docs/outcomes.md says, per call, how to learn it or why running it again
// is safe).

// AwaitCommit runs commit and returns its error, or an error wrapping
// ctx.Err() once ctx ends first. A context that can never end costs nothing.
func AwaitCommit(ctx context.Context, commit func() error) error {
	if ctx.Done() == nil {
		return commit()
	}
	done := make(chan error, 1)
	go func() { done <- commit() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		select {
		case err := <-done: // both ready: the COMMIT's answer is the better one
			return err
		default:
		}
		return fmt.Errorf("slotted: COMMIT had not answered when the context ended (it may still commit): %w", ctx.Err())
	}
}

// OwnTx is gorm's Transaction for the plugin's own transactions, with the
// COMMIT awaited by ctx: fn runs on the caller's goroutine (whatever it
// writes into the caller's values stays ordered before the return), a
// failing or panicking fn rolls back.
func OwnTx(ctx context.Context, db *gorm.DB, opts *sql.TxOptions, fn func(tx *gorm.DB) error) (err error) {
	tx := db.Begin(opts)
	if tx.Error != nil {
		return tx.Error
	}
	committing := false
	defer func() {
		if !committing {
			tx.Rollback()
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	committing = true
	return AwaitCommit(ctx, func() error { return tx.Commit().Error })
}

// GaleraTx is OwnTx on one connection that first runs the causal wait, then
// BEGIN: the connection is held by gorm's Connection, whose end waits for the
// transaction, so that part runs on a goroutine of its own and hands the
// transaction over; fn still runs on the caller's goroutine.
func GaleraTx(ctx context.Context, base *gorm.DB, opts *sql.TxOptions, fn func(tx *gorm.DB) error) error {
	began := make(chan *gorm.DB, 1)
	commit := make(chan bool, 1) // true: COMMIT, false: ROLLBACK
	ended := make(chan error, 1)
	go func() {
		ended <- base.Connection(func(conn *gorm.DB) error {
			if err := Pin(Routed(conn)).Exec(dialect.CausalWait).Error; err != nil {
				return err
			}
			tx := conn.Begin(opts)
			if tx.Error != nil {
				return tx.Error
			}
			began <- tx
			if !<-commit {
				return tx.Rollback().Error
			}
			return tx.Commit().Error
		})
	}()
	var tx *gorm.DB
	select {
	case tx = <-began:
	case err := <-ended: // no transaction began
		return err
	}
	decided := false
	defer func() {
		if !decided { // fn panicked
			commit <- false
			<-ended
		}
	}()
	if err := fn(tx); err != nil {
		decided = true
		commit <- false
		<-ended
		return err
	}
	decided = true
	commit <- true
	return AwaitCommit(ctx, func() error { return <-ended })
}
