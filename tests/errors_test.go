package tests

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

type Pair struct {
	A int `gorm:"primaryKey;autoIncrement:false"`
	B int `gorm:"primaryKey;autoIncrement:false"`
	N int `gorm:"-" slotted:"n"`
}

type NoKey struct {
	Name string
	N    int `gorm:"-" slotted:"n"`
}

type ArrayKey struct {
	ID [4]byte `gorm:"primaryKey"`
	N  int     `gorm:"-" slotted:"n"`
}

type StringCounter struct {
	ID uint
	N  string `gorm:"-" slotted:"n"`
}

type BadTag struct {
	ID uint
	N  int `gorm:"-" slotted:"n;slots:0"`
}

type UnknownOption struct {
	ID uint
	N  int `gorm:"-" slotted:"n;colour:red"`
}

type DuplicateName struct {
	ID uint
	A  int `gorm:"-" slotted:"n"`
	B  int `gorm:"-" slotted:"n"`
}

func TestBadInputWritesNothing(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "bad"}
		require.NoError(t, db.Create(&post).Error)
		long := string(make([]byte, slotted.MaxKeyLen+1))

		cases := []struct {
			name string
			err  error
			call func() error
		}{
			{"unknown counter", slotted.ErrUnknownCounter, func() error { return slotted.Increment(db, &post, "dislikes") }},
			{"zero primary key", slotted.ErrMissingPrimaryKey, func() error { return slotted.Increment(db, &Post{}, "likes") }},
			{"empty string key", slotted.ErrMissingPrimaryKey, func() error { return slotted.Increment(db, &Tag{}, "uses") }},
			{"key too long", slotted.ErrUnsupportedKey, func() error { return slotted.Increment(db, &Tag{Name: long}, "uses") }},
			{"array key", slotted.ErrUnsupportedKey, func() error { return slotted.Increment(db, &ArrayKey{ID: [4]byte{1}}, "n") }},
			{"composite key with a zero part", slotted.ErrMissingPrimaryKey, func() error { return slotted.Increment(db, &Pair{A: 1}, "n") }},
			{"no primary key", slotted.ErrUnsupportedModel, func() error { return slotted.Increment(db, &NoKey{Name: "x"}, "n") }},
			{"write to a value", slotted.ErrUnsupportedModel, func() error { return slotted.Increment(db, post, "likes") }},
			{"nil model", slotted.ErrUnsupportedModel, func() error { return slotted.Increment(db, nil, "likes") }},
			{"nil pointer", slotted.ErrUnsupportedModel, func() error { return slotted.Increment(db, (*Post)(nil), "likes") }},
			{"not a struct", slotted.ErrUnsupportedModel, func() error { n := 5; return slotted.Increment(db, &n, "likes") }},
			{"string counter field", slotted.ErrInvalidConfig, func() error { return slotted.Increment(db, &StringCounter{ID: 1}, "n") }},
			{"bad slots option", slotted.ErrInvalidConfig, func() error { return slotted.Increment(db, &BadTag{ID: 1}, "n") }},
			{"unknown tag option", slotted.ErrInvalidConfig, func() error { return slotted.Increment(db, &UnknownOption{ID: 1}, "n") }},
			{"duplicate counter name", slotted.ErrInvalidConfig, func() error { return slotted.Increment(db, &DuplicateName{ID: 1}, "n") }},
			{"empty ref", slotted.ErrMissingPrimaryKey, func() error { return slotted.AddRef(db, slotted.Ref{Type: "t"}, 1) }},
			{"long ref", slotted.ErrUnsupportedKey, func() error { return slotted.AddRef(db, slotted.Ref{Type: "t", ID: long}, 1) }},
			{"count unknown", slotted.ErrUnknownCounter, func() error { _, err := slotted.Count(db, post, "nope"); return err }},
			{"count missing key", slotted.ErrMissingPrimaryKey, func() error { _, err := slotted.Count(db, Post{}, "likes"); return err }},
			{"load value struct", slotted.ErrUnsupportedModel, func() error { return slotted.Load(db, post) }},
			{"load non-struct", slotted.ErrUnsupportedModel, func() error { return slotted.Load(db, &[]int{1}) }},
			{"load nil", slotted.ErrUnsupportedModel, func() error { return slotted.Load(db, nil) }},
			{"load unknown", slotted.ErrUnknownCounter, func() error { return slotted.Load(db, &post, "nope") }},
			{"load missing key", slotted.ErrMissingPrimaryKey, func() error { return slotted.Load(db, &[]Post{post, {}}) }},
			{"refof unknown", slotted.ErrUnknownCounter, func() error { _, err := slotted.RefOf(db, &post, "nope"); return err }},
			{"sweep nil", slotted.ErrUnsupportedModel, func() error { _, err := slotted.Sweep(db, nil); return err }},
			{"sweep no counters", slotted.ErrUnknownCounter, func() error { _, err := slotted.Sweep(db, &Base{}); return err }},
			{"roll up nil", slotted.ErrUnsupportedModel, func() error { _, err := slotted.RollUpAll(db, nil); return err }},
			{"roll up int", slotted.ErrUnsupportedModel, func() error { return slotted.RollUp(db, 5) }},
			{"compact negative", slotted.ErrInvalidConfig, func() error { _, err := slotted.CompactAll(db, slotted.CompactOptions{MinRows: -1}); return err }},
			{"reset unknown", slotted.ErrUnknownCounter, func() error { return slotted.Reset(db, &post, "nope", 1) }},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				var err error
				require.NotPanics(t, func() { err = tc.call() })
				require.ErrorIs(t, err, tc.err)
			})
		}
		assert.Zero(t, counterRows(t, db), "no bad call wrote a row")
		assert.Zero(t, post.Likes)

		// Auto-fill reports a broken model on the query instead of ignoring it.
		require.NoError(t, db.AutoMigrate(&StringCounter{}))
		require.NoError(t, db.Create(&StringCounter{ID: 1}).Error)
		var sc []StringCounter
		require.ErrorIs(t, db.Find(&sc).Error, slotted.ErrInvalidConfig)
		require.NoError(t, db.Migrator().DropTable(&StringCounter{}))
	})
}

func TestNotRegistered(t *testing.T) {
	db := openRaw(t, dbSQLite)
	post := Post{ID: 1}
	require.ErrorIs(t, slotted.Increment(db, &post, "likes"), slotted.ErrNotRegistered)
	_, err := slotted.Count(db, &post, "likes")
	require.ErrorIs(t, err, slotted.ErrNotRegistered)
	require.ErrorIs(t, slotted.Load(db, &post), slotted.ErrNotRegistered)
	require.ErrorIs(t, slotted.AddRef(db, slotted.Ref{Type: "a", ID: "b"}, 1), slotted.ErrNotRegistered)
	require.ErrorIs(t, slotted.Migrate(db), slotted.ErrNotRegistered)
	require.ErrorIs(t, slotted.Table(db).Find(&[]slotted.SlottedCounter{}).Error, slotted.ErrNotRegistered)
	require.ErrorIs(t, slotted.Increment(nil, &post, "likes"), slotted.ErrNotRegistered)
}

func TestInvalidConfig(t *testing.T) {
	for name, cfg := range map[string]slotted.Config{
		"negative slots":   {Slots: -1},
		"too many slots":   {Slots: slotted.MaxSlots + 1},
		"injected table":   {Table: "x; DROP TABLE posts"},
		"quoted table":     {Table: "`x`"},
		"bad retries":      {MaxRetries: -2},
		"inverted backoff": {MinRetryBackoff: 10, MaxRetryBackoff: 5},
	} {
		t.Run(name, func(t *testing.T) {
			db := openRaw(t, dbSQLite)
			require.ErrorIs(t, db.Use(slotted.New(cfg)), slotted.ErrInvalidConfig)
			assert.False(t, db.Migrator().HasTable(slotted.DefaultTable), "nothing was created")
		})
	}
	db := openRaw(t, dbSQLite)
	require.NoError(t, db.Use(slotted.New(slotted.Config{})))
	require.ErrorIs(t, db.Use(slotted.New(slotted.Config{})), gorm.ErrRegistered)
}
