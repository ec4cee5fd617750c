package countercache

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/slotted-go/slotted/internal/errs"
)

type textKey [2]byte

func (k textKey) String() string { return string(k[:]) }

func TestFKID(t *testing.T) {
	seven := uint(7)
	var none *uint
	cases := []struct {
		in   any
		id   string
		ok   bool
		fail bool
	}{
		{uint(42), "42", true, false},
		{int64(-3), "-3", true, false},
		{&seven, "7", true, false},
		{none, "", false, false},
		{nil, "", false, false},
		{uint(0), "", false, false},
		{"", "", false, false},
		{"ann", "ann", true, false},
		{sql.NullInt64{Int64: 9, Valid: true}, "9", true, false},
		{sql.NullInt64{}, "", false, false},
		{sql.NullString{String: "x", Valid: true}, "x", true, false},
		{textKey{'a', 'b'}, "ab", true, false},
		{strings.Repeat("k", errs.MaxKeyLen+1), "", false, true},
		{1.5, "", false, true},
	}
	for _, c := range cases {
		id, ok, err := fkID(c.in)
		if (err != nil) != c.fail || id != c.id || ok != c.ok {
			t.Errorf("fkID(%#v) = %q, %v, %v; want %q, %v, fail %v", c.in, id, ok, err, c.id, c.ok, c.fail)
		}
		if err != nil && !errors.Is(err, errs.ErrUnsupportedKey) {
			t.Errorf("fkID(%#v): %v does not wrap errs.ErrUnsupportedKey", c.in, err)
		}
	}
}

func TestToInt64(t *testing.T) {
	n := int32(-5)
	cases := []struct {
		in   any
		want int64
		fail bool
	}{
		{int64(12), 12, false},
		{uint16(3), 3, false},
		{&n, -5, false},
		{(*int64)(nil), 0, false},
		{nil, 0, false},
		{sql.NullInt64{Int64: 4, Valid: true}, 4, false},
		{sql.NullInt64{}, 0, false},
		{uint64(1) << 63, 0, true},
		{"12", 0, true},
		{1.5, 0, true},
	}
	for _, c := range cases {
		got, err := toInt64(c.in)
		if (err != nil) != c.fail || got != c.want {
			t.Errorf("toInt64(%#v) = %d, %v; want %d, fail %v", c.in, got, err, c.want, c.fail)
		}
	}
}
