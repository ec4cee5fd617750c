package write

import (
	"math"
	"testing"
)

// The statement shapes bound the prepared statements per connection: every batch size maps to a shape
// no larger than itself, and the shapes are numbered densely within the stats array.
func TestShapes(t *testing.T) {
	seen := map[int]bool{}
	for n := 1; n <= MaxBatchRows; n++ {
		s := ShapeFloor(n)
		if s < 1 || s > n || (n <= 8 && s != n) || (s > 8 && s&(s-1) != 0) || (s > 8 && 2*s <= n) {
			t.Fatalf("shapeFloor(%d) = %d", n, s)
		}
		if ShapeFloor(s) != s {
			t.Fatalf("shape %d is not its own floor", s)
		}
		i := shapeIndex(s)
		if i < 0 || i >= maxShapes {
			t.Fatalf("shapeIndex(%d) = %d", s, i)
		}
		seen[s] = true
	}
	if len(seen) != maxShapes {
		t.Fatalf("%d shapes, want %d", len(seen), maxShapes)
	}
	idx := map[int]bool{}
	for s := range seen {
		idx[shapeIndex(s)] = true
	}
	if len(idx) != maxShapes {
		t.Fatalf("shape indexes collide: %v", idx)
	}
	for rows, want := 1, 0; rows <= MaxBatchRows; rows, want = nextShape(rows), want+1 {
		if shapeIndex(rows) != want {
			t.Fatalf("nextShape skips: shapeIndex(%d) = %d, want %d", rows, shapeIndex(rows), want)
		}
	}
}

func TestMergeDelta(t *testing.T) {
	for _, c := range []struct {
		a, b int64
		ok   bool
	}{{1, 2, true}, {math.MaxInt64, 1, false}, {math.MinInt64, -1, false}, {math.MaxInt64, -1, true}, {-5, 5, true}} {
		sum, ok := MergeDelta(c.a, c.b)
		if ok != c.ok || (ok && sum != c.a+c.b) || (!ok && sum != c.a) {
			t.Errorf("mergeDelta(%d, %d) = %d, %v", c.a, c.b, sum, ok)
		}
	}
}
