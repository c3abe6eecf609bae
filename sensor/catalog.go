package sensor

import (
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/grammar/source"
)

// reserved attribute names: the CSV history format uses them for valid time.
var reserved = map[string]bool{"from": true, "to": true, "at": true}

// CompileText parses and compiles a stored description (a recording's,
// a history directory's): one that begins with algebra.FleetMarker is a
// fleet's, and so is its catalog (algebra.Catalog.MarkFleet) — Observed
// and Lost with their Host, as the run that recorded it had them.
func CompileText(name, text string) (*algebra.Catalog, error) {
	f, err := sdl.Parse(name, text)
	if err != nil {
		return nil, err
	}
	cat, err := Compile(f)
	if err == nil && algebra.IsFleetSpec(text) {
		cat.MarkFleet()
	}
	return cat, err
}

// Compile checks a parsed sensor description and builds its catalog. Every
// problem found is reported (a source.ErrorList), not only the first.
func Compile(f *sdl.File) (*algebra.Catalog, error) {
	c := algebra.NewCatalog(f.Name)
	var errs source.ErrorList
	errf := func(pos source.Pos, format string, args ...any) { errs.AddIn(f.Src, f.Name, pos, format, args...) }

	typePos := map[string]source.Pos{}
	relPos := map[string]source.Pos{}
	entityRelOf := map[string]source.Pos{}
	var clockPos source.Pos

	// Entity types first, wherever they are declared, so relations may use a
	// type declared later in the file.
	for _, s := range f.Stmts {
		d, ok := s.(*sdl.EntityTypeDecl)
		if !ok {
			continue
		}
		for _, n := range d.Names {
			if p, dup := typePos[n.Name]; dup {
				errf(n.At, "entity type %s declared twice (first at %s)", n.Name, p)
				continue
			}
			if _, builtin := algebra.BuiltinType(n.Name); builtin || n.Name == "enum" {
				errf(n.At, "entity type %s has the name of a builtin type", n.Name)
				continue
			}
			typePos[n.Name] = n.At
			c.AddEntityType(n.Name)
		}
	}

	for _, s := range f.Stmts {
		switch d := s.(type) {
		case *sdl.EntityTypeDecl:
		case *sdl.ClockDecl:
			if clockPos.IsValid() {
				errf(d.At, "clock declared twice (first at %s)", clockPos)
				continue
			}
			clockPos = d.At
			if d.Period <= 0 {
				errf(d.ValPos, "clock period must be positive, not %s", d.Text)
				continue
			}
			c.ClockPeriod = d.Period
		case *sdl.RelationDecl:
			// Names first, so a duplicate is reported even when one of the
			// declarations has errors of its own.
			if d.Name.Name == "Clock" {
				errf(d.Name.At, "Clock is built in and cannot be declared")
				continue
			}
			if algebra.IsObservation(d.Name.Name) {
				errf(d.Name.At, "%s is built in (the observation) and cannot be declared", d.Name.Name)
				continue
			}
			if p, dup := relPos[d.Name.Name]; dup {
				errf(d.Name.At, "relation %s declared twice (first at %s)", d.Name.Name, p)
				continue
			}
			relPos[d.Name.Name] = d.Name.At
			r := compileRelation(d, c, f, errf)
			if r == nil {
				continue
			}
			if r.Class == algebra.ClassEntity {
				et := r.Attrs[0].Type.Entity
				if p, dup := entityRelOf[et]; dup {
					errf(d.Name.At, "entity type %s already has an entity relation (at %s)", et, p)
					continue
				}
				entityRelOf[et] = d.Name.At
			}
			c.AddRelation(r)
		}
	}
	markWhole(f, c)
	errs.Sort()
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// markWhole sets Strategy.Whole on each traced interval relation a sensor
// binding reports whole: one whose `to` clause binds values, so the
// kernel program keeps the begin's values until the end and reports the
// tuple once, there (bpfgen's ModeWhole). A monitor that compiles the
// SDL a resident announces marks the same relations, so it knows that
// their tuples come as late as they are long.
func markWhole(f *sdl.File, c *algebra.Catalog) {
	for _, s := range f.Stmts {
		d, ok := s.(*sdl.SensorDecl)
		if !ok || d.To == nil || len(d.To.Binds) == 0 {
			continue
		}
		if r := c.Lookup(d.Name.Name); r != nil && r.Class == algebra.ClassInterval && r.Strategy.Kind == algebra.Traced {
			r.Strategy.Whole = true
		}
	}
}

func compileRelation(d *sdl.RelationDecl, c *algebra.Catalog, f *sdl.File, errf func(source.Pos, string, ...any)) *algebra.Relation {
	r := &algebra.Relation{
		Name:       d.Name.Name,
		FlagHolder: -1,
		File:       f.Name,
		Pos:        d.Name.At,
		Src:        f.Src,
	}
	switch d.Class {
	case sdl.ClassEntity:
		r.Class = algebra.ClassEntity
	case sdl.ClassEvent:
		r.Class = algebra.ClassEvent
	default:
		r.Class = algebra.ClassInterval
	}
	ok := true
	seen := map[string]source.Pos{}
	for _, a := range d.Attrs {
		if p, dup := seen[a.Name.Name]; dup {
			errf(a.Name.At, "attribute %s declared twice in %s (first at %s)", a.Name.Name, r.Name, p)
			ok = false
			continue
		}
		seen[a.Name.Name] = a.Name.At
		if reserved[strings.ToLower(a.Name.Name)] {
			errf(a.Name.At, "attribute name %s is reserved for valid time (from, to, at)", a.Name.Name)
			ok = false
		}
		t, good := resolveType(a.Type, c, errf)
		if !good {
			ok = false
		}
		attr := algebra.Attr{Name: a.Name.Name, Type: t, Pos: a.Name.At}
		switch a.Role {
		case sdl.RolePerformer:
			attr.Role = algebra.RolePerformer
		case sdl.RoleInitiator:
			attr.Role = algebra.RoleInitiator
		case sdl.RoleTarget:
			attr.Role = algebra.RoleTarget
		}
		if attr.Role != algebra.RoleNone && good && t.Kind != algebra.KindEntity {
			errf(a.RolePos, "%s is %s, but only an entity-typed attribute can be the %s", a.Name.Name, article(t.String()), attr.Role)
			ok = false
		}
		r.Attrs = append(r.Attrs, attr)
	}
	for i, a := range r.Attrs {
		for j := 0; j < i; j++ {
			if a.Role != algebra.RoleNone && r.Attrs[j].Role == a.Role {
				errf(a.Pos, "%s is the %s of %s, but so is %s", a.Name, a.Role, r.Name, r.Attrs[j].Name)
				ok = false
			}
		}
	}

	if d.Class == sdl.ClassEntity {
		first := r.Attrs[0]
		switch {
		case !c.HasEntityType(r.Name):
			errf(d.Name.At, "entity relation %s needs an entity type of the same name (declare: entity type %s)", r.Name, r.Name)
			ok = false
		case first.Type.Kind != algebra.KindEntity || first.Type.Entity != r.Name:
			errf(d.Attrs[0].Name.At, "the first attribute of entity relation %s must be its identifier, of type %s", r.Name, r.Name)
			ok = false
		}
		if d.Strategy != nil {
			errf(d.Strategy.At, "entity relation %s is always enabled (an entity source) and takes no strategy", r.Name)
			ok = false
		}
	}

	if st := d.Strategy; st != nil && d.Class != sdl.ClassEntity {
		s := algebra.Strategy{}
		switch st.Kind {
		case sdl.Traced:
			s.Kind, s.Counter = algebra.Traced, 1
		case sdl.Sampled:
			s.Kind, s.Counter = algebra.Sampled, 1
		case sdl.TracedThenDisabled:
			s.Kind, s.Counter = algebra.TracedThenDisabled, 8
		}
		switch st.On {
		case sdl.RolePerformer:
			s.On = algebra.RolePerformer
		case sdl.RoleInitiator:
			s.On = algebra.RoleInitiator
		case sdl.RoleTarget:
			s.On = algebra.RoleTarget
		}
		if s.Kind == algebra.Sampled && s.On == algebra.RoleInitiator {
			errf(st.OnPos, "a sampled relation is sampled on its performer or its target, not its initiator")
			ok = false
		}
		if st.Counter != 0 {
			if st.Counter < 1 || st.Counter > 64 {
				errf(st.CounterPos, "counter must be 1 to 64 bits, not %d", st.Counter)
				ok = false
			}
			s.Counter = int(st.Counter)
		}
		r.Strategy = s
		for i, a := range r.Attrs {
			if a.Role == s.On {
				r.FlagHolder = i
			}
		}
		if r.FlagHolder < 0 {
			errf(st.OnPos, "%s is %s on its %s, but no attribute of %s is marked %s", r.Name, st.Kind, s.On, r.Name, s.On)
			ok = false
		}
	}
	if !ok {
		return nil
	}
	return r
}

func resolveType(t *sdl.TypeRef, c *algebra.Catalog, errf func(source.Pos, string, ...any)) (algebra.Type, bool) {
	if t.Name == "enum" && t.Enum != nil {
		seen := map[string]source.Pos{}
		var members []string
		ok := true
		for _, m := range t.Enum {
			if p, dup := seen[m.Name]; dup {
				errf(m.At, "enum member %s listed twice (first at %s)", m.Name, p)
				ok = false
				continue
			}
			seen[m.Name] = m.At
			members = append(members, m.Name)
		}
		return algebra.Type{Kind: algebra.KindEnum, Enum: algebra.NewEnumType(members)}, ok
	}
	if b, ok := algebra.BuiltinType(t.Name); ok {
		return b, true
	}
	if c.HasEntityType(t.Name) {
		return algebra.EntityType(t.Name), true
	}
	errf(t.At, "unknown type %s (want an entity type, int, float, string, bool, time, duration or enum(...))", t.Name)
	return algebra.Type{}, false
}

// article prefixes a type name with "a" or "an".
func article(s string) string {
	if s != "" && strings.ContainsRune("aeiouAEIOU", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}
