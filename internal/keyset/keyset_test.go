package keyset

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm/clause"
)

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
	require.NoError(t, err)
	require.Equal(t, rows, seen)
	require.Equal(t, [][]any{nil, {3}, {6}}, afters) // the third page (7) is short: no fourth read
}

func TestWalkStopsOnContextAndVisitError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	read := func([]any) (int, int, []any, error) { t.Fatal("read after cancel"); return 0, 0, nil, nil }
	require.ErrorIs(t, Walk(ctx, 1, nil, read, func(int, []any) error { return nil }), context.Canceled)
	boom := errors.New("boom")
	err := Walk(context.Background(), 1, nil, func([]any) (int, int, []any, error) { return 1, 1, []any{1}, nil },
		func(int, []any) error { return boom })
	require.ErrorIs(t, err, boom)
}

func TestAfterSpellsRowComparisons(t *testing.T) {
	a, b := clause.Column{Name: "a"}, clause.Column{Name: "b"}
	require.Equal(t, clause.Gt{Column: a, Value: 1}, After([]clause.Column{a}, []any{1}, true))
	require.Equal(t, clause.Expr{SQL: "(?, ?) > (?, ?)", Vars: []any{a, b, 1, 2}}, After([]clause.Column{a, b}, []any{1, 2}, true))
	require.Equal(t, clause.Or(clause.Gt{Column: a, Value: 1}, clause.And(clause.Eq{Column: a, Value: 1}, clause.Gt{Column: b, Value: 2})),
		After([]clause.Column{a, b}, []any{1, 2}, false))
}
