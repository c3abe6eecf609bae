package db

import (
	"fmt"
	"strings"

	"github.com/tqmon/tqmon/algebra"
)

// AddRelations adds relations — the results of retrieves, to be recorded
// as they are produced — to the database: each is declared in its sensor
// description (SDL, without a sensor), so the database stays
// self-describing. Call it before NewWriter.
func (d *DB) AddRelations(rels []*algebra.Relation) error {
	if d.readOnly {
		return fmt.Errorf("database %s is open read-only", d.dir)
	}
	if d.writer != nil {
		return fmt.Errorf("database %s: relations are added before writing", d.dir)
	}
	if len(rels) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(d.spec.Text, "\n"))
	b.WriteString("\n\n-- Recorded by tqmon query --record: results of retrieves.\n")
	seen := map[string]bool{}
	for _, r := range rels {
		if d.cat.Lookup(r.Name) != nil || seen[r.Name] {
			return fmt.Errorf("database %s already has a relation %s: record a retrieve of another name, or into another database", d.dir, r.Name)
		}
		seen[r.Name] = true
		decl, err := declare(d.cat, r)
		if err != nil {
			return err
		}
		b.WriteString(decl + "\n")
	}
	spec := Spec{Name: d.spec.Name, Text: b.String()}
	cat, err := compileSpec(spec)
	if err != nil {
		return fmt.Errorf("cannot record %s: %w", rels[0].Name, err)
	}
	for i, m := range d.rels {
		if r := cat.Relations[i]; r.Name != m.rel.Name || r.Signature() != m.rel.Signature() {
			return fmt.Errorf("database %s: adding relations changed %s", d.dir, m.rel.Name)
		}
	}
	txn := d.bdb.NewTransaction(true)
	defer txn.Discard()
	var metas []*relMeta
	set := func(k, v []byte) {
		if err == nil {
			err = txn.Set(k, v)
		}
	}
	set(singleKey(pSpec), encodeSpec(spec.Name, spec.Text))
	for _, r := range cat.Relations[len(d.rels):] {
		m := &relMeta{id: uint16(len(d.rels) + len(metas)), rel: r, sch: schemaOf(r)}
		metas = append(metas, m)
		set(relKey(pRelation, m.id), encodeRelation(m.id, r.Name, r.Signature()))
		set(relKey(pState, m.id), encodeState(&m.state))
	}
	if err == nil {
		err = txn.Commit()
	}
	if err != nil {
		return fmt.Errorf("database %s: %w", d.dir, err)
	}
	// The old relations keep their schemas; the catalog is the new one.
	for i, m := range d.rels {
		m.rel = cat.Relations[i]
	}
	d.spec, d.cat = spec, cat
	for _, m := range metas {
		d.rels = append(d.rels, m)
		d.byName[m.rel.Name] = m
	}
	return nil
}

// declare writes a relation's SDL declaration, without a sensor.
func declare(cat *algebra.Catalog, r *algebra.Relation) (string, error) {
	var attrs []string
	for _, a := range r.Attrs {
		t := a.Type.String()
		if a.Type.Kind == algebra.KindEntity && !cat.HasEntityType(a.Type.Entity) {
			return "", fmt.Errorf("cannot record %s: its attribute %s has entity type %s, which the database does not describe", r.Name, a.Name, a.Type.Entity)
		}
		attrs = append(attrs, a.Name+": "+t)
	}
	class := "interval"
	if r.IsEvent() {
		class = "event"
	}
	return fmt.Sprintf("%s relation %s(%s)", class, r.Name, strings.Join(attrs, ", ")), nil
}
