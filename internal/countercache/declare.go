package countercache

import (
	"fmt"
	"reflect"

	"github.com/slotted-go/slotted/internal/errs"
	"github.com/slotted-go/slotted/internal/meta"
	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// Declare is CounterCache with its options applied: it checks the
// declaration against the models' schemas and registers it.
func (p *Caches) Declare(db *gorm.DB, model any, association, counter string, spec Spec) error {
	var err error
	typ := meta.StructType(reflect.TypeOf(model))
	if model == nil || typ == nil {
		return fmt.Errorf("%w: %T is not a struct", errs.ErrUnsupportedModel, model)
	}
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(reflect.New(typ).Interface()); err != nil {
		return fmt.Errorf("%w: %s: %v", errs.ErrUnsupportedModel, typ, err)
	}
	rel, ok := stmt.Schema.Relationships.Relations[association]
	if !ok {
		return fmt.Errorf("%w: %s has no association %q", errs.ErrInvalidConfig, typ, association)
	}
	var parentSchema, childSchema *schema.Schema
	switch rel.Type {
	case schema.HasMany, schema.HasOne:
		parentSchema, childSchema = rel.Schema, rel.FieldSchema
	case schema.BelongsTo:
		parentSchema, childSchema = rel.FieldSchema, rel.Schema
	case schema.Many2Many:
		return p.declareMany2Many(db, typ, association, counter, rel, spec)
	default:
		return fmt.Errorf("%w: %s.%s is a %s relationship; counter caches need has-many, has-one or belongs-to", errs.ErrInvalidConfig, typ, association, rel.Type)
	}
	var ref *schema.Reference
	if rel.Polymorphic != nil {
		for _, r := range rel.References {
			if r.ForeignKey == rel.Polymorphic.PolymorphicID {
				ref = r
			}
		}
	} else if len(rel.References) == 1 {
		ref = rel.References[0]
	} else if len(rel.References) > 1 {
		ref = rel.References[0] // a composite foreign key: checked against the parent's key below
	}
	if ref == nil {
		return fmt.Errorf("%w: %s.%s: counter caches need a single foreign key", errs.ErrInvalidConfig, typ, association)
	}
	parent, err := p.models.OfSchema(db, parentSchema)
	if err != nil {
		return err
	}
	c, err := parent.Counter(counter)
	if err == nil && c.Bucket != nil {
		err = fmt.Errorf("%w: counter %q is bucketed; a counter cache keeps a plain counter", errs.ErrInvalidConfig, counter)
	}
	if err != nil {
		return err
	}
	var fkParts []*schema.Field
	if parent.Key.Parts != nil {
		if fkParts, err = compositeFKs(rel, parent, typ.String()+"."+association); err != nil {
			return err
		}
	} else if len(rel.References) > 1 && rel.Polymorphic == nil {
		return fmt.Errorf("%w: %s.%s: counter caches need a single foreign key", errs.ErrInvalidConfig, typ, association)
	} else if ref.PrimaryKey == nil || ref.PrimaryKey.DBName != parent.Key.Column {
		return fmt.Errorf("%w: %s.%s: the foreign key must reference %s's primary key", errs.ErrInvalidConfig, typ, association, parent.Type)
	}
	if err := fkSupported(ref.ForeignKey.FieldType); err != nil {
		return fmt.Errorf("%w: %s.%s: %v", errs.ErrInvalidConfig, childSchema.Name, ref.ForeignKey.Name, err)
	}
	if len(childSchema.PrimaryFields) == 0 {
		return fmt.Errorf("%w: %s: counter cache children need a primary key", errs.ErrUnsupportedModel, childSchema.Name)
	}
	cc := &counterCache{parent: parent, counter: c, fk: ref.ForeignKey, fkParts: fkParts, where: spec.Where, match: spec.Match, weight: 1, deleted: spec.WithDeleted}
	if spec.Weight != 0 {
		cc.weight = spec.Weight
	}
	if spec.Touch {
		if cc.touch = touchField(parentSchema); cc.touch == nil {
			return fmt.Errorf("%w: Touch: %s has no autoUpdateTime column (UpdatedAt)", errs.ErrInvalidConfig, parentSchema.Name)
		}
	}
	if spec.Sum != "" {
		f := childSchema.LookUpField(spec.Sum)
		if f == nil || f.DBName == "" {
			return fmt.Errorf("%w: Sum %q: not a column of %s", errs.ErrInvalidConfig, spec.Sum, childSchema.Name)
		}
		if _, err := toInt64(reflect.New(f.FieldType).Elem().Interface()); err != nil {
			return fmt.Errorf("%w: Sum %q: %s is not an integer column", errs.ErrInvalidConfig, spec.Sum, f.FieldType)
		}
		cc.sum = f
	}
	if spec.SumCounter != "" {
		if err := p.sumCounterOf(db, cc, childSchema, spec); err != nil {
			return err
		}
	}
	if spec.Match != nil {
		if spec.Where == nil {
			return fmt.Errorf("%w: Match needs Where: Fix counts with the SQL condition", errs.ErrInvalidConfig)
		}
		if spec.MatchType != childSchema.ModelType {
			return fmt.Errorf("%w: Match takes *%s, not *%s", errs.ErrInvalidConfig, childSchema.ModelType, spec.MatchType)
		}
	}

	if rel.Polymorphic != nil {
		polymorphic(cc, rel.Polymorphic)
	}

	r := &p.caches
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, dup := r.byCounter.Load(c); dup {
		return fmt.Errorf("%w: counter %q of %s is already a counter cache of %s", errs.ErrInvalidConfig, c.Name, parent.Type, prev.(*counterCache).child.schema.Name)
	}
	var caches []*counterCache
	if prev := p.childCachesOf(childSchema.ModelType); prev != nil {
		caches = prev.caches
	}
	next := newChildCaches(childSchema, append(caches[:len(caches):len(caches)], cc))
	r.byChild.Store(childSchema.ModelType, next)
	for _, c := range next.caches {
		r.byCounter.Store(c.counter, c)
	}
	return nil
}
