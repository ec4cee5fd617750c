package slotted

import (
	"gorm.io/gorm"
)

// Count returns a counter's total: the sum of its slot rows, 0 when it has none,
// or ErrOverflow when the sum does not fit in int64.
// model is a struct or a pointer to one with a primary key value.
//
//	likes, err := slotted.Count(db, &post, "likes")
//	// SELECT COALESCE(SUM(`count`), 0) FROM `slotted_counters` WHERE `record_type` = 'posts.likes' AND `record_id` = '42'
func Count(db *gorm.DB, model any, counter string) (int64, error) {
	p, err := pluginOf(db)
	if err != nil {
		return 0, err
	}
	c, _, id, err := p.models.Target(db, model, counter)
	if err != nil {
		return 0, err
	}
	return p.reads.Sum(db, c.RecordType, id)
}

// CountRef returns the total of the counter named by ref; see Ref.
func CountRef(db *gorm.DB, ref Ref) (int64, error) {
	p, err := pluginOf(db)
	if err != nil {
		return 0, err
	}
	if err := ref.Validate(); err != nil {
		return 0, err
	}
	return p.reads.Sum(db, ref.Type, ref.ID)
}

// Load fills counter fields of models with one query per 1000 records (not
// one per record). models is a pointer to a struct, or a slice or array (or a
// pointer to one) of structs or struct pointers. With no counter names it
// fills every counter of the model.
//
//	slotted.Load(db, &posts, "likes")
//	// SELECT `record_type`,`record_id`,SUM(`count`) FROM `slotted_counters`
//	// WHERE `record_type` IN ('posts.likes') AND `record_id` IN ('1','2','3') GROUP BY `record_type`,`record_id`
func Load(db *gorm.DB, models any, counters ...string) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	m, elem, err := p.models.ModelsArg(db, models)
	if err != nil {
		return err
	}
	selected, err := m.Selected(counters)
	if err != nil {
		return err
	}
	return p.reads.Fill(db, m, selected, elem, true)
}
