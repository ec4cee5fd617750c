package write

import (
	"testing"
	"time"
)

// TestMarkerPoolRetiresOld: the pool hands out a marker until an hour after
// it was made, then retires it (its row to be deleted) for a new one; the
// birth time in the ID reads back.
func TestMarkerPoolRetiresOld(t *testing.T) {
	t0 := time.UnixMilli(1_764_000_000_000)
	var mp markerPool
	m, stale := mp.get(t0)
	if len(stale) != 0 || !m.Born.Equal(t0) {
		t.Fatalf("new marker: born %v, stale %d", m.Born, len(stale))
	}
	if born, ok := markerBorn(m.Ref.ID); !ok || !born.Equal(t0) {
		t.Fatalf("markerBorn(%q) = %v, %v; want %v", m.Ref.ID, born, ok, t0)
	}
	mp.put(m)
	if again, stale := mp.get(t0.Add(59 * time.Minute)); again != m || len(stale) != 0 {
		t.Fatalf("a marker younger than markerLife was not reused")
	}
	mp.put(m)
	fresh, stale := mp.get(t0.Add(61 * time.Minute))
	if fresh == m || len(stale) != 1 || stale[0] != m {
		t.Fatalf("an hour-old marker was reused (stale %d)", len(stale))
	}
	if !fresh.Born.Equal(t0.Add(61 * time.Minute)) {
		t.Fatalf("the new marker's birth %v", fresh.Born)
	}
	for _, id := range []string{"0123456789abcdef0123456789abcdef", "t01234", "tzzzzzzzzzzzz0123456789abcdef0123456789abcdef"} {
		if _, ok := markerBorn(id); ok {
			t.Errorf("markerBorn(%q) read a time", id)
		}
	}
}
