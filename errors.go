package slotted

import (
	"fmt"

	"github.com/slotted-go/slotted/internal/errs"
)

// Sentinel errors. Every error the package returns for bad input wraps one of
// these, so callers can branch with errors.Is; none of them is returned after
// anything was written.
var (
	// ErrNotRegistered: the *gorm.DB has no slotted plugin (db.Use(slotted.New(...)) was not called on it).
	ErrNotRegistered = errs.ErrNotRegistered
	// ErrInvalidConfig: a Config field or a `slotted` struct tag is out of range or malformed.
	ErrInvalidConfig = errs.ErrInvalidConfig
	// ErrUnknownCounter: the model has no counter with that tag name or Go field name.
	ErrUnknownCounter = errs.ErrUnknownCounter
	// ErrMissingPrimaryKey: the record's primary key is the zero value or formats to "" (or a Ref is
	// empty), so there is no record_id to count under.
	ErrMissingPrimaryKey = errs.ErrMissingPrimaryKey
	// ErrUnsupportedModel: the value is not a (pointer to a) struct, slice of structs, or has no primary key, or
	// a composite one where it is not supported (a counter cache's child that a SumCounter cache adds up).
	ErrUnsupportedModel = errs.ErrUnsupportedModel
	// ErrUnsupportedKey: the primary key's Go type cannot be turned into a record_id (or RefOfKey's parts do not
	// fit the model's key columns), or a key (record_id,
	// Ref, AddOnce's key, CompactOptions.RecordType/After) is longer than MaxKeyLen, has a NUL byte or is not
	// valid UTF-8, or AddOnce's key is empty.
	ErrUnsupportedKey = errs.ErrUnsupportedKey
	// ErrOverflow: a write would take a slot row past the int64 range (nothing is written), Compact
	// would fold a counter whose total does not fit in int64, or a read's total does not fit in int64.
	ErrOverflow = errs.ErrOverflow
	// ErrCounterCache: a new record sets a counter-cache counter, which only its children may move.
	ErrCounterCache = errs.ErrCounterCache
)

// ErrInvalidArgument: an argument of a windowed read, Top or an ordering scope is out of range: a window
// that ends before it starts or holds more than MaxWindowBuckets buckets, a counter without buckets: where
// a window needs them, a sort direction other than ASC or DESC, a comparison operator, an N below 1, a
// Ref.Slots outside 0..MaxSlots, or a listing's page options or cursor (List, Trending).
var ErrInvalidArgument = errs.ErrInvalidArgument

// ErrOutcomeUnknown: a write's statement failed in a way that leaves its
// outcome open (its connection broke), and its outcome marker could not be
// read either (the server stayed unreachable for 10 s after the failure, or
// past the caller's deadline): the write may or may not have been counted.
// It is the only error besides a context's that leaves a write's outcome
// open (docs/outcomes.md).
var ErrOutcomeUnknown = errs.ErrOutcomeUnknown

// ErrDryRun is returned by the plugin's writes, reads and maintenance calls on
// a DB in gorm's DryRun mode (gorm.Session{DryRun: true}, gorm.Config.DryRun).
// gorm's DryRun builds statements without running them; a counter call
// cannot do its work that way: a write would report an increment that never
// happened (and move the model's field), a read would report 0 for a counter
// it never read. The call runs nothing, and the model's fields are left as
// they were. Scopes (OrderBy, WhereCounter), Table and RefOf keep working under
// DryRun, as they only build SQL; auto-fill and counter caches skip a dry
// run's statements as gorm skips running them.
var ErrDryRun = errs.ErrDryRun

// ErrDeltaOverflow: deltas summed for one counter (the same counter named twice
// in one bulk write, or held by a write-behind Buffer) would overflow int64.
// It wraps ErrOverflow: errors.Is(err, ErrOverflow) catches it too.
var ErrDeltaOverflow = fmt.Errorf("%w: summed deltas overflow int64", ErrOverflow)
