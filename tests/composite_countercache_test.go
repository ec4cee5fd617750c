package tests

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// Team is a counter-cache parent with a composite key; its players point at
// it with a two-column foreign key.
type Team struct {
	OrgID     uint     `gorm:"primaryKey;autoIncrement:false"`
	Slug      string   `gorm:"primaryKey;size:64"`
	Players   int64    `gorm:"-" slotted:"players"`
	Points    int64    `gorm:"-" slotted:"points"`
	Roster    []Player `gorm:"foreignKey:OrgID,TeamSlug;references:OrgID,Slug"`
	UpdatedAt time.Time
}

type Player struct {
	ID        uint
	OrgID     uint
	TeamSlug  *string `gorm:"size:64"`
	Score     int64
	DeletedAt gorm.DeletedAt `gorm:"index"`
}

func teamDB(t *testing.T, db *gorm.DB, opts ...slotted.CacheOptions) {
	t.Helper()
	require.NoError(t, db.Migrator().DropTable(&Player{}, &Team{}))
	require.NoError(t, db.AutoMigrate(&Team{}, &Player{}))
	t.Cleanup(func() { _ = db.Migrator().DropTable(&Player{}, &Team{}) })
	require.NoError(t, slotted.CounterCache(db, &Team{}, "Roster", "players", opts...))
	require.NoError(t, slotted.CounterCache(db, &Team{}, "Roster", "points", slotted.CacheOptions{Sum: "Score"}))
}

// FixSummary is what FixAll reports: batches, records, drifted counters.
type FixSummary struct{ Batches, Records, Drifted int }

func slug(s string) *string { return &s }

// teamCounts reads every team's two counters, by "org/slug".
func teamCounts(t *testing.T, db *gorm.DB) map[string][2]int64 {
	t.Helper()
	var teams []Team
	require.NoError(t, db.Find(&teams).Error)
	out := map[string][2]int64{}
	for _, tm := range teams {
		out[fmt.Sprintf("%d/%s", tm.OrgID, tm.Slug)] = [2]int64{tm.Players, tm.Points}
	}
	return out
}

// sourceCounts counts the live players of every team from the players table.
func sourceCounts(t *testing.T, db *gorm.DB) map[string][2]int64 {
	t.Helper()
	var teams []Team
	require.NoError(t, slotted.WithoutFill(db).Find(&teams).Error)
	out := map[string][2]int64{}
	for _, tm := range teams {
		var players []Player
		require.NoError(t, db.Where("org_id = ? AND team_slug = ?", tm.OrgID, tm.Slug).Find(&players).Error)
		var sum int64
		for _, p := range players {
			sum += p.Score
		}
		out[fmt.Sprintf("%d/%s", tm.OrgID, tm.Slug)] = [2]int64{int64(len(players)), sum}
	}
	return out
}

func TestCompositeKeyCounterCache(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		teamDB(t, db)
		teams := []Team{{OrgID: 1, Slug: "a,b"}, {OrgID: 1, Slug: "a"}, {OrgID: 2, Slug: "a,b"}, {OrgID: 2, Slug: "50%"}}
		require.NoError(t, db.Create(&teams).Error)
		players := []Player{
			{OrgID: 1, TeamSlug: slug("a,b"), Score: 1}, {OrgID: 1, TeamSlug: slug("a,b"), Score: 2}, {OrgID: 1, TeamSlug: slug("a,b"), Score: 4},
			{OrgID: 1, TeamSlug: slug("a"), Score: 8}, {OrgID: 1, TeamSlug: slug("a"), Score: 16},
			{OrgID: 2, TeamSlug: slug("a,b"), Score: 32},
			{OrgID: 2, TeamSlug: nil, Score: 64}, // no team: counts nowhere
		}
		require.NoError(t, db.Create(&players).Error)
		want := map[string][2]int64{"1/a,b": {3, 7}, "1/a": {2, 24}, "2/a,b": {1, 32}, "2/50%": {0, 0}}
		assert.Equal(t, want, teamCounts(t, db))

		// A move of one part of the foreign key, then of the other, then of both.
		require.NoError(t, db.Model(&players[0]).Update("org_id", 2).Error)
		want["1/a,b"], want["2/a,b"] = [2]int64{2, 6}, [2]int64{2, 33}
		assert.Equal(t, want, teamCounts(t, db))
		require.NoError(t, db.Model(&players[3]).Update("team_slug", "a,b").Error)
		want["1/a"], want["1/a,b"] = [2]int64{1, 16}, [2]int64{3, 14}
		assert.Equal(t, want, teamCounts(t, db))
		require.NoError(t, db.Model(&players[6]).Updates(map[string]any{"org_id": 2, "team_slug": "50%"}).Error)
		want["2/50%"] = [2]int64{1, 64}
		assert.Equal(t, want, teamCounts(t, db))
		// A bulk move by condition.
		require.NoError(t, db.Model(&Player{}).Where("org_id = ? AND team_slug = ?", 1, "a,b").Update("team_slug", "a").Error)
		want["1/a,b"], want["1/a"] = [2]int64{0, 0}, [2]int64{4, 30}
		assert.Equal(t, want, teamCounts(t, db))

		// Deletes (soft), and a rolled-back create.
		require.NoError(t, db.Delete(&players[4]).Error)
		want["1/a"] = [2]int64{3, 14}
		assert.Equal(t, want, teamCounts(t, db))
		require.Error(t, db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, tx.Create(&Player{OrgID: 2, TeamSlug: slug("50%"), Score: 1}).Error)
			return gorm.ErrInvalidTransaction
		}))
		assert.Equal(t, want, teamCounts(t, db))
		assert.Equal(t, sourceCounts(t, db), teamCounts(t, db))

		// Fix repairs changes made behind the plugin's back, and FixAll pages over the composite key.
		require.NoError(t, db.Exec("INSERT INTO players (org_id, team_slug, score) VALUES (?, ?, ?)", 2, "50%", 100).Error)
		loaded := []Team{{OrgID: 2, Slug: "50%"}}
		drifts, err := slotted.Fix(db, &loaded)
		require.NoError(t, err)
		require.Len(t, drifts, 2)
		assert.Equal(t, []any{uint(2), "50%"}, drifts[0].Record)
		assert.Equal(t, "2,50%25", drifts[0].Ref.ID)
		assert.Equal(t, sourceCounts(t, db), teamCounts(t, db))
		require.NoError(t, db.Exec("DELETE FROM players WHERE org_id = ? AND team_slug = ?", 1, "a").Error)
		prog, err := slotted.FixAll(db, &Team{}, slotted.FixOptions{BatchSize: 3})
		require.NoError(t, err)
		assert.Equal(t, FixSummary{2, 4, 2}, FixSummary{prog.Batches, prog.Records, prog.Drifted})
		assert.Equal(t, sourceCounts(t, db), teamCounts(t, db))
	})
}

func TestCompositeKeyCounterCacheTouchAndRefusals(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.Migrator().DropTable(&Player{}, &Team{}))
		require.NoError(t, db.AutoMigrate(&Team{}, &Player{}))
		t.Cleanup(func() { _ = db.Migrator().DropTable(&Player{}, &Team{}) })
		require.NoError(t, slotted.CounterCache(db, &Team{}, "Roster", "players", slotted.CacheOptions{Touch: true}))
		old := time.Now().Add(-time.Hour).Truncate(time.Second)
		teams := []Team{{OrgID: 1, Slug: "a,b", UpdatedAt: old}, {OrgID: 1, Slug: "a", UpdatedAt: old}}
		require.NoError(t, db.Create(&teams).Error)
		require.NoError(t, db.Model(&Team{}).Where("1 = 1").UpdateColumn("updated_at", old).Error)
		require.NoError(t, db.Create(&Player{OrgID: 1, TeamSlug: slug("a,b")}).Error)
		var got []Team
		require.NoError(t, db.Order("slug").Find(&got).Error)
		require.Len(t, got, 2)
		assert.True(t, got[0].UpdatedAt.Equal(old), "1/a untouched: %v", got[0].UpdatedAt)
		assert.True(t, got[1].UpdatedAt.After(old), "1/a,b touched: %v", got[1].UpdatedAt)
		assert.EqualValues(t, 1, got[1].Players)

		// A declared counter is not declared twice.
		err := slotted.CounterCache(db, &Team{}, "Roster", "players")
		assert.ErrorIs(t, err, slotted.ErrInvalidConfig)
	})
}

// Concurrent writers on a few hot composite-key parents end equal to the source.
func TestCompositeKeyCounterCacheConcurrent(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		teamDB(t, db)
		teams := []Team{{OrgID: 1, Slug: "a,b"}, {OrgID: 1, Slug: "a"}, {OrgID: 2, Slug: "a,b"}}
		require.NoError(t, db.Create(&teams).Error)
		limitConns(t, db)
		const writers, ops = 48, 6
		var wg sync.WaitGroup
		errs := make(chan error, writers*ops)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range ops {
					tm := teams[(w+i)%len(teams)]
					p := Player{OrgID: tm.OrgID, TeamSlug: slug(tm.Slug), Score: int64(w + i)}
					err := retryConflicts(func() error { p.ID = 0; return db.Create(&p).Error })
					if err == nil && i%3 == 1 {
						next := teams[(w+i+1)%len(teams)]
						err = retryConflicts(func() error {
							return db.Model(&p).Updates(map[string]any{"org_id": next.OrgID, "team_slug": next.Slug}).Error
						})
					}
					if err == nil && i%3 == 2 {
						err = retryConflicts(func() error { return db.Delete(&p).Error })
					}
					if err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		assert.Equal(t, sourceCounts(t, db), teamCounts(t, db))
	})
}
