// Package gogen generates the Go sensors of a sensor description: a Go
// package that a subject program imports to create and change its entities
// and to fire its sensors. The generated code is gofmt'd and deterministic
// (the same description always gives the same bytes).
//
// For each entity type there is a typed identifier (a handle on the
// resident's entity, whose enable flags live with it) and lifecycle calls
// that feed the entity sources: New<Type>, Set<Type><Attr>… (a state
// change, for entity relations with state) and Delete<Type>. For each
// traced event relation there is one function whose disabled path is a
// single atomic load (the sensor's armed gate, inlined at the call site);
// for each interval relation a <Name>Begin returning a tuple handle and a
// <Name>End taking it; for each sampled relation the same pair records the
// state the sampler reads (sampling itself is requested by remote monitors
// and done by the resident). Spec() is the catalog the resident announces.
package gogen

import (
	"bytes"
	"fmt"
	"go/format"
	"strings"
	"unicode"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/resident"
)

// Generate returns the Go source of package pkg implementing the sensors
// of cat; sdl is the description's text, embedded for the handshake.
func Generate(cat *algebra.Catalog, sdl, pkg string) ([]byte, error) {
	if !isIdent(pkg) {
		return nil, fmt.Errorf("package name %q is not a Go identifier", pkg)
	}
	if err := Check(cat); err != nil {
		return nil, err
	}
	g := &gen{cat: cat, pkg: pkg, used: map[string]string{}}
	if err := g.names(); err != nil {
		return nil, err
	}
	g.file(sdl)
	src, err := format.Source(g.b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("gogen: generated code does not format: %v\n%s", err, g.b.Bytes())
	}
	return src, nil
}

// Check reports, with their places, the relations of cat that the Go
// resident cannot carry: an entity relation or a sensed relation (one with
// a strategy) has at most resident.MaxAttrs attributes, since a packet
// holds them in fixed slots. Relations only read from histories or stores
// are not limited.
func Check(cat *algebra.Catalog) error {
	var errs source.ErrorList
	for _, r := range cat.Relations {
		if r.Derived || r.IsClock() || r.Class != algebra.ClassEntity && r.Strategy.Kind == algebra.NotSensed {
			continue
		}
		if len(r.Attrs) > resident.MaxAttrs {
			pos := r.Pos
			if a := r.Attrs[resident.MaxAttrs]; a.Pos.IsValid() {
				pos = a.Pos
			}
			errs.AddIn(r.Src, r.File, pos, "%s has %d attributes; a sensed or entity relation has at most %d (the resident's packet slots)", r.Name, len(r.Attrs), resident.MaxAttrs)
		}
	}
	return errs.Err()
}

type gen struct {
	cat  *algebra.Catalog
	pkg  string
	b    bytes.Buffer
	used map[string]string // Go identifier → what claimed it
	// identifiers
	typeName  map[string]string // entity type → Go type
	relName   map[string]string // relation → exported Go name
	enumName  map[*algebra.EnumType]string
	enumOrder []*algebra.EnumType
}

func (g *gen) p(format string, args ...any) { fmt.Fprintf(&g.b, format, args...) }

var reserved = map[string]bool{
	"New": true, "Spec": true, "SDL": true, "Sensors": true, "Resident": true,
}

// exported makes a Go exported identifier of a name.
func exported(name string) string {
	r := []rune(name)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

var goKeywords = map[string]bool{
	"break": true, "case": true, "chan": true, "const": true, "continue": true, "default": true,
	"defer": true, "else": true, "fallthrough": true, "for": true, "func": true, "go": true,
	"goto": true, "if": true, "import": true, "interface": true, "map": true, "package": true,
	"range": true, "return": true, "select": true, "struct": true, "switch": true, "type": true, "var": true,
}

// param makes a parameter name of an attribute name.
func param(name string) string {
	r := []rune(name)
	r[0] = unicode.ToLower(r[0])
	s := string(r)
	if goKeywords[s] || s == "s" || s == "v" || s == "t" || s == "resident" {
		s += "_"
	}
	return s
}

func isIdent(s string) bool {
	for i, r := range s {
		if r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r)) {
			continue
		}
		return false
	}
	return s != "" && !goKeywords[s]
}

func (g *gen) claim(id, what string) error {
	if other, ok := g.used[id]; ok && other != what {
		return fmt.Errorf("generated name %s is needed for both %s and %s; rename one", id, other, what)
	}
	g.used[id] = what
	return nil
}

// names chooses every exported identifier and checks for clashes.
func (g *gen) names() error {
	g.typeName = map[string]string{}
	g.relName = map[string]string{}
	g.enumName = map[*algebra.EnumType]string{}
	for k := range reserved {
		g.used[k] = "the generated API"
	}
	for _, t := range g.cat.EntityTypes {
		name := exported(t)
		if err := g.claim(name, "entity type "+t); err != nil {
			return err
		}
		g.typeName[t] = name
	}
	for _, r := range g.cat.Relations {
		name := exported(r.Name)
		g.relName[r.Name] = name
		if lower(name) == "res" {
			return fmt.Errorf("relation %s: its generated field would clash with the resident's; rename it", r.Name)
		}
		if r.Class == algebra.ClassEntity || r.Strategy.Kind == algebra.NotSensed {
			continue
		}
		for _, suffix := range g.relSuffixes(r) {
			if err := g.claim(name+suffix, "relation "+r.Name); err != nil {
				return err
			}
		}
		if !r.IsEvent() {
			if err := g.claim(name+"Tuple", "relation "+r.Name); err != nil {
				return err
			}
		}
		for _, a := range r.Attrs {
			g.enumFor(r.Name, a)
		}
	}
	for _, r := range g.cat.Relations {
		if r.Class == algebra.ClassEntity {
			for _, a := range r.Attrs[1:] {
				g.enumFor(r.Name, a)
			}
		}
	}
	for _, e := range g.enumOrder {
		if err := g.claim(g.enumName[e], "an enum"); err != nil {
			return err
		}
	}
	return nil
}

func (g *gen) relSuffixes(r *algebra.Relation) []string {
	if r.IsEvent() {
		return []string{""}
	}
	return []string{"Begin", "End"}
}

// enumFor names an enum type after the first attribute that uses it.
func (g *gen) enumFor(rel string, a algebra.Attr) {
	if a.Type.Kind != algebra.KindEnum || g.enumName[a.Type.Enum] != "" {
		return
	}
	g.enumName[a.Type.Enum] = exported(rel) + exported(a.Name)
	g.enumOrder = append(g.enumOrder, a.Type.Enum)
}

// goType is the Go type of an attribute in the generated API.
func (g *gen) goType(t algebra.Type) string {
	switch t.Kind {
	case algebra.KindEntity:
		return g.typeName[t.Entity]
	case algebra.KindEnum:
		return g.enumName[t.Enum]
	case algebra.KindInt:
		return "int64"
	case algebra.KindFloat:
		return "float64"
	case algebra.KindString:
		return "string"
	case algebra.KindBool:
		return "bool"
	case algebra.KindTime:
		return "time.Time"
	case algebra.KindDuration:
		return "time.Duration"
	}
	return "?"
}

// valueExpr converts a Go expression of an attribute's type to a
// resident.Value literal.
func valueExpr(t algebra.Type, x string) string {
	switch t.Kind {
	case algebra.KindEntity:
		return fmt.Sprintf("{E: %s.e}", x)
	case algebra.KindEnum:
		return fmt.Sprintf("{N: uint64(%s)}", x)
	case algebra.KindInt:
		return fmt.Sprintf("{N: uint64(%s)}", x)
	case algebra.KindFloat:
		return fmt.Sprintf("{N: math.Float64bits(%s)}", x)
	case algebra.KindString:
		return fmt.Sprintf("{S: %s}", x)
	case algebra.KindBool:
		return fmt.Sprintf("{N: b2u(%s)}", x)
	case algebra.KindTime:
		return fmt.Sprintf("{N: uint64(%s.UnixNano())}", x)
	case algebra.KindDuration:
		return fmt.Sprintf("{N: uint64(%s)}", x)
	}
	return "{}"
}

func wireKind(t algebra.Type) string {
	switch t.Kind {
	case algebra.KindEntity:
		return "wire.VEntity"
	case algebra.KindEnum:
		return "wire.VEnum"
	case algebra.KindInt:
		return "wire.VInt"
	case algebra.KindFloat:
		return "wire.VFloat"
	case algebra.KindString:
		return "wire.VString"
	case algebra.KindBool:
		return "wire.VBool"
	case algebra.KindTime:
		return "wire.VTime"
	case algebra.KindDuration:
		return "wire.VDuration"
	}
	return "0"
}

// uses reports whether an attribute of kind appears in a generated call.
func (g *gen) uses(kind algebra.Kind) bool {
	for _, r := range g.cat.Relations {
		if r.Class != algebra.ClassEntity && r.Strategy.Kind == algebra.NotSensed {
			continue
		}
		for _, a := range r.Attrs {
			if a.Type.Kind == kind {
				return true
			}
		}
	}
	return false
}

func (g *gen) file(sdl string) {
	g.p("// Code generated by tqmon sensors compile. DO NOT EDIT.\n\n")
	g.p("// Package %s holds the sensors of a subject system, generated from its\n// sensor description (SDL below). Create a resident monitor with Spec(),\n// bind the sensors with New, and call them where the system acts.\n", g.pkg)
	g.p("package %s\n\n", g.pkg)
	g.p("import (\n\t\"context\"\n")
	if g.uses(algebra.KindFloat) {
		g.p("\t\"math\"\n")
	}
	if g.uses(algebra.KindTime) || g.uses(algebra.KindDuration) {
		g.p("\t\"time\"\n")
	}
	g.p("\n\t\"github.com/tqmon/tqmon/resident\"\n\t\"github.com/tqmon/tqmon/resident/transport\"\n\t\"github.com/tqmon/tqmon/resident/wire\"\n)\n\n")
	g.p("// SDL is the sensor description these sensors implement.\nconst SDL = %s\n\n", goString(sdl))

	// IDs.
	g.p("// Entity types.\nconst (\n")
	for i, t := range g.cat.EntityTypes {
		g.p("\ttype%s resident.TypeID = %d\n", g.typeName[t], i)
	}
	g.p(")\n\n// Relations (sensors and entity relations).\nconst (\n")
	for i, r := range g.cat.Relations {
		g.p("\tsensor%s resident.SensorID = %d\n", g.relName[r.Name], i)
	}
	g.p(")\n\n")

	// Enums.
	for _, e := range g.enumOrder {
		name := g.enumName[e]
		g.p("// %s is an enumeration of the description.\ntype %s uint8\n\nconst (\n", name, name)
		for i, m := range e.Members {
			g.p("\t%s%s %s = %d\n", name, exported(m), name, i)
		}
		g.p(")\n\nvar %sNames = [...]string{", lower(name))
		for _, m := range e.Members {
			g.p("%q, ", m)
		}
		g.p("}\n\n// String returns the member's name.\nfunc (x %s) String() string {\n\tif int(x) < len(%sNames) {\n\t\treturn %sNames[x]\n\t}\n\treturn \"?\"\n}\n\n", name, lower(name), lower(name))
	}

	// Spec.
	g.spec()

	// Entity handles.
	for _, t := range g.cat.EntityTypes {
		name := g.typeName[t]
		g.p("// %s is a %s entity: a handle on the resident's record of it, where its\n// enable flags live. The zero %s is no entity.\ntype %s struct{ e *resident.Entity }\n\n", name, t, name, name)
		g.p("// ID is the %s's identifier.\nfunc (x %s) ID() string {\n\tif x.e == nil {\n\t\treturn \"\"\n\t}\n\treturn x.e.ID()\n}\n\n", t, name)
	}

	// Sensors struct.
	g.p("// Sensors binds the generated sensors to a resident monitor.\ntype Sensors struct {\n\tres *resident.Resident\n")
	for _, r := range g.cat.Relations {
		g.p("\t%s *resident.Sensor\n", lower(g.relName[r.Name]))
	}
	g.p("}\n\n// New binds the sensors to r, which must have been made from Spec().\nfunc New(r *resident.Resident) *Sensors {\n\treturn &Sensors{\n\t\tres: r,\n")
	for _, r := range g.cat.Relations {
		g.p("\t\t%s: r.Sensor(sensor%s),\n", lower(g.relName[r.Name]), g.relName[r.Name])
	}
	g.p("\t}\n}\n\n")
	g.p("// Resident returns the resident monitor the sensors report to.\nfunc (s *Sensors) Resident() *resident.Resident { return s.res }\n\n")
	g.p(`// Serve is the whole glue of a monitored program: it makes a resident
// monitor from Spec(), binds the sensors to it, and serves remote monitors
// (tqmon query --connect ADDR) at addr — a unix socket path, or host:port
// with the shared token in $TQMON_TOKEN — until ctx is done, when it stops
// serving and closes the resident. It returns once listening: an address
// that does not listen is its error.
func Serve(ctx context.Context, addr string) (*Sensors, error) {
	token, err := transport.Token("", "")
	if err != nil {
		return nil, err
	}
	r := resident.New(Spec(), resident.Options{})
	done, err := transport.ServeAt(ctx, addr, transport.Adapt(r.Hello, r.Open), transport.ServerOptions{Token: token})
	if err != nil {
		r.Close()
		return nil, err
	}
	go func() {
		<-done
		r.Close()
	}()
	return New(r), nil
}

`)

	// Entity lifecycle.
	for _, t := range g.cat.EntityTypes {
		g.lifecycle(t)
	}
	// Sensors.
	for _, r := range g.cat.Relations {
		if r.Class == algebra.ClassEntity || r.Strategy.Kind == algebra.NotSensed {
			continue // entity lifecycle above; relations without a sensor have no calls
		}
		if r.IsEvent() {
			g.event(r)
		} else {
			g.interval(r)
		}
	}
	if g.uses(algebra.KindBool) {
		g.p("func b2u(b bool) uint64 {\n\tif b {\n\t\treturn 1\n\t}\n\treturn 0\n}\n")
	}
}

func lower(s string) string {
	r := []rune(s)
	r[0] = unicode.ToLower(r[0])
	return string(r)
}

func goString(s string) string {
	if !strings.Contains(s, "`") {
		return "`" + s + "`"
	}
	return fmt.Sprintf("%q", s)
}

func (g *gen) spec() {
	strategy := map[algebra.StrategyKind]string{
		algebra.NotSensed: "resident.NotSensed", algebra.Traced: "resident.Traced",
		algebra.Sampled: "resident.Sampled", algebra.TracedThenDisabled: "resident.TracedThenDisabled",
	}
	class := map[algebra.Class]string{
		algebra.ClassEntity: "resident.ClassEntity", algebra.ClassEvent: "resident.ClassEvent",
		algebra.ClassInterval: "resident.ClassInterval",
	}
	g.p("// Spec describes the sensors to the resident monitor.\nfunc Spec() *resident.Spec {\n\treturn &resident.Spec{\n\t\tSDL: SDL,\n\t\tTypes: []string{")
	for _, t := range g.cat.EntityTypes {
		g.p("%q, ", t)
	}
	g.p("},\n\t\tPeriod: %d,\n\t\tSensors: []resident.SensorSpec{\n", g.cat.ClockPeriod)
	for _, r := range g.cat.Relations {
		g.p("\t\t\t{Name: %q, Class: %s, Strategy: %s, Flag: %d, Attrs: []resident.AttrSpec{\n", r.Name, class[r.Class], strategy[r.Strategy.Kind], r.FlagHolder)
		for _, a := range r.Attrs {
			g.p("\t\t\t\t{Name: %q, Kind: %s", a.Name, wireKind(a.Type))
			if a.Type.Kind == algebra.KindEntity {
				g.p(", Type: type%s", g.typeName[a.Type.Entity])
			}
			if a.Type.Kind == algebra.KindEnum {
				g.p(", Enum: %sNames[:]", lower(g.enumName[a.Type.Enum]))
			}
			g.p("},\n")
		}
		g.p("\t\t\t}},\n")
	}
	g.p("\t\t},\n\t\tEntityRel: []int{")
	for _, t := range g.cat.EntityTypes {
		idx := -1
		for i, r := range g.cat.Relations {
			if r.Class == algebra.ClassEntity && r.Attrs[0].Type.Entity == t {
				idx = i
			}
		}
		g.p("%d, ", idx)
	}
	g.p("},\n\t}\n}\n\n")
}

func (g *gen) entityRel(t string) *algebra.Relation {
	for _, r := range g.cat.Relations {
		if r.Class == algebra.ClassEntity && r.Attrs[0].Type.Entity == t {
			return r
		}
	}
	return nil
}

// params renders "a A, b B" and the values array for attributes.
func (g *gen) params(attrs []algebra.Attr) (decl string, vals string) {
	var ds, vs []string
	for _, a := range attrs {
		n := param(a.Name)
		ds = append(ds, n+" "+g.goType(a.Type))
		vs = append(vs, valueExpr(a.Type, n))
	}
	return strings.Join(ds, ", "), strings.Join(vs, ", ")
}

func (g *gen) lifecycle(t string) {
	name := g.typeName[t]
	rel := g.entityRel(t)
	var state []algebra.Attr
	if rel != nil {
		state = rel.Attrs[1:]
	}
	decl, vals := g.params(state)
	args := "id string"
	if decl != "" {
		args += ", " + decl
	}
	g.p("// New%s records the creation of %s id", name, t)
	if len(state) > 0 {
		g.p(" in its initial state")
	}
	g.p(": the %s\n// entity source gains it (sensors enabled for it before it existed take\n// effect now).\n", t)
	g.p("func (s *Sensors) New%s(%s) %s {\n", name, args, name)
	if len(state) > 0 {
		g.p("\tv := [%d]resident.Value{%s}\n\treturn %s{s.res.Create(type%s, id, v[:])}\n}\n\n", len(state), vals, name, name)
	} else {
		g.p("\treturn %s{s.res.Create(type%s, id, nil)}\n}\n\n", name, name)
	}
	if len(state) > 0 {
		g.p("// Set%sState records a change of x's state: its current tuple ends and\n// one with the new state begins, at the same instant.\n", name)
		g.p("func (s *Sensors) Set%sState(x %s, %s) {\n\tv := [%d]resident.Value{%s}\n\tx.e.SetState(v[:])\n}\n\n", name, name, decl, len(state), vals)
	}
	g.p("// Delete%s records that x no longer exists.\nfunc (s *Sensors) Delete%s(x %s) { x.e.Delete() }\n\n", name, name, name)
}

func (g *gen) event(r *algebra.Relation) {
	name := g.relName[r.Name]
	decl, vals := g.params(r.Attrs)
	g.p("// %s fires the %s sensor (%s on %s). Disabled, it costs one atomic\n// load; enabled for the %s, it reports a packet.\n", name, r.Name, r.Strategy.Kind, r.Strategy.On, r.Attrs[r.FlagHolder].Name)
	var args []string
	for _, a := range r.Attrs {
		args = append(args, param(a.Name))
	}
	g.p("func (s *Sensors) %s(%s) {\n\tif s.%s.Armed() {\n\t\ts.%sFire(%s)\n\t}\n}\n\n",
		name, decl, lower(name), lower(name), strings.Join(args, ", "))
	g.p("// %sFire is %s's enabled path, kept out of line so that the gate\n// inlines at every call site.\n//\n//go:noinline\nfunc (s *Sensors) %sFire(%s) {\n\tv := [%d]resident.Value{%s}\n\ts.%s.Event(v[:])\n}\n\n",
		lower(name), name, lower(name), decl, len(r.Attrs), vals, lower(name))
}

func (g *gen) interval(r *algebra.Relation) {
	name := g.relName[r.Name]
	decl, vals := g.params(r.Attrs)
	tuple := name + "Tuple"
	g.p("// %s is an open %s tuple, from %sBegin to %sEnd.\ntype %s struct {\n", tuple, r.Name, name, name, tuple)
	for _, a := range r.Attrs {
		g.p("\t%s %s\n", exported(a.Name), g.goType(a.Type))
	}
	g.p("\tiv resident.Interval\n}\n\n")
	var call, endCall, what string
	switch r.Strategy.Kind {
	case algebra.Sampled:
		call, endCall = "StateBegin", "StateEnd"
		what = fmt.Sprintf("records a %s tuple beginning: the state the resident samples when\n// a remote monitor asks (%s on %s); no packet is sent now", r.Name, r.Strategy.Kind, r.Strategy.On)
	default:
		call, endCall = "Begin", "End"
		what = fmt.Sprintf("records a %s tuple beginning (%s on %s)", r.Name, r.Strategy.Kind, r.Strategy.On)
	}
	var fields []string
	for _, a := range r.Attrs {
		fields = append(fields, param(a.Name))
	}
	g.p("// %sBegin %s.\nfunc (s *Sensors) %sBegin(%s) %s {\n\tv := [%d]resident.Value{%s}\n\treturn %s{%s, s.%s.%s(v[:])}\n}\n\n",
		name, what, name, decl, tuple, len(r.Attrs), vals, tuple, strings.Join(fields, ", "), lower(name), call)
	var endVals []string
	for _, a := range r.Attrs {
		endVals = append(endVals, valueExpr(a.Type, "t."+exported(a.Name)))
	}
	g.p("// %sEnd records that tuple t ends now.\nfunc (s *Sensors) %sEnd(t %s) {\n\tv := [%d]resident.Value{%s}\n\ts.%s.%s(t.iv, v[:])\n}\n\n",
		name, name, tuple, len(r.Attrs), strings.Join(endVals, ", "), lower(name), endCall)
}
