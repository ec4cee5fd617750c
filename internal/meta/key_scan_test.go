package meta

import (
	"errors"
	"reflect"
	"sync"
	"testing"

	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted/internal/errs"
)

type scanPair struct {
	Org    uint   `gorm:"primaryKey;autoIncrement:false"`
	Handle string `gorm:"primaryKey"`
}

type scanOne struct{ ID int64 }

func modelOf(t *testing.T, v any) *Model {
	t.Helper()
	s, err := schema.Parse(v, &sync.Map{}, schema.NamingStrategy{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := newRecordKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return &Model{Type: s.ModelType, Table: s.Table, Key: k}
}

// fakeRow scans vals into dests as database/sql would for these types.
func fakeRow(vals ...any) func(dest ...any) error {
	return func(dest ...any) error {
		for i, d := range dest {
			reflect.ValueOf(d).Elem().Set(reflect.ValueOf(vals[i]))
		}
		return nil
	}
}

// ScanKey reads the key columns ColumnsIn selects and gives Parse's value and ID's record_id.
func TestScanKey(t *testing.T) {
	m := modelOf(t, &scanPair{})
	if got, want := m.Key.ColumnsIn("t"), []clause.Column{{Table: "t", Name: "org"}, {Table: "t", Name: "handle"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("ColumnsIn = %v, want %v", got, want)
	}
	var total int64
	key, id, err := m.ScanKey(fakeRow(uint(7), "a,b%", int64(42)), &total)
	if err != nil || id != "7,a%2Cb%25" || total != 42 || !reflect.DeepEqual(key, []any{uint(7), "a,b%"}) {
		t.Fatalf("ScanKey = %v, %q, %v (total %d)", key, id, err, total)
	}
	if parsed, ok := m.Key.Parse(id); !ok || !reflect.DeepEqual(m.Key.PartsOf(parsed), []any{uint64(7), "a,b%"}) {
		t.Errorf("Parse(%q) = %v, %v", id, parsed, ok)
	}
	if _, _, err := m.ScanKey(fakeRow(uint(7), "", int64(0)), &total); !errors.Is(err, errs.ErrMissingPrimaryKey) {
		t.Errorf("a zero part: %v", err)
	}

	one := modelOf(t, &scanOne{})
	key, id, err = one.ScanKey(fakeRow(int64(42)))
	if err != nil || id != "42" || key != int64(42) || !reflect.DeepEqual(one.Key.PartsOf(key), []any{int64(42)}) {
		t.Errorf("single ScanKey = %v, %q, %v", key, id, err)
	}
}
