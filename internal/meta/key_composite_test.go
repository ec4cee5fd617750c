package meta

import (
	"strings"
	"testing"
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
