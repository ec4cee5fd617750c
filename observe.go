package slotted

import (
	"context"
	"time"
)

// Observer receives events from inside the plugin as they end, for metrics
// and traces: the module github.com/slotted-go/slotted/otel implements it
// for OpenTelemetry. Counts that only grow (writes coalesced, retries,
// conflicts by kind, Buffer flushes) are read from Stats and Buffer.Stats at
// collection time instead; the events are for what needs a time or a trace:
// each coalesced statement, each lock conflict, each Runner pass.
//
// Observe is called on the goroutine that did the work, with the context the
// work ran on (the caller's, whose trace a span joins; a coalesced statement
// runs on its leader's), after it ended: keep it short. It must not call the
// plugin on the same DB.
//
//	db.Use(slotted.New(slotted.Config{Observer: obs}))
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// EventKind says what an Event reports.
type EventKind int

const (
	// EventBatch: a coalesced statement carrying several callers' writes ran
	// (with its retries). Rows, Writes, Err.
	EventBatch EventKind = iota + 1
	// EventConflict: a statement or transaction of the plugin met a lock
	// conflict. Conflict, Attempt (from 0), Retried (false: the error is the
	// caller's), Err.
	EventConflict
	// EventPass: a Runner pass ended. Pass.
	EventPass
)

func (k EventKind) String() string {
	switch k {
	case EventBatch:
		return "batch"
	case EventConflict:
		return "conflict"
	case EventPass:
		return "pass"
	}
	return "unknown"
}

// Event is one thing the plugin did; which fields are set depends on Kind.
type Event struct {
	Kind       EventKind
	Start, End time.Time
	Rows       int // EventBatch: counter rows the statement wrote
	Writes     int // EventBatch: Add calls it carried
	Conflict   Conflict
	Attempt    int
	Retried    bool
	Err        error // the outcome: nil when it succeeded
	Pass       *Pass // EventPass
}

// observe hands e to the configured Observer.
func (c Config) observe(ctx context.Context, e Event) {
	if o := c.Observer; o != nil {
		o.Observe(ctx, e)
	}
}
