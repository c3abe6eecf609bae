package show

import (
	"fmt"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/display/spec"
	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/query"
)

// Config is what a display run is made of.
type Config struct {
	Catalog *algebra.Catalog
	// Queries are the user's TQuel sources (may be empty).
	Queries []query.Source
	// Display is the display spec.
	Display query.Source
	Check   check.Options
	// FeedAll feeds every primitive relation to the scene, so that a spec
	// changed while running may draw any (recorded data: nothing to
	// enable). Otherwise only the relations the spec draws are fed (live:
	// only their sensors are enabled).
	FeedAll bool
}

// Setup is a compiled display run: the program (the user's statements,
// then one retrieve per fed primitive relation) and the checked spec.
type Setup struct {
	Prog   *query.Program
	Spec   *spec.Spec
	Schema spec.Schema
	// feeds is, per statement of Prog, the relation whose tuples it
	// delivers to the display, or nil.
	feeds []*algebra.Relation
	name  string
	// Users is how many of Prog's statements are the user's queries
	// (first); the rest feed the display.
	Users int
}

// FeedSourceName names the generated statements in diagnostics.
const FeedSourceName = "<display feeds>"

// Compile checks the queries, then the display spec against the catalog
// and the queries' named results, then compiles the queries together with
// a retrieve of each primitive relation to feed. Errors are positioned in
// the queries or the spec.
func Compile(cfg Config) (*Setup, error) {
	var derived []*algebra.Relation
	if len(cfg.Queries) > 0 {
		user, err := query.Compile(cfg.Catalog, cfg.Queries, cfg.Check)
		if err != nil {
			return nil, err
		}
		for _, st := range user.Stmts {
			if st.Name != "" {
				derived = append(derived, st.Result)
			}
		}
	}
	sc := spec.NewSchema(cfg.Catalog, derived...)
	sp, err := spec.Load(cfg.Display.Name, cfg.Display.Text, sc)
	if err != nil {
		return nil, err
	}
	var prims []*algebra.Relation
	if cfg.FeedAll {
		for _, r := range cfg.Catalog.Relations {
			if len(r.Attrs) > 0 {
				prims = append(prims, r)
			}
		}
	} else {
		for _, r := range sp.Relations() {
			if !r.Derived {
				prims = append(prims, r)
			}
		}
	}
	srcs := append([]query.Source(nil), cfg.Queries...)
	if len(prims) > 0 {
		srcs = append(srcs, query.Source{Name: FeedSourceName, Text: FeedQueries(prims)})
	}
	prog, err := query.Compile(cfg.Catalog, srcs, cfg.Check)
	if err != nil {
		return nil, err
	}
	s := &Setup{Prog: prog, Spec: sp, Schema: sc, name: cfg.Display.Name}
	// Named results are always fed: they are computed anyway, and a spec
	// changed while running may draw them.
	user := len(prog.Stmts) - len(prims)
	s.Users = user
	for i, st := range prog.Stmts {
		var rel *algebra.Relation
		switch {
		case i >= user:
			rel = prims[i-user]
		case st.Name != "":
			rel = sc[st.Name]
		}
		s.feeds = append(s.feeds, rel)
	}
	return s, nil
}

// FeedQueries is the TQuel that feeds relations to a display: for each, a
// range variable of its own and a retrieve of every attribute (under
// neutral names, as attributes may be named like valid-time keywords).
func FeedQueries(rels []*algebra.Relation) string {
	var b strings.Builder
	for i, r := range rels {
		v := fmt.Sprintf("tqmon_display_%d", i+1)
		fmt.Fprintf(&b, "range of %s is %s\nretrieve (", v, r.Name)
		for j, a := range r.Attrs {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "c%d = %s.%s", j, v, a.Name)
		}
		b.WriteString(")\n")
	}
	return b.String()
}

// Fed lists the relations the program feeds the display.
func (s *Setup) Fed() []*algebra.Relation {
	var out []*algebra.Relation
	for _, r := range s.feeds {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}

// Reload checks a new text of the display spec against the same relations,
// and that the run feeds every relation it draws: a spec changed while
// running can draw only what the run collects.
func (s *Setup) Reload(text string) (*spec.Spec, error) {
	sp, err := spec.Load(s.name, text, s.Schema)
	if err != nil {
		return nil, err
	}
	fed := map[string]bool{}
	for _, r := range s.Fed() {
		fed[r.Name] = true
	}
	var errs source.ErrorList
	for _, r := range sp.Relations() {
		if !fed[r.Name] {
			errs.AddIn(sp.Src, s.name, posOf(sp, r.Name), "%s is not collected in this run: start the display again with it in the spec", r.Name)
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return sp, nil
}

// posOf is where a spec first draws a relation.
func posOf(sp *spec.Spec, name string) source.Pos {
	var best source.Pos
	consider := func(p source.Pos, r *algebra.Relation) {
		if r.Name == name && (!best.IsValid() || p.Before(best)) {
			best = p
		}
	}
	for _, x := range sp.Icons {
		consider(x.RelPos, x.Rel)
	}
	for _, x := range sp.Links {
		consider(x.RelPos, x.Rel)
	}
	for _, x := range sp.Flashes {
		consider(x.RelPos, x.Rel)
	}
	for _, x := range sp.Plots {
		consider(x.RelPos, x.Rel)
	}
	return best
}
