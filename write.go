package slotted

import (
	"gorm.io/gorm"
)

// Increment adds 1 to a counter of model, which must be a pointer to a struct
// with a primary key value. counter is the tag name ("likes") or the Go field
// name ("Likes"). After the write the model's field is 1 higher too.
//
//	slotted.Increment(db, &post, "likes")
//	// MySQL:  INSERT INTO `slotted_counters` (`record_type`,`record_id`,`slot`,`count`) VALUES ('posts.likes','42',17,1)
//	//         ON DUPLICATE KEY UPDATE `count`=`slotted_counters`.`count` + 1
//	// PG/SQLite: ... ON CONFLICT ("record_type","record_id","slot") DO UPDATE SET "count"="slotted_counters"."count" + 1
func Increment(db *gorm.DB, model any, counter string) error { return Add(db, model, counter, 1) }

// Decrement subtracts 1 from a counter; see Increment. Counters may go below zero.
func Decrement(db *gorm.DB, model any, counter string) error { return Add(db, model, counter, -1) }

// Add adds delta to a counter with one upsert into a random slot row; see
// Increment. A delta of 0 writes nothing. A delta that would take the slot
// past the int64 range fails with ErrOverflow and writes nothing.
//
// Inside a transaction (db from db.Transaction or db.Begin) the write joins it
// and is not retried. Outside one it is a single autocommit statement, retried
// on deadlock, lock wait timeout, serialization failure and SQLITE_BUSY.
func Add(db *gorm.DB, model any, counter string, delta int64) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	c, v, id, err := p.writeTarget(db, model, counter)
	if err != nil {
		return err
	}
	if err := p.writeCounter(db, c, id, delta); err != nil {
		return err
	}
	c.Add(v, delta)
	return nil
}

// AddRef adds delta to the counter named by ref, spread over ref.Slots slot
// rows (Config.Slots when 0; a Ref from RefOf carries the counter's slots:).
// It writes exactly the rows ref names: for a bucketed counter's total and
// current bucket together, use Add on the model (it needs only the key).
//
//	slotted.AddRef(db, slotted.Ref{Type: "123", ID: "456"}, 1)
func AddRef(db *gorm.DB, ref Ref, delta int64) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	if err := ref.Validate(); err != nil {
		return err
	}
	return p.writes.AddOne(db, ref.Type, ref.ID, ref.SlotsOr(p.cfg.Slots), delta)
}
