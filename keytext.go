package slotted

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Keys (record_type and record_id, from models, Refs and options) are text:
// valid UTF-8 without NUL bytes, 1..MaxKeyLen bytes. PostgreSQL cannot store
// anything else in a text column (22021), SQLite would store it as text and
// MySQL as whatever bytes it got, so the same key would name one counter on
// one database and fail on another. XCheckKey refuses them before any SQL.
func XCheckKey(what, s string) error {
	switch {
	case len(s) > MaxKeyLen:
		return fmt.Errorf("%w: %s is %d bytes, longer than %d", ErrUnsupportedKey, what, len(s), MaxKeyLen)
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%w: %s contains a NUL byte", ErrUnsupportedKey, what)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrUnsupportedKey, what)
	}
	return nil
}
