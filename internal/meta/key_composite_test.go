package meta

import (
	"strings"
	"testing"

	"gorm.io/gorm/clause"
)

// The encoding is one-to-one and SplitKeyID inverts it, whatever the parts hold.
func TestCompositeKeyEncodingRoundTrips(t *testing.T) {
	alphabet := []string{"", "a", ",", "%", "%2C", "%25", "2C", "%%", ",,", "a,b", "żółw", "\\", "'"}
	seen := map[string][]string{}
	for _, a := range alphabet {
		for _, b := range alphabet {
			for _, c := range []string{"x", ",", "%2"} {
				parts := []string{a, b, c}
				id := JoinKeyParts(parts)
				if prev, dup := seen[id]; dup {
					t.Fatalf("%q and %q both encode as %q", prev, parts, id)
				}
				seen[id] = parts
				if n := strings.Count(id, ","); n != 2 {
					t.Fatalf("%q: %d separators in %q", parts, n, id)
				}
				got, err := SplitKeyID(id)
				if err != nil || strings.Join(got, "\x00") != strings.Join(parts, "\x00") {
					t.Fatalf("SplitKeyID(%q) = %q, %v; want %q", id, got, err, parts)
				}
			}
		}
	}
	for _, bad := range []string{"%", "a%2", "%2c", "%41,b", "a,%"} {
		if _, err := SplitKeyID(bad); err == nil {
			t.Errorf("SplitKeyID(%q) accepted an id no key encodes", bad)
		}
	}
}

// A composite key's In: nothing for no keys, equalities for one (MariaDB
// scans a whole table for an UPDATE by a one-row (a, b) IN), a row-value IN
// for several.
func TestCompositeKeyIn(t *testing.T) {
	k := Key{Parts: []Key{{Column: "tenant_id"}, {Column: "seq"}}}
	if e, ok := k.In("t", nil).(clause.Expr); !ok || e.SQL != "1 = 0" {
		t.Errorf("no keys: %#v", k.In("t", nil))
	}
	and, ok := k.In("t", []any{[]any{1, 2}}).(clause.AndConditions)
	if !ok || len(and.Exprs) != 2 || and.Exprs[1] != (clause.Eq{Column: clause.Column{Table: "t", Name: "seq"}, Value: 2}) {
		t.Errorf("one key: %#v", k.In("t", []any{[]any{1, 2}}))
	}
	in, ok := k.In("t", []any{[]any{1, 2}, []any{3, 4}}).(clause.IN)
	if cols, isRow := in.Column.([]clause.Column); !ok || !isRow || len(cols) != 2 || len(in.Values) != 2 {
		t.Errorf("two keys: %#v", in)
	}
}
