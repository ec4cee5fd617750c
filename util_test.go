package slotted_test

import (
	"strconv"

	"github.com/google/uuid"
)

func itoa(n uint) string { return strconv.FormatUint(uint64(n), 10) }

func uuidFor(n byte) uuid.UUID { return uuid.UUID{15: n, 6: 0x40, 8: 0x80} }
