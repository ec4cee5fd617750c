package slotted_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/utils/tests"

	"github.com/slotted-go/slotted"
)

// The library's own module needs only gorm, so these tests run on gorm's
// DummyDialector with DryRun: no driver, no cgo, no server. The integration
// suite on SQLite, MariaDB and PostgreSQL lives in the tests/ module.

type post struct {
	ID    uint
	Likes int64 `gorm:"-" slotted:"likes"`
}

type lastSQL struct {
	logger.Interface
	sql []string
}

func (l *lastSQL) LogMode(logger.LogLevel) logger.Interface { return l }
func (l *lastSQL) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	s, _ := fc()
	l.sql = append(l.sql, s)
}

func dryDB(t *testing.T, cfg slotted.Config) (*gorm.DB, *lastSQL) {
	t.Helper()
	log := &lastSQL{Interface: logger.Discard}
	db, err := gorm.Open(tests.DummyDialector{}, &gorm.Config{DryRun: true, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	cfg.DisableAutoMigrate = true // DummyDialector has no migrator
	if err := db.Use(slotted.New(cfg)); err != nil {
		t.Fatal(err)
	}
	return db, log
}

func TestUseRejectsInvalidConfig(t *testing.T) {
	for _, cfg := range []slotted.Config{
		{Slots: -1},
		{Slots: slotted.MaxSlots + 1},
		{Table: "counters; DROP TABLE posts"},
		{MaxRetries: -2},
		{MinRetryBackoff: time.Second, MaxRetryBackoff: time.Millisecond},
		{MaxBatch: -1},
		{MaxBatch: 1025},
		{MaxInFlight: -1},
		{BatchTimeout: -time.Second},
		{OutcomeMarkers: true, DisableOutcomeMarkers: true},
	} {
		db, err := gorm.Open(tests.DummyDialector{}, &gorm.Config{DryRun: true, Logger: logger.Discard})
		if err != nil {
			t.Fatal(err)
		}
		cfg.DisableAutoMigrate = true
		if err := db.Use(slotted.New(cfg)); !errors.Is(err, slotted.ErrInvalidConfig) {
			t.Errorf("Use(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

func TestNotRegistered(t *testing.T) {
	db, err := gorm.Open(tests.DummyDialector{}, &gorm.Config{DryRun: true, Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := slotted.Increment(db, &post{ID: 1}, "likes"); !errors.Is(err, slotted.ErrNotRegistered) {
		t.Fatalf("Increment without the plugin = %v, want ErrNotRegistered", err)
	}
}

func TestIncrementRendersOneUpsert(t *testing.T) {
	db, log := dryDB(t, slotted.Config{Slots: 4})
	p := post{ID: 42}
	// DryRun renders and logs the upsert; the call reports that nothing was written.
	if err := slotted.Increment(db, &p, "likes"); !errors.Is(err, slotted.ErrDryRun) {
		t.Fatalf("Increment under DryRun = %v, want ErrDryRun", err)
	}
	if len(log.sql) != 1 {
		t.Fatalf("Increment sent %d statements, want 1: %q", len(log.sql), log.sql)
	}
	for _, want := range []string{"INSERT INTO `slotted_counters`", `"posts.likes"`, `"42"`, "ON CONFLICT", "`count`=`slotted_counters`.`count` + 1"} {
		if !strings.Contains(log.sql[0], want) {
			t.Errorf("upsert %q lacks %q", log.sql[0], want)
		}
	}
	if p.Likes != 0 {
		t.Errorf("in-memory field = %d, want 0: nothing was written", p.Likes)
	}
}

func TestBadInputIsTyped(t *testing.T) {
	db, log := dryDB(t, slotted.Config{})
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"unknown counter", slotted.Increment(db, &post{ID: 1}, "nope"), slotted.ErrUnknownCounter},
		{"zero key", slotted.Increment(db, &post{}, "likes"), slotted.ErrMissingPrimaryKey},
		{"non-pointer", slotted.Increment(db, post{ID: 1}, "likes"), slotted.ErrUnsupportedModel},
		{"nil", slotted.Increment(db, nil, "likes"), slotted.ErrUnsupportedModel},
		{"empty ref", slotted.AddRef(db, slotted.Ref{}, 1), slotted.ErrMissingPrimaryKey},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	if len(log.sql) != 0 {
		t.Errorf("bad input sent SQL: %q", log.sql)
	}
}
