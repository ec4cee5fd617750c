package countercache

import (
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/errs"
)

// Counter caches of parents with a composite primary key: the child's foreign
// key has one column per parent key column (gorm's foreignKey:A,B;references:A,B),
// and the parent's record_id is built from those columns as the parent's own
// key builds it (key_composite.go). A child whose foreign key has a nil or zero
// part counts nowhere, as a child with a nil single-column foreign key.

// compositeFKs returns the child's foreign-key fields in the order of the
// parent's key columns, or an error when the relationship's references are not
// exactly the parent's primary key.
func compositeFKs(rel *schema.Relationship, parent *meta.Model, what string) ([]*schema.Field, error) {
	if rel.Polymorphic != nil {
		return nil, fmt.Errorf("%w: %s: a polymorphic counter cache needs a parent with a single-column key", errs.ErrUnsupportedModel, what)
	}
	out := make([]*schema.Field, len(parent.Key.Parts))
	for _, r := range rel.References {
		for i, p := range parent.Key.Parts {
			if r.PrimaryKey != nil && r.PrimaryKey.DBName == p.Column && r.ForeignKey != nil {
				out[i] = r.ForeignKey
			}
		}
	}
	for i, f := range out {
		if f == nil || len(rel.References) != len(out) {
			return nil, fmt.Errorf("%w: %s: the foreign key must reference every column of %s's primary key (missing %s)", errs.ErrInvalidConfig, what, parent.Type, parent.Key.Parts[i].Column)
		}
		if err := fkSupported(f.FieldType); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", errs.ErrInvalidConfig, f.Name, err)
		}
	}
	return out, nil
}

// fkIDOf is fkID of the cache's foreign key in an image's foreign-key values.
func (c *counterCache) fkIDOf(fks []any) (string, bool, error) {
	if c.fkParts == nil {
		return fkID(fks[c.fkAt])
	}
	vals := make([]any, len(c.fkAts))
	for i, at := range c.fkAts {
		vals[i] = fks[at]
	}
	return compositeFKID(vals)
}

// compositeFKID formats a composite foreign key's values as its parent's record_id.
func compositeFKID(vals []any) (string, bool, error) {
	parts := make([]string, len(vals))
	for i, v := range vals {
		id, ok, err := fkID(v)
		if err != nil || !ok {
			return "", false, err
		}
		parts[i] = id
	}
	id := meta.JoinKeyParts(parts)
	if err := meta.CheckKey("foreign key", id); err != nil {
		return "", false, err
	}
	return id, true, nil
}

// countChildrenComposite is countChildren for a composite foreign key.
//
//	SELECT memberships.org_id, memberships.handle, COUNT(*) FROM sessions
//	WHERE (org_id, handle) IN ((?, ?), ...) ... GROUP BY org_id, handle
func (p *Caches) countChildrenComposite(tx *gorm.DB, c *counterCache, keys []any, into deltas) error {
	cols := make([]clause.Column, len(c.fkParts))
	for i, f := range c.fkParts {
		cols[i] = clause.Column{Table: clause.CurrentTable, Name: f.DBName}
	}
	rows, err := childCounts(tx, c, cols, cols, keys)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		dest := make([]any, 0, len(cols)+1)
		for _, f := range c.fkParts {
			dest = append(dest, nullable(f))
		}
		var n int64
		if err := rows.Scan(append(dest, &n)...); err != nil {
			return err
		}
		vals := make([]any, len(c.fkParts))
		for i := range vals {
			vals[i] = scanned(dest[i])
		}
		id, ok, err := compositeFKID(vals)
		if err != nil {
			return err
		}
		if ok {
			if err := into.add(c, id, n, c.weight); err != nil {
				return err
			}
		}
	}
	return rows.Err()
}
