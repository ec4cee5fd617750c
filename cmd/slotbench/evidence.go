package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/diagnose"
)

// sampleEvery is how often the PostgreSQL probe counts lock-waiting backends.
const sampleEvery = 50 * time.Millisecond

// probe collects the database's own evidence of row-lock waiting across a
// run of a cell. begin is called right before the timed load, and the
// returned finish right after it. Probes run on the sweep's admin pool, never
// on the cell's, and ask through the diagnose package's probes.
type probe interface {
	begin(ctx context.Context) (finish func(ctx context.Context) (Evidence, error), err error)
}

// newProbe returns the probe for dialect; tables are the sweep's scratch
// tables, whose waiters the PostgreSQL sampler counts.
func newProbe(dialect string, admin *gorm.DB, tables []string) probe {
	switch dialect {
	case dialectMySQL:
		return innodbProbe{admin}
	case dialectPostgres:
		return pgProbe{admin, tables}
	}
	return sqliteProbe{}
}

// innodbProbe diffs InnoDB's row-lock counters.
type innodbProbe struct{ db *gorm.DB }

func (p innodbProbe) begin(ctx context.Context) (func(context.Context) (Evidence, error), error) {
	before, err := diagnose.ServerCounters(p.db.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("reading InnoDB status: %w", err)
	}
	return func(ctx context.Context) (Evidence, error) {
		after, err := diagnose.ServerCounters(p.db.WithContext(ctx))
		if err != nil {
			return Evidence{}, fmt.Errorf("reading InnoDB status: %w", err)
		}
		ev := &InnoDBEvidence{
			RowLockWaits:  after["Innodb_row_lock_waits"] - before["Innodb_row_lock_waits"],
			RowLockTimeMs: after["Innodb_row_lock_time"] - before["Innodb_row_lock_time"],
		}
		if a, ok := after["Innodb_deadlocks"]; ok {
			d := a - before["Innodb_deadlocks"]
			ev.Deadlocks = &d
		}
		return Evidence{InnoDB: ev}, nil
	}, nil
}

// pgProbe samples the backends waiting on a lock in the scratch tables on
// its own connection while the cell runs: PostgreSQL keeps no cumulative
// row-lock wait counter.
type pgProbe struct {
	db     *gorm.DB
	tables []string
}

func (p pgProbe) deadlocks(ctx context.Context) (int64, error) {
	c, err := diagnose.ServerCounters(p.db.WithContext(ctx))
	if err != nil {
		return 0, fmt.Errorf("reading pg_stat_database: %w", err)
	}
	return c["deadlocks"], nil
}

func (p pgProbe) waiting(ctx context.Context) (int64, error) {
	waits, err := diagnose.LockWaits(p.db.WithContext(ctx), p.tables...)
	var n int64
	for _, w := range waits {
		n += w.Waiting
	}
	return n, err
}

func (p pgProbe) begin(ctx context.Context) (func(context.Context) (Evidence, error), error) {
	before, err := p.deadlocks(ctx)
	if err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(ctx)
	var (
		wg      sync.WaitGroup
		samples []int64
		failed  error
	)
	wg.Go(func() {
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C:
			}
			n, err := p.waiting(sctx)
			if err != nil {
				if sctx.Err() == nil {
					failed = fmt.Errorf("sampling lock waits: %w", err)
				}
				return
			}
			samples = append(samples, n)
		}
	})
	return func(ctx context.Context) (Evidence, error) {
		stop()
		wg.Wait()
		if failed != nil {
			return Evidence{}, failed
		}
		after, err := p.deadlocks(ctx)
		if err != nil {
			return Evidence{}, err
		}
		ev := &PostgresEvidence{Samples: len(samples), Deadlocks: after - before}
		var sum int64
		for _, n := range samples {
			sum += n
			ev.WaitingMax = max(ev.WaitingMax, n)
		}
		if len(samples) > 0 {
			ev.WaitingMean = float64(sum) / float64(len(samples))
		}
		return Evidence{Postgres: ev}, nil
	}, nil
}

// sqliteProbe has nothing to ask the database; the sweep fills in the busy
// errors and plugin conflicts it saw.
type sqliteProbe struct{}

func (sqliteProbe) begin(context.Context) (func(context.Context) (Evidence, error), error) {
	return func(context.Context) (Evidence, error) { return Evidence{SQLite: &SQLiteEvidence{}}, nil }, nil
}

// DBInfo names the database for the report and the chart.
type DBInfo struct {
	Dialect string `json:"dialect"` // mysql, postgres or sqlite (gorm's names)
	Product string `json:"product"` // MariaDB, MySQL, PostgreSQL, SQLite
	Version string `json:"version"` // as the server reports it
}

func (i DBInfo) String() string {
	v, _, _ := strings.Cut(i.Version, "-") // 10.11.19-MariaDB-0+deb12u1 -> 10.11.19
	v, _, _ = strings.Cut(v, " ")          // 15.20 (Debian ...) -> 15.20
	return strings.TrimSpace(i.Product + " " + v)
}

func dbInfo(ctx context.Context, db *gorm.DB, dialect string) (DBInfo, error) {
	info := DBInfo{Dialect: dialect}
	var q string
	switch dialect {
	case dialectMySQL:
		q, info.Product = "SELECT VERSION()", "MySQL"
	case dialectPostgres:
		q, info.Product = "SHOW server_version", "PostgreSQL"
	default:
		q, info.Product = "SELECT sqlite_version()", "SQLite"
	}
	if err := db.WithContext(ctx).Raw(q).Scan(&info.Version).Error; err != nil {
		return info, fmt.Errorf("reading the server version: %w", err)
	}
	if strings.Contains(strings.ToLower(info.Version), "mariadb") {
		info.Product = "MariaDB"
	}
	return info, nil
}

// connectionRoom checks, before anything runs, that the server accepts the
// largest pool the sweep will open (plus the admin pool's connection), so a
// too-large -workers fails with an explanation instead of "too many clients"
// in the middle of a sweep. SQLite has no limit.
func connectionRoom(ctx context.Context, db *gorm.DB, dialect string, workers int) error {
	const extra = 2 // the admin pool: probes and bookkeeping
	db = db.WithContext(ctx)
	switch dialect {
	case dialectMySQL:
		var maxConns, used int64
		if err := db.Raw("SELECT @@max_connections").Scan(&maxConns).Error; err != nil {
			return fmt.Errorf("reading max_connections: %w", err)
		}
		var name string
		if err := db.Raw("SHOW GLOBAL STATUS LIKE 'Threads_connected'").Row().Scan(&name, &used); err != nil {
			return fmt.Errorf("reading Threads_connected: %w", err)
		}
		if room := maxConns - used; int64(workers+extra) > room {
			return fmt.Errorf("too many workers: the server allows max_connections=%d and %d are in use, so %d more; "+
				"-workers %d needs %d. Use smaller -workers or raise max_connections", maxConns, used, room, workers, workers+extra)
		}
	case dialectPostgres:
		var maxConns, reserved, used int64
		if err := db.Raw("SELECT current_setting('max_connections')::int, current_setting('superuser_reserved_connections')::int, "+
			"(SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')").Row().Scan(&maxConns, &reserved, &used); err != nil {
			return fmt.Errorf("reading max_connections: %w", err)
		}
		if room := maxConns - reserved - used; int64(workers+extra) > room {
			return fmt.Errorf("too many workers: PostgreSQL allows max_connections=%d (%d reserved for superusers) and %d are "+
				"in use, so %d more; -workers %d needs %d. Use -workers up to %d or raise max_connections",
				maxConns, reserved, used, room, workers, workers+extra, max(room-extra, 0))
		}
	}
	return nil
}
