package tests

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// Story has likes (one per user, AddOnce), a "liked by me" flag, and daily
// views with a 7-day total and sparkline of their own.
type Story struct {
	ID        uint
	Title     string
	Likes     int64            `gorm:"-" slotted:"likes;slots:4"`
	Liked     bool             `gorm:"-" slotted:"likes;applied"`
	Views     int64            `gorm:"-" slotted:"views;buckets:day;tz:Europe/Berlin;slots:4"`
	ViewsWeek int64            `gorm:"-" slotted:"views;window:7d"`
	Spark     []slotted.Bucket `gorm:"-" slotted:"views;series:7d"`
}

func migrateStories(t testing.TB, db *gorm.DB) []Story {
	t.Helper()
	require.NoError(t, db.Migrator().DropTable(&Story{}))
	require.NoError(t, db.AutoMigrate(&Story{}))
	require.NoError(t, db.Exec("DELETE FROM "+slotted.DefaultOnceTable).Error) // other tests' keys of the same ids
	stories := make([]Story, 20)
	for i := range stories {
		stories[i].Title = fmt.Sprint("s", i)
	}
	require.NoError(t, db.Create(&stories).Error)
	return stories
}

func userKey(u int) string { return fmt.Sprintf("user:%03d", u) }

// 16 goroutines like and unlike 20 stories for 32 users (each user's
// actions in one goroutine, so the final state is known), then every lookup
// is checked against the tally: Applied, AppliedMany, WithOnceKey's auto-fill,
// LoadApplied, OnceKeys page by page, and Likes.
func TestLikesLookups(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		stories := migrateStories(t, db)
		const users, goroutines = 32, 16
		var mu sync.Mutex
		liked := map[[2]int]bool{} // story index, user
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 40 {
					u := g + goroutines*rand.IntN(users/goroutines)
					s := rand.IntN(len(stories))
					story := Story{ID: stories[s].ID}
					var err error
					if rand.IntN(3) == 0 {
						_, err = slotted.RemoveOnce(db, &story, "likes", userKey(u))
						mu.Lock()
						delete(liked, [2]int{s, u})
						mu.Unlock()
					} else {
						_, err = slotted.AddOnce(db, &story, "likes", 1, userKey(u))
						mu.Lock()
						liked[[2]int{s, u}] = true
						mu.Unlock()
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		for s := range stories {
			var want []string
			for u := range users {
				if liked[[2]int{s, u}] {
					want = append(want, userKey(u))
				}
			}
			n, err := slotted.Count(db, &stories[s], "likes")
			require.NoError(t, err)
			assert.EqualValues(t, len(want), n)
			var got []string
			after := ""
			for {
				page, err := slotted.OnceKeys(db, &stories[s], "likes", after, 3)
				require.NoError(t, err)
				got = append(got, page...)
				if len(page) < 3 {
					break
				}
				after = page[len(page)-1]
			}
			assert.Equal(t, want, got, "story %d's keys", s)
		}
		db, rec := recorded(db)
		for u := range users {
			flags, err := slotted.AppliedMany(db, &stories, "likes", userKey(u))
			require.NoError(t, err)
			var page []Story
			require.NoError(t, slotted.WithOnceKey(db, userKey(u)).Order("id").Find(&page).Error)
			loaded := slices.Clone(page)
			require.NoError(t, slotted.LoadApplied(db, &loaded, userKey(u)))
			var mine []Story
			require.NoError(t, db.Scopes(slotted.WhereApplied(&Story{}, "likes", userKey(u))).Order("id").Find(&mine).Error)
			var wantMine []uint
			for s := range stories {
				if liked[[2]int{s, u}] {
					wantMine = append(wantMine, stories[s].ID)
				}
			}
			var gotMine []uint
			for _, s := range mine {
				gotMine = append(gotMine, s.ID)
			}
			assert.Equal(t, wantMine, gotMine, "WhereApplied user %d", u)
			for s := range stories {
				want := liked[[2]int{s, u}]
				assert.Equal(t, want, flags[s], "AppliedMany story %d user %d", s, u)
				assert.Equal(t, want, page[s].Liked, "auto-fill story %d user %d", s, u)
				assert.Equal(t, want, loaded[s].Liked, "LoadApplied story %d user %d", s, u)
				if s%7 == 0 {
					one, err := slotted.Applied(db, &stories[s], "likes", userKey(u))
					require.NoError(t, err)
					assert.Equal(t, want, one)
				}
			}
		}
		// AppliedMany: one statement for 20 stories; auto-fill: one for the flags.
		before := rec.count("slotted_once")
		_, err := slotted.AppliedMany(db, &stories, "likes", userKey(1))
		require.NoError(t, err)
		var page []Story
		require.NoError(t, slotted.WithOnceKey(db, userKey(1)).Find(&page).Error)
		assert.Equal(t, 2, rec.count("slotted_once")-before)
		// Without a key auto-fill does not look at the once table.
		require.NoError(t, db.Find(&page).Error)
		assert.Equal(t, 2, rec.count("slotted_once")-before)
	})
}

// Keys that are there all along come back exactly once, in order, while
// other keys of the same record are added and removed during the paging.
func TestOnceKeysStableUnderWrites(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		stories := migrateStories(t, db)
		story := &stories[0]
		var steady []string
		for u := 0; u < 200; u += 2 {
			_, err := slotted.AddOnce(db, story, "likes", 1, userKey(u))
			require.NoError(t, err)
			steady = append(steady, userKey(u))
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					k := userKey(1 + 2*((g+4*i)%100)) // odd users come and go
					var err error
					if i%2 == 0 {
						_, err = slotted.AddOnce(db, &Story{ID: story.ID}, "likes", 1, k)
					} else {
						_, err = slotted.RemoveOnce(db, &Story{ID: story.ID}, "likes", k)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		for round := 0; round < 3; round++ {
			var got []string
			after := ""
			for {
				page, err := slotted.OnceKeys(db, story, "likes", after, 7)
				require.NoError(t, err)
				got = append(got, page...)
				if len(page) < 7 {
					break
				}
				after = page[len(page)-1]
			}
			assert.True(t, slices.IsSorted(got), "pages in order")
			assert.Equal(t, len(got), len(slices.Compact(slices.Clone(got))), "no key twice")
			var seen []string
			for _, k := range got {
				if n := strings.TrimPrefix(k, "user:"); (n[len(n)-1]-'0')%2 == 0 {
					seen = append(seen, k)
				}
			}
			assert.Equal(t, steady, seen, "every steady key once")
		}
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	})
}

// Config.OnceExpireAfter applies to AddOnce calls that pass neither
// ExpireAfter nor KeepForever; an expired key is absent for the lookups.
func TestOnceRetention(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		stories := migrateStories(t, db)
		s := &stories[0]
		for _, c := range []struct {
			key  string
			opts []slotted.OnceOptions
			live bool // expires_at NULL
		}{{"default", nil, false}, {"forever", []slotted.OnceOptions{{KeepForever: true}}, true},
			{"short", []slotted.OnceOptions{{ExpireAfter: time.Millisecond}}, false}} {
			applied, err := slotted.AddOnce(db, s, "likes", 1, c.key, c.opts...)
			require.NoError(t, err)
			require.True(t, applied)
			var nulls int64
			require.NoError(t, db.Table(slotted.DefaultOnceTable).Where("op_key = ? AND expires_at IS NULL", c.key).Count(&nulls).Error)
			assert.Equal(t, c.live, nulls == 1, c.key)
		}
		time.Sleep(50 * time.Millisecond)
		for key, want := range map[string]bool{"default": true, "forever": true, "short": false} {
			got, err := slotted.Applied(db, s, "likes", key)
			require.NoError(t, err)
			assert.Equal(t, want, got, key)
		}
		keys, err := slotted.OnceKeys(db, s, "likes", "", 10)
		require.NoError(t, err)
		assert.Equal(t, []string{"default", "forever"}, keys)
		_, err = slotted.OnceKeys(db, s, "likes", "", 0)
		assert.ErrorIs(t, err, slotted.ErrInvalidArgument)
		_, err = slotted.Applied(db, s, "likes", "")
		assert.ErrorIs(t, err, slotted.ErrUnsupportedKey)
		var mine []Story
		require.NoError(t, db.Scopes(slotted.WhereApplied(&Story{}, "likes", "short")).Find(&mine).Error)
		assert.Empty(t, mine, "an expired key does not match")
		require.NoError(t, db.Scopes(slotted.WhereApplied(&Story{}, "likes", "forever")).Find(&mine).Error)
		assert.Len(t, mine, 1)
		assert.ErrorIs(t, db.Scopes(slotted.WhereApplied(&Story{}, "hearts", "x")).Find(&mine).Error, slotted.ErrUnknownCounter)
	}, slotted.Config{OnceExpireAfter: time.Hour})
}
