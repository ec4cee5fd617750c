package slotted_test

import "strconv"

func itoa(n uint) string { return strconv.FormatUint(uint64(n), 10) }
