package tests

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// TestRenderedSQL checks the exact statements each dialect gets, with DryRun
// (no connection): the upsert, the single-counter sum and the batched read.
func TestRenderedSQL(t *testing.T) {
	cases := []struct {
		name      string
		dialector gorm.Dialector
		want      []string
	}{{
		name:      "mysql",
		dialector: mysql.New(mysql.Config{DSN: "u@tcp(127.0.0.1:1)/x", SkipInitializeWithVersion: true}),
		want: []string{
			"INSERT INTO `slotted_counters` (`record_type`,`record_id`,`slot`,`count`) VALUES ('posts.likes','7',N,3) ON DUPLICATE KEY UPDATE `count`=`slotted_counters`.`count` + 3",
			"SELECT COALESCE(SUM(`count`), 0) FROM `slotted_counters` WHERE `record_type` = 'posts.likes' AND `record_id` = '7'",
			"SELECT `record_type`, `record_id`, SUM(`count`) FROM `slotted_counters` WHERE `record_type` IN ('posts.likes','posts.views','post_stars') AND `record_id` IN ('7','8') GROUP BY `record_type`,`record_id`",
		},
	}, {
		name:      "postgres",
		dialector: postgres.New(postgres.Config{DSN: "host=127.0.0.1 port=1"}),
		want: []string{
			`INSERT INTO "slotted_counters" ("record_type","record_id","slot","count") VALUES ('posts.likes','7',N,3) ON CONFLICT ("record_type","record_id","slot") DO UPDATE SET "count"="slotted_counters"."count" + 3`,
			`SELECT COALESCE(SUM("count"), 0) FROM "slotted_counters" WHERE "record_type" = 'posts.likes' AND "record_id" = '7'`,
			`SELECT "record_type", "record_id", SUM("count") FROM "slotted_counters" WHERE "record_type" IN ('posts.likes','posts.views','post_stars') AND "record_id" IN ('7','8') GROUP BY "record_type","record_id"`,
		},
	}, {
		name:      "sqlite",
		dialector: sqliteOpen("file::memory:"),
		want: []string{
			"INSERT INTO `slotted_counters` (`record_type`,`record_id`,`slot`,`count`) VALUES (\"posts.likes\",\"7\",N,3) ON CONFLICT (`record_type`,`record_id`,`slot`) DO UPDATE SET `count`=CASE WHEN typeof(`slotted_counters`.`count` + 3) = 'integer' THEN `slotted_counters`.`count` + 3 ELSE abs(-9223372036854775807 - 1) END",
			"SELECT COALESCE(SUM(`count`), 0) FROM `slotted_counters` WHERE `record_type` = \"posts.likes\" AND `record_id` = \"7\"",
			"SELECT `record_type`, `record_id`, SUM(`count`) FROM `slotted_counters` WHERE `record_type` IN (\"posts.likes\",\"posts.views\",\"post_stars\") AND `record_id` IN (\"7\",\"8\") GROUP BY `record_type`,`record_id`",
		},
	}, {
		// Not run for real here: checks that gorm's MERGE for SQL Server matches on the whole
		// composite key (with the slot outside the key it would silently become a plain INSERT).
		name:      "sqlserver",
		dialector: sqlserver.Open("sqlserver://u:p@127.0.0.1:1?database=x"),
		want: []string{
			`MERGE INTO "slotted_counters" USING (VALUES('posts.likes','7',N,3)) AS excluded ("record_type","record_id","slot","count") ON "slotted_counters"."record_type" = "excluded"."record_type" AND "slotted_counters"."record_id" = "excluded"."record_id" AND "slotted_counters"."slot" = "excluded"."slot" WHEN MATCHED THEN UPDATE SET "count"="slotted_counters"."count" + 3 WHEN NOT MATCHED THEN INSERT ("record_type","record_id","slot","count") VALUES ("excluded"."record_type","excluded"."record_id","excluded"."slot","excluded"."count");`,
			`SELECT COALESCE(SUM("count"), 0) FROM "slotted_counters" WHERE "record_type" = 'posts.likes' AND "record_id" = '7'`,
			`SELECT "record_type", "record_id", SUM("count") FROM "slotted_counters" WHERE "record_type" IN ('posts.likes','posts.views','post_stars') AND "record_id" IN ('7','8') GROUP BY "record_type","record_id"`,
		},
	}}
	slot := regexp.MustCompile(`'7',\d+,3|"7",\d+,3`)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			db, err := gorm.Open(tc.dialector, &gorm.Config{DryRun: true, DisableAutomaticPing: true, Logger: rec})
			require.NoError(t, err)
			require.NoError(t, db.Use(slotted.New(slotted.Config{DisableAutoMigrate: true})))

			post := Post{ID: 7}
			// DryRun renders and logs each statement; the calls report that nothing ran.
			require.ErrorIs(t, slotted.Add(db, &post, "likes", 3), slotted.ErrDryRun)
			require.Zero(t, post.Likes, "nothing was written")
			_, err = slotted.Count(db, &post, "likes")
			require.ErrorIs(t, err, slotted.ErrDryRun)
			require.ErrorIs(t, slotted.Load(db, []Post{{ID: 7}, {ID: 8}}), slotted.ErrDryRun)

			got := rec.statements()
			require.Len(t, got, 3)
			got[0] = slot.ReplaceAllStringFunc(got[0], func(s string) string { return regexp.MustCompile(`,\d+,`).ReplaceAllString(s, ",N,") })
			assert.Equal(t, tc.want, got)
		})
	}
}
