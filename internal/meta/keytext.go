package meta

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/slotted-go/slotted/internal/errs"
)

// Keys (record_type and record_id, from models, Refs and options) are text:
// valid UTF-8 without NUL bytes, 1..MaxKeyLen bytes. PostgreSQL cannot store
// anything else in a text column (22021), SQLite would store it as text and
// MySQL as whatever bytes it got, so the same key would name one counter on
// one database and fail on another. CheckKey refuses them before any SQL.
func CheckKey(what, s string) error {
	switch {
	case len(s) > errs.MaxKeyLen:
		return fmt.Errorf("%w: %s is %d bytes, longer than %d", errs.ErrUnsupportedKey, what, len(s), errs.MaxKeyLen)
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%w: %s contains a NUL byte", errs.ErrUnsupportedKey, what)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %s is not valid UTF-8", errs.ErrUnsupportedKey, what)
	}
	return nil
}
