package slotted

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/write"
)

// Runner is a background job for applications without a cron: every Interval
// it compacts counters, rolls cached columns up, prunes AddOnce's expired keys
// and/or maintains bucketed counters (MaintainBuckets), until its context ends.
//
//	r := slotted.Runner{
//		Interval: time.Minute,
//		Compact:  &slotted.CompactOptions{MinRows: 10},
//		RollUp:   []any{&Post{}},
//		OnError:  func(err error) { log.Print(err) },
//	}
//	go r.Run(ctx, db)
//
// A failed pass is reported to OnError and the next pass runs on schedule:
// the runner never stops on an error, and a panic in a pass is reported as an
// error too. Several processes may run one each: compaction and roll-up are
// safe to run concurrently, they only repeat work.
type Runner struct {
	// Interval between the starts of two passes; a pass that runs long delays
	// the next rather than overlapping it. The first pass runs at once. Default: 1 minute.
	Interval time.Duration
	// Compact, when non-nil, runs CompactAll with these options every pass
	// (After and Progress as given; each pass starts from After).
	Compact *CompactOptions
	// RollUp lists models (e.g. &Post{}) whose cache columns RollUpAll refreshes every pass.
	RollUp []any
	// PruneKeys deletes AddOnce's expired keys (OnceOptions.ExpireAfter) every pass, on the primary, 1000
	// per statement. Keys without an expiry are never pruned.
	PruneKeys bool
	// Buckets, when non-nil, runs MaintainBuckets with these options for each of its Models every
	// pass: closed buckets compacted, expired ones (keep: tag option) deleted.
	Buckets *BucketOptions
	// OnError receives every error of a pass. Default: the *gorm.DB's logger, at error level.
	OnError func(error)
	// OnPass, when set, is called after every pass with what it did.
	OnPass func(Pass)
}

// Run runs passes until ctx ends, then returns nil. It returns an error at
// once only when the runner cannot work at all (no plugin, nothing to do).
func (r Runner) Run(ctx context.Context, db *gorm.DB) error {
	p, err := liveOf(db)
	if err != nil {
		return err
	}
	if r.Compact == nil && len(r.RollUp) == 0 && !r.PruneKeys && r.Buckets == nil {
		return fmt.Errorf("%w: Runner has nothing to do (set Compact, RollUp, PruneKeys or Buckets)", ErrInvalidConfig)
	}
	if r.Interval == 0 {
		r.Interval = time.Minute
	}
	if r.Interval < 0 {
		return fmt.Errorf("%w: Runner.Interval %v", ErrInvalidConfig, r.Interval)
	}
	if r.OnError == nil {
		r.OnError = func(err error) { db.Logger.Error(ctx, "slotted runner: %v", err) }
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		pass := r.pass(ctx, db.WithContext(ctx))
		if pass.Err != nil && ctx.Err() == nil {
			r.OnError(pass.Err)
		}
		passDone(ctx, p, pass)
		if r.OnPass != nil {
			r.OnPass(pass)
		}
		timer.Reset(max(0, r.Interval-pass.Took))
	}
}

// pass runs one round of work, turning panics into errors.
func (r Runner) pass(ctx context.Context, db *gorm.DB) (pass Pass) {
	pass.Started = time.Now()
	var errs []error
	defer func() {
		if v := recover(); v != nil {
			errs = append(errs, fmt.Errorf("slotted runner: panic: %v", v))
		}
		pass.Took = time.Since(pass.Started)
		pass.Err = errors.Join(errs...)
	}()
	if r.Compact != nil {
		prog, err := CompactAll(db, *r.Compact)
		pass.Compact = prog
		if err != nil {
			errs = append(errs, fmt.Errorf("compact: %w", err))
		}
	}
	for _, model := range r.RollUp {
		if ctx.Err() != nil {
			break
		}
		prog, err := RollUpAll(db, model)
		pass.RollUp = append(pass.RollUp, prog)
		if err != nil {
			errs = append(errs, fmt.Errorf("roll up %T: %w", model, err))
		}
	}
	if r.PruneKeys && ctx.Err() == nil {
		p, err := pluginOf(db)
		if err == nil {
			pass.Pruned, err = p.maint.PruneKeys(ctx, db, p.cfg.Now()) // the clock keys expire by
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("prune keys: %w", err))
		}
	}
	errs = append(errs, r.maintainBuckets(ctx, db, &pass)...)
	if p, err := pluginOf(db); err == nil && ctx.Err() == nil && p.dialect.Markers {
		if pass.Markers, err = p.writes.PruneMarkerRows(ctx, db, write.MarkerNow()); err != nil {
			errs = append(errs, fmt.Errorf("prune outcome markers: %w", err))
		}
	}
	return pass
}

// maintainBuckets is a Runner pass's bucket work.
func (r Runner) maintainBuckets(ctx context.Context, db *gorm.DB, pass *Pass) []error {
	if r.Buckets == nil {
		return nil
	}
	var errs []error
	for _, model := range r.Buckets.Models {
		if ctx.Err() != nil {
			break
		}
		prog, err := MaintainBuckets(db, model, *r.Buckets)
		pass.Buckets = append(pass.Buckets, prog)
		if err != nil {
			errs = append(errs, fmt.Errorf("buckets of %T: %w", model, err))
		}
	}
	return errs
}

// passDone reports a Runner pass.
func passDone(ctx context.Context, p *Plugin, pass Pass) {
	if p != nil && p.cfg.Observer != nil {
		p.cfg.observe(ctx, Event{Kind: EventPass, Start: pass.Started, End: pass.Started.Add(pass.Took), Err: pass.Err, Pass: &pass})
	}
}
