// Package errs holds the sentinel errors that the root package exports under
// the same names (slotted.ErrInvalidConfig is errs.ErrInvalidConfig): the
// mechanisms under internal/ return them without importing the root.
// Their documentation is on the root's names, in errors.go.
package errs

import (
	"errors"
	"fmt"
)

var (
	ErrNotRegistered     = errors.New("slotted: plugin not registered on this *gorm.DB")
	ErrInvalidConfig     = errors.New("slotted: invalid configuration")
	ErrUnknownCounter    = errors.New("slotted: unknown counter")
	ErrMissingPrimaryKey = errors.New("slotted: record has no primary key value")
	ErrUnsupportedModel  = errors.New("slotted: unsupported model")
	ErrUnsupportedKey    = errors.New("slotted: unsupported primary key")
	ErrOverflow          = errors.New("slotted: counter out of int64 range")
	ErrCounterCache      = errors.New("slotted: counter caches are counted from their children")
	ErrInvalidArgument   = errors.New("slotted: invalid argument")
)

// MaxKeyLen is slotted.MaxKeyLen: the longest record_type or record_id, in bytes.
const MaxKeyLen = 128

// ErrDryRun is slotted.ErrDryRun.
var ErrDryRun = errors.New("slotted: the DB is in DryRun mode; counters are neither written nor read")

// ErrPastRetention is slotted.ErrPastRetention.
var ErrPastRetention = fmt.Errorf("%w: the window reaches past the counter's keep: retention", ErrInvalidArgument)

// MaxSlots is slotted.MaxSlots: the most slot rows one counter may have.
const MaxSlots = 1 << 16

// ErrOutcomeUnknown is slotted.ErrOutcomeUnknown.
var ErrOutcomeUnknown = errors.New("slotted: outcome unknown: the statement's connection failed and its outcome marker could not be read")
