package keyset

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"gorm.io/gorm/clause"
)

// The root module's tests use the standard library only: a user's go.sum
// gets gorm's modules and nothing else (scripts/check-gosum.sh).

func TestWalkStopsOnShortPageAndResumesAfterLastKey(t *testing.T) {
	rows := []int{1, 2, 3, 4, 5, 6, 7}
	var afters [][]any
	var seen []int
	err := Walk(context.Background(), 3, nil, func(after []any) ([]int, int, []any, error) {
		afters = append(afters, after)
		var page []int
		for _, r := range rows {
			if (after == nil || r > after[0].(int)) && len(page) < 3 {
				page = append(page, r)
			}
		}
		if len(page) == 0 {
			return nil, 0, nil, nil
		}
		return page, len(page), []any{page[len(page)-1]}, nil
	}, func(page []int, _ []any) error { seen = append(seen, page...); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(seen, rows) {
		t.Errorf("visited %v, want %v", seen, rows)
	}
	if want := [][]any{nil, {3}, {6}}; !reflect.DeepEqual(afters, want) { // the third page (7) is short: no fourth read
		t.Errorf("read after %v, want %v", afters, want)
	}
}

func TestWalkStopsOnContextAndVisitError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	read := func([]any) (int, int, []any, error) { t.Fatal("read after cancel"); return 0, 0, nil, nil }
	if err := Walk(ctx, 1, nil, read, func(int, []any) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled walk: %v", err)
	}
	boom := errors.New("boom")
	err := Walk(context.Background(), 1, nil, func([]any) (int, int, []any, error) { return 1, 1, []any{1}, nil },
		func(int, []any) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("visit error: %v", err)
	}
}

func TestAfterSpellsRowComparisons(t *testing.T) {
	a, b := clause.Column{Name: "a"}, clause.Column{Name: "b"}
	for _, c := range []struct {
		got, want clause.Expression
	}{
		{After([]clause.Column{a}, []any{1}, true), clause.Gt{Column: a, Value: 1}},
		{After([]clause.Column{a, b}, []any{1, 2}, true), clause.Expr{SQL: "(?, ?) > (?, ?)", Vars: []any{a, b, 1, 2}}},
		{After([]clause.Column{a, b}, []any{1, 2}, false), clause.Or(clause.Gt{Column: a, Value: 1}, clause.And(clause.Eq{Column: a, Value: 1}, clause.Gt{Column: b, Value: 2}))},
		{Before([]clause.Column{a}, []any{1}, true), clause.Lt{Column: a, Value: 1}},
		{Before([]clause.Column{a, b}, []any{1, 2}, true), clause.Expr{SQL: "(?, ?) < (?, ?)", Vars: []any{a, b, 1, 2}}},
		{Before([]clause.Column{a, b}, []any{1, 2}, false), clause.Or(clause.Lt{Column: a, Value: 1}, clause.And(clause.Eq{Column: a, Value: 1}, clause.Lt{Column: b, Value: 2}))},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("After = %#v, want %#v", c.got, c.want)
		}
	}
}
