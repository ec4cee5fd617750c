package slotted_test

import (
	"errors"
	"testing"
	"time"

	"github.com/slotted-go/slotted"
)

type optParent struct {
	ID       uint
	Children []optChild
	Kids     int64 `gorm:"-" slotted:"kids"`
}

type optChild struct {
	ID          uint
	OptParentID uint
	On          bool
}

// TestOptionsTwoValues: a second options value is refused before any
// statement is built.
func TestOptionsTwoValues(t *testing.T) {
	db, log := dryDB(t, slotted.Config{})
	calls := map[string]func() error{
		"AddOnce": func() error {
			_, err := slotted.AddOnce(db, &post{ID: 1}, "likes", 1, "k", slotted.OnceOptions{}, slotted.OnceOptions{})
			return err
		},
		"AddRefOnce": func() error {
			_, err := slotted.AddRefOnce(db, slotted.Ref{Type: "t", ID: "1"}, 1, "k", slotted.OnceOptions{}, slotted.OnceOptions{})
			return err
		},
		"CounterCache": func() error {
			return slotted.CounterCache(db, &optParent{}, "Children", "kids", slotted.CacheOptions{}, slotted.CacheOptions{})
		},
		"Sweep": func() error {
			_, err := slotted.Sweep(db, &post{}, slotted.SweepOptions{}, slotted.SweepOptions{})
			return err
		},
		"Fix": func() error {
			_, err := slotted.Fix(db, &post{ID: 1}, slotted.FixOptions{}, slotted.FixOptions{})
			return err
		},
		"List": func() error {
			_, err := slotted.List(db, &post{}, "likes", slotted.ListOptions{Limit: 1}, slotted.ListOptions{Limit: 1})
			return err
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, slotted.ErrInvalidConfig) {
			t.Errorf("%s with two options = %v, want ErrInvalidConfig", name, err)
		}
	}
	if len(log.sql) != 0 {
		t.Errorf("statements sent: %q", log.sql)
	}
}

// TestOnceOptionsInvalid: OnceOptions that contradict themselves.
func TestOnceOptionsInvalid(t *testing.T) {
	db, log := dryDB(t, slotted.Config{})
	for _, o := range []slotted.OnceOptions{
		{ExpireAfter: -time.Second},
		{ExpireAfter: time.Hour, KeepForever: true},
	} {
		if _, err := slotted.AddOnce(db, &post{ID: 1}, "likes", 1, "k", o); !errors.Is(err, slotted.ErrInvalidConfig) {
			t.Errorf("AddOnce(%+v) = %v, want ErrInvalidConfig", o, err)
		}
	}
	if len(log.sql) != 0 {
		t.Errorf("statements sent: %q", log.sql)
	}
}

// TestCacheOptionsMatch: Match is any; only a func(*Child) bool of the
// cache's child model is accepted.
func TestCacheOptionsMatch(t *testing.T) {
	for name, match := range map[string]any{
		"another model": func(*post) bool { return true },
		"by value":      func(optChild) bool { return true },
		"not bool":      func(*optChild) int { return 0 },
		"not a func":    "On",
		"nil func":      (func(*optChild) bool)(nil),
	} {
		db, _ := dryDB(t, slotted.Config{})
		err := slotted.CounterCache(db, &optParent{}, "Children", "kids", slotted.CacheOptions{Where: "on = ?", WhereArgs: []any{true}, Match: match})
		if !errors.Is(err, slotted.ErrInvalidConfig) {
			t.Errorf("Match %s: %v, want ErrInvalidConfig", name, err)
		}
	}
	db, _ := dryDB(t, slotted.Config{})
	err := slotted.CounterCache(db, &optParent{}, "Children", "kids", slotted.CacheOptions{Where: "on = ?", WhereArgs: []any{true}, Match: func(c *optChild) bool { return c.On }})
	if err != nil {
		t.Errorf("Match of the child: %v", err)
	}
}
