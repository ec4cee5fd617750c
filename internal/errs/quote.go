package errs

import (
	"strconv"
	"unicode/utf8"
)

// MaxQuoted is how many bytes of a caller's input Quote keeps.
const MaxQuoted = 64

// Quote is %q for a caller's input in an error message, cut at MaxQuoted
// bytes (on a rune boundary) with an ellipsis and the full length: an error
// must not grow with whatever a client sent (a 1 MB window spec made a 1 MB
// message).
func Quote(s string) string {
	if len(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	cut := MaxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "… (" + strconv.Itoa(len(s)) + " bytes)"
}
