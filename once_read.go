package slotted

import (
	"fmt"
	"reflect"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/query"
)

// Reads of the once table (once.go): "has this user liked it?" for one
// record or a page of them, and "who liked it?" a page at a time. A key that
// expired (OnceOptions.ExpireAfter, Config.OnceExpireAfter) counts as absent, as it does
// for AddOnce. These reads follow the caller's routing: under dbresolver
// they go to a replica, which may not have the key a user applied a moment
// ago; pass dbresolver.Write to read your own writes.

// MaxKeysPage bounds OnceKeys' limit.
const MaxKeysPage = 10000

// WithOnceKey makes auto-fill (and LoadApplied) fill the model's applied
// fields (`slotted:"likes;applied"`) for key: one statement per field and
// 1000 records, whether key was applied to each record's counter.
//
//	slotted.WithOnceKey(db, "user:7").Find(&posts) // posts[i].Liked: user 7 liked posts[i]
//
// A key Applied would refuse (a NUL byte, invalid UTF-8, longer than
// MaxKeyLen) is ErrUnsupportedKey from the statement, before any SQL is sent.
// An empty key fills no applied field.
func WithOnceKey(db *gorm.DB, key string) *gorm.DB {
	tx := db.Set(session.OnceKeySetting, key)
	if key != "" {
		if err := checkOnceKey(key); err != nil {
			_ = tx.AddError(err) // gorm runs no SQL on a statement that carries an error
		}
	}
	return tx
}

// Applied reports whether key was applied to this record's counter by
// AddOnce (and not removed by RemoveOnce, nor expired).
//
//	liked, err := slotted.Applied(db, &post, "likes", "user:7")
//	// SELECT `record_id` FROM `slotted_once` WHERE `record_type` = 'posts.likes' AND `op_key` = 'user:7'
//	//   AND `record_id` IN ('42') AND (`expires_at` IS NULL OR `expires_at` > '2026-...')
func Applied(db *gorm.DB, model any, counter, key string) (bool, error) {
	p, err := pluginOf(db)
	if err != nil {
		return false, err
	}
	c, _, id, err := p.models.Target(db, model, counter)
	if err != nil {
		return false, err
	}
	if err := checkOnceKey(key); err != nil {
		return false, err
	}
	got, err := p.reads.AppliedKeys(db, c.RecordType, []string{id}, key)
	return got[id], err
}

// AppliedMany is Applied for every record in models (a slice or array of
// structs or pointers, or a pointer to one), in their order, with one
// statement per 1000 records: the "liked by me" flags of a page of posts.
// A nil pointer among models is ErrUnsupportedModel.
//
//	liked, err := slotted.AppliedMany(db, &posts, "likes", "user:7") // liked[i]: posts[i]
func AppliedMany(db *gorm.DB, models any, counter, key string) ([]bool, error) {
	p, err := pluginOf(db)
	if err != nil {
		return nil, err
	}
	m, elem, err := p.models.ModelsArg(db, models)
	if err != nil {
		return nil, err
	}
	c, err := m.Counter(counter)
	if err != nil {
		return nil, err
	}
	if err := checkOnceKey(key); err != nil {
		return nil, err
	}
	if err := noNilElems(elem); err != nil {
		return nil, err
	}
	rs, err := m.Records(elem, true)
	if err != nil {
		return nil, err
	}
	got, err := p.reads.AppliedKeys(db, c.RecordType, rs.IDs, key)
	if err != nil {
		return nil, err
	}
	var out []bool
	meta.EachStruct(elem, func(s reflect.Value) {
		id, _ := m.Key.ID(s) // records checked every key
		out = append(out, got[id])
	})
	return out, nil
}

// LoadApplied fills the applied fields (`slotted:"likes;applied"`) of every
// record in models for key: the named ones (Go field or counter names) or
// all. See WithOnceKey for the same in auto-fill.
func LoadApplied(db *gorm.DB, models any, key string, fields ...string) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	m, elem, err := p.models.ModelsArg(db, models)
	if err != nil {
		return err
	}
	if err := checkOnceKey(key); err != nil {
		return err
	}
	if err := m.ExtrasNamed(fields, meta.ExtraApplied); err != nil {
		return err
	}
	var applied []string
	for _, e := range m.Extras {
		if e.Kind == meta.ExtraApplied && (len(fields) == 0 || e.In(fields)) {
			applied = append(applied, e.Name)
		}
	}
	if len(applied) == 0 {
		return fmt.Errorf("%w: %s has no applied field (`slotted:\"<counter>;applied\"`)%s", ErrUnknownCounter, m.Type, namesSuffix(fields))
	}
	return p.fillExtras(db, m, elem, key, true, applied...)
}

func namesSuffix(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf(" named %q", names)
}

// OnceKeys returns a page of the keys applied to this record's counter
// ("who liked it?"), in ascending order of the key as the database compares
// it (bytes on MySQL/MariaDB and SQLite; the column's collation on
// PostgreSQL): the first limit keys after the key after ("" for the first
// page). Pass the last key of a page as after to get the next one; a page
// shorter than limit is the last. Keyset pages are stable under concurrent
// AddOnce and RemoveOnce: a key there all along is returned exactly once.
// limit must be 1..MaxKeysPage.
//
//	keys, err := slotted.OnceKeys(db, &post, "likes", "", 20)
//	// SELECT `op_key` FROM `slotted_once` WHERE `record_type` = 'posts.likes' AND `record_id` = '42'
//	//   AND (`expires_at` IS NULL OR `expires_at` > '2026-...') AND `op_key` > '' ORDER BY `op_key` LIMIT 20
//	next, err := slotted.OnceKeys(db, &post, "likes", keys[len(keys)-1], 20)
func OnceKeys(db *gorm.DB, model any, counter, after string, limit int) ([]string, error) {
	p, err := pluginOf(db)
	if err != nil {
		return nil, err
	}
	c, _, id, err := p.models.Target(db, model, counter)
	if err != nil {
		return nil, err
	}
	if limit < 1 || limit > MaxKeysPage {
		return nil, fmt.Errorf("%w: OnceKeys' limit %d not in 1..%d", ErrInvalidArgument, limit, MaxKeysPage)
	}
	if after != "" {
		if err := meta.CheckKey("OnceKeys' after", after); err != nil {
			return nil, err
		}
	}
	opKey := clause.Column{Name: "op_key"}
	var keys []string
	tx := session.Routed(db)
	err = tx.Table(p.cfg.OnceTable).
		Where(clause.Eq{Column: clause.Column{Name: "record_type"}, Value: c.RecordType}).
		Where(clause.Eq{Column: clause.Column{Name: "record_id"}, Value: id}).
		Where(query.Live(p.cfg.Now())).
		Where(clause.Gt{Column: opKey, Value: after}).
		Order(clause.OrderByColumn{Column: opKey}).Limit(limit).Pluck("op_key", &keys).Error
	if tx.DryRun { // rendered and logged; no page is not "nobody"
		return nil, ErrDryRun
	}
	return keys, err
}

// expiry is how long a key of this call is kept: ExpireAfter, else
// Config.OnceExpireAfter unless KeepForever; 0 is forever.
func (o OnceOptions) expiry(cfg Config) time.Duration {
	if o.ExpireAfter > 0 || o.KeepForever {
		return o.ExpireAfter
	}
	return cfg.OnceExpireAfter
}

// WhereApplied returns a scope that keeps model's records whose counter
// (named name) has key applied ("the posts I liked"), with one EXISTS per row on the once
// table's primary key; an expired key does not match. The query stays yours:
// Order, Limit, Count, soft deletes and auto-fill work as without it.
//
//	db.Scopes(slotted.WhereApplied(&Post{}, "likes", "user:7")).Order("id DESC").Limit(20).Find(&posts)
//	// SELECT * FROM `posts` WHERE EXISTS (SELECT 1 FROM `slotted_once` WHERE `record_type` = 'posts.likes'
//	//   AND `op_key` = 'user:7' AND (`expires_at` IS NULL OR `expires_at` > '...')
//	//   AND `record_id` = CAST(`posts`.`id` AS CHAR)) ORDER BY id DESC LIMIT 20
//
// A bad model, counter or key fails the query with its sentinel, and nothing is sent.
func WhereApplied(model any, name, key string) func(*gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB {
		p, err := pluginOf(db)
		if err != nil {
			_ = db.AddError(err)
			return db
		}
		m, err := p.models.ModelArg(db, model)
		var c *meta.Counter
		if err == nil {
			c, err = m.Counter(name)
		}
		if err == nil {
			err = m.Key.Textual()
		}
		if err == nil {
			err = checkOnceKey(key)
		}
		if err != nil {
			_ = db.AddError(err)
			return db
		}
		// record_id is text: the parent's key is cast, record_id keeps its index
		id, keyVars := m.Key.TextSQL(p.dialect, m.Table)
		sub := db.Session(&gorm.Session{NewDB: true}).Table(p.cfg.OnceTable).Select("1").
			Where(clause.Eq{Column: clause.Column{Name: "record_type"}, Value: c.RecordType}).
			Where(clause.Eq{Column: clause.Column{Name: "op_key"}, Value: key}).
			Where(query.Live(p.cfg.Now())).
			Where("? = "+id, append([]any{clause.Column{Name: "record_id"}}, keyVars...)...)
		return db.Where("EXISTS (?)", sub)
	}
}
