package tests

import (
	"strconv"

	"github.com/google/uuid"

	"github.com/slotted-go/slotted"
)

func itoa(n uint) string { return strconv.FormatUint(uint64(n), 10) }

func uuidFor(n byte) uuid.UUID { return uuid.UUID{15: n, 6: 0x40, 8: 0x80} }

// retryable reports whether the plugin retries err.
func retryable(err error) bool { return slotted.ConflictOf(err) != slotted.NoConflict }
