package tests

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// TestRenderedBucketSQL checks, with DryRun (no connection), the bucketed
// write each dialect gets (the multi-row upsert every write path shares) (SQL Server's MERGE included: two source rows,
// matched on the whole key) and the cast in OrderBy's join.
func TestRenderedBucketSQL(t *testing.T) {
	cases := []struct {
		name      string
		dialector gorm.Dialector
		upsert    string
		join      string
	}{{
		name:      "mysql",
		dialector: mysql.New(mysql.Config{DSN: "u@tcp(127.0.0.1:1)/x", SkipInitializeWithVersion: true}),
		upsert:    "INSERT INTO `slotted_counters` (`record_type`,`record_id`,`slot`,`count`) VALUES ('pages.views','7',N,3),('pages.views@2026-11-23','7',N,3) ON DUPLICATE KEY UPDATE `count`=`slotted_counters`.`count` + VALUES(`count`)",
		join:      "LEFT JOIN (SELECT `record_id` AS slotted_id, SUM(`count`) AS slotted_total FROM `slotted_counters` WHERE `record_type` = 'pages.likes' GROUP BY `record_id`) `slotted_likes` ON `slotted_likes`.slotted_id = CAST(`pages`.`id` AS CHAR) ORDER BY COALESCE(`slotted_likes`.`slotted_total`, 0) DESC",
	}, {
		name:      "postgres",
		dialector: postgres.New(postgres.Config{DSN: "host=127.0.0.1 port=1"}),
		upsert:    `INSERT INTO "slotted_counters" ("record_type","record_id","slot","count") VALUES ('pages.views','7',N,3),('pages.views@2026-11-23','7',N,3) ON CONFLICT ("record_type","record_id","slot") DO UPDATE SET "count"="slotted_counters"."count" + "excluded"."count"`,
		join:      `LEFT JOIN (SELECT "record_id" AS slotted_id, SUM("count") AS slotted_total FROM "slotted_counters" WHERE "record_type" = 'pages.likes' GROUP BY "record_id") "slotted_likes" ON "slotted_likes".slotted_id = CAST("pages"."id" AS TEXT) ORDER BY COALESCE("slotted_likes"."slotted_total", 0) DESC`,
	}, {
		name:      "sqlite",
		dialector: sqliteOpen("file::memory:"),
		upsert:    "INSERT INTO `slotted_counters` (`record_type`,`record_id`,`slot`,`count`) VALUES (\"pages.views\",\"7\",N,3),(\"pages.views@2026-11-23\",\"7\",N,3) ON CONFLICT (`record_type`,`record_id`,`slot`) DO UPDATE SET `count`=CASE WHEN typeof(`slotted_counters`.`count` + `excluded`.`count`) = 'integer' THEN `slotted_counters`.`count` + `excluded`.`count` ELSE abs(-9223372036854775807 - 1) END",
		join:      "ON `slotted_likes`.slotted_id = CAST(`pages`.`id` AS TEXT)",
	}, {
		name:      "sqlserver",
		dialector: sqlserver.Open("sqlserver://u:p@127.0.0.1:1?database=x"),
		upsert:    `MERGE INTO "slotted_counters" USING (VALUES('pages.views','7',N,3),('pages.views@2026-11-23','7',N,3)) AS excluded ("record_type","record_id","slot","count") ON "slotted_counters"."record_type" = "excluded"."record_type" AND "slotted_counters"."record_id" = "excluded"."record_id" AND "slotted_counters"."slot" = "excluded"."slot" WHEN MATCHED THEN UPDATE SET "count"="slotted_counters"."count" + "excluded"."count" WHEN NOT MATCHED THEN INSERT ("record_type","record_id","slot","count") VALUES ("excluded"."record_type","excluded"."record_id","excluded"."slot","excluded"."count");`,
		join:      `ON "slotted_likes".slotted_id = CAST("pages"."id" AS NVARCHAR(128))`,
	}}
	slot := regexp.MustCompile(`(['"]7['"]),\d+,3`)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			db, err := gorm.Open(tc.dialector, &gorm.Config{DryRun: true, DisableAutomaticPing: true, Logger: rec})
			require.NoError(t, err)
			now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
			require.NoError(t, db.Use(slotted.New(slotted.Config{DisableAutoMigrate: true, Now: func() time.Time { return now }})))

			require.ErrorIs(t, slotted.Add(db, &Page{ID: 7}, "views", 3), slotted.ErrDryRun) // rendered and logged, not run
			require.NoError(t, db.Scopes(slotted.OrderBy(&Page{}, "likes", "DESC")).Find(&[]Page{}).Error)
			require.NoError(t, db.Scopes(slotted.OrderByBetween(&Page{}, "views", "DESC", now.AddDate(0, 0, -6), now)).Find(&[]Page{}).Error)
			got := rec.statements()
			require.Len(t, got, 3)
			// MySQL groups a window's rows by sorting (SQL_BIG_RESULT); one record_type's stream in order.
			assert.Equal(t, tc.name == "mysql", strings.Contains(got[2], "(SELECT SQL_BIG_RESULT `record_id` AS slotted_id"), got[2])
			assert.NotContains(t, got[1], "SQL_BIG_RESULT")
			upsert := slot.ReplaceAllString(got[0], "$1,N,3")
			assert.Equal(t, tc.upsert, upsert)
			slots := regexp.MustCompile(`7['"],(\d+),3`).FindAllStringSubmatch(got[0], -1)
			require.Len(t, slots, 2) // each row its own slot, like any multi-row upsert
			assert.Contains(t, got[1], tc.join)
		})
	}
}
