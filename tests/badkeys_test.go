package tests

import (
	"database/sql/driver"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// Code is a key type whose non-zero values can format to "": its Value trims spaces.
type Code struct{ S string }

func (c Code) Value() (driver.Value, error) { return strings.TrimSpace(c.S), nil }
func (c *Code) Scan(v any) error            { c.S = fmt.Sprint(v); return nil }

type Coded struct {
	ID Code `gorm:"primaryKey;type:varchar(16)"`
	N  int  `gorm:"-" slotted:"n"`
}

// Blob is a byte-string key: an empty, non-nil one formats to "".
type Blob []byte

func (b Blob) Value() (driver.Value, error) { return []byte(b), nil }

type Blobbed struct {
	ID Blob `gorm:"primaryKey;type:varbinary(16)"`
	N  int  `gorm:"-" slotted:"n"`
}

// TestBadKeysRefusedBeforeSQL: keys are valid UTF-8 without NUL bytes and
// never empty. Anything else is refused with a typed error before any SQL is
// sent, the same way on every database (PostgreSQL would answer 22021, MySQL
// would store the bytes, SQLite would store them as text).
func TestBadKeysRefusedBeforeSQL(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "bad keys"}
		require.NoError(t, db.Create(&post).Error)
		rdb, rec := recorded(db)

		good := slotted.Ref{Type: "posts.likes", ID: "1"}
		var bad []struct {
			name string
			ref  slotted.Ref
		}
		for what, s := range map[string]string{"NUL": "a\x00b", "invalid UTF-8": "caf\xe9", "lone continuation": "\x80", "truncated rune": "\xf0\x9f\x90"} {
			bad = append(bad,
				struct {
					name string
					ref  slotted.Ref
				}{"type " + what, slotted.Ref{Type: s, ID: good.ID}},
				struct {
					name string
					ref  slotted.Ref
				}{"id " + what, slotted.Ref{Type: good.Type, ID: s}})
		}

		type call struct {
			name string
			err  error
			fn   func() error
		}
		var cases []call
		for _, b := range bad {
			ref := b.ref
			cases = append(cases,
				call{"AddRef " + b.name, slotted.ErrUnsupportedKey, func() error { return slotted.AddRef(rdb, ref, 1) }},
				call{"CountRef " + b.name, slotted.ErrUnsupportedKey, func() error { _, err := slotted.CountRef(rdb, ref); return err }},
				call{"CompactRef " + b.name, slotted.ErrUnsupportedKey, func() error { return slotted.CompactRef(rdb, ref) }},
				call{"ResetRef " + b.name, slotted.ErrUnsupportedKey, func() error { return slotted.ResetRef(rdb, ref, 5) }},
				call{"CompactAll After " + b.name, slotted.ErrUnsupportedKey, func() error {
					_, err := slotted.CompactAll(rdb, slotted.CompactOptions{After: ref})
					return err
				}},
			)
		}
		for _, name := range []string{"a\x00b", "caf\xe9", "\xff"} {
			tag := Tag{Name: name}
			cases = append(cases,
				call{fmt.Sprintf("Increment tag %q", name), slotted.ErrUnsupportedKey, func() error { return slotted.Increment(rdb, &tag, "uses") }},
				call{fmt.Sprintf("Count tag %q", name), slotted.ErrUnsupportedKey, func() error { _, err := slotted.Count(rdb, &tag, "uses"); return err }},
				call{fmt.Sprintf("Compact tag %q", name), slotted.ErrUnsupportedKey, func() error { return slotted.Compact(rdb, &tag, "uses") }},
				call{fmt.Sprintf("Reset tag %q", name), slotted.ErrUnsupportedKey, func() error { return slotted.Reset(rdb, &tag, "uses", 3) }},
				call{fmt.Sprintf("Load tag %q", name), slotted.ErrUnsupportedKey, func() error { return slotted.Load(rdb, &[]Tag{{Name: "ok"}, tag}) }},
				call{fmt.Sprintf("RefOf tag %q", name), slotted.ErrUnsupportedKey, func() error { _, err := slotted.RefOf(rdb, &tag, "uses"); return err }},
				call{fmt.Sprintf("CompactAll RecordType %q", name), slotted.ErrUnsupportedKey, func() error {
					_, err := slotted.CompactAll(rdb, slotted.CompactOptions{RecordType: name})
					return err
				}},
			)
		}
		blank, empty := Coded{ID: Code{S: "   "}}, Blobbed{ID: Blob{}}
		cases = append(cases,
			call{"Value formats to empty", slotted.ErrMissingPrimaryKey, func() error { return slotted.Increment(rdb, &blank, "n") }},
			call{"Value formats to empty: Count", slotted.ErrMissingPrimaryKey, func() error { _, err := slotted.Count(rdb, &blank, "n"); return err }},
			call{"Value formats to empty: RefOf", slotted.ErrMissingPrimaryKey, func() error { _, err := slotted.RefOf(rdb, &blank, "n"); return err }},
			call{"Value formats to empty: Reset", slotted.ErrMissingPrimaryKey, func() error { return slotted.Reset(rdb, &blank, "n", 2) }},
			call{"empty bytes", slotted.ErrMissingPrimaryKey, func() error { return slotted.Increment(rdb, &empty, "n") }},
			call{"Reset needs a pointer", slotted.ErrUnsupportedModel, func() error { return slotted.Reset(rdb, post, "likes", 7) }},
		)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				var err error
				require.NotPanics(t, func() { err = tc.fn() })
				require.ErrorIs(t, err, tc.err)
			})
		}
		assert.Empty(t, rec.statements(), "every bad key was refused before any SQL")
		assert.Zero(t, counterRows(t, db), "nothing written")
		assert.Zero(t, post.Likes, "Reset of a value did not pretend to set the field")

		// A key of valid UTF-8 is stored and read back byte for byte.
		tag := Tag{Name: "naïve 🐢 \t\u00a0end"}
		require.NoError(t, slotted.Add(db, &tag, "uses", 4))
		n, err := slotted.Count(db, &Tag{Name: tag.Name}, "uses")
		require.NoError(t, err)
		assert.EqualValues(t, 4, n)
	})
}

// TestTableNameLength: Config.Table is checked against the database's
// identifier limit (per part of schema.table) when the plugin is registered,
// instead of failing inside MariaDB (1059) or being truncated by PostgreSQL.
func TestTableNameLength(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		limit := map[string]int{dbMySQL: 64, dbPostgres: 63, dbSQLite: 64}[dialect(db)]
		longest := "c" + strings.Repeat("x", limit-1)
		for _, table := range []string{longest + "x", "s" + strings.Repeat("x", limit) + ".counters", "a." + longest + "x"} {
			t.Run(fmt.Sprintf("%d bytes", len(table)), func(t *testing.T) {
				other := openRaw(t, dialect(db))
				require.ErrorIs(t, other.Use(slotted.New(slotted.Config{Table: table})), slotted.ErrInvalidConfig)
			})
		}
		// The longest allowed name works, and is the name the table gets.
		other := openRaw(t, dialect(db))
		require.NoError(t, other.Migrator().DropTable(longest))
		require.NoError(t, other.Use(slotted.New(slotted.Config{Table: longest})))
		t.Cleanup(func() { _ = other.Migrator().DropTable(longest) })
		assert.True(t, other.Migrator().HasTable(longest))
		require.NoError(t, slotted.AddRef(other, slotted.Ref{Type: "t", ID: "1"}, 2))
		var n int64
		require.NoError(t, other.Table(longest).Where("record_type <> ?", slotted.MarkerType).Count(&n).Error)
		assert.EqualValues(t, 1, n)
	})
}
