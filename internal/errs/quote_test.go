package errs

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	if got := Quote("7x"); got != `"7x"` {
		t.Errorf("Quote(7x) = %s", got)
	}
	long := strings.Repeat("ab", 1<<19)
	if got, want := Quote(long), `"`+long[:MaxQuoted]+`"… (1048576 bytes)`; got != want {
		t.Errorf("Quote(1 MB) = %s, want %s", got, want)
	}
	// A rune across the cut is left out whole, not split into invalid UTF-8.
	s := strings.Repeat("a", MaxQuoted-1) + "é" + strings.Repeat("z", 10)
	if got, want := Quote(s), `"`+strings.Repeat("a", MaxQuoted-1)+`"… (75 bytes)`; got != want {
		t.Errorf("Quote(rune at the cut) = %s, want %s", got, want)
	}
}
