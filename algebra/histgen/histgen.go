package histgen

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/tqmon/tqmon/algebra"
)

// Config shapes a random history.
type Config struct {
	Seed uint64
	// Span is the number of chronons histories cover: times are in
	// [origin, origin+Span), where origin is 0 unless Edges moves it.
	Span int64
	// Entities is the number of instances of each entity type.
	Entities int
	// Tuples is the largest number of tuples of each event or interval relation.
	Tuples int
	// OpenPct is the percentage of intervals left open (to = forever).
	OpenPct int
	// MaxLen bounds interval lengths.
	MaxLen int64
	// Integrity makes every tuple lie within the lifetime of each entity
	// it names, as in a real system (acquisitional execution relies on it).
	Integrity bool
	// Edges places three histories in four elsewhere on the time line, by
	// seed: across the epoch (origin −Span/2), at the beginning of time
	// (origin Beginning) and at its end (every closed end a few chronons
	// before Forever), so that negative times and times next to the infinities
	// meet every operator and every query's constants.
	Edges bool
}

// Origin is the first time of the history cfg describes.
func (cfg Config) Origin() algebra.Time {
	if !cfg.Edges {
		return 0
	}
	switch cfg.Seed % 4 {
	case 1:
		return -cfg.Span / 2
	case 2:
		return algebra.Beginning
	case 3:
		// Entities' state changes run past Span: up to Span/3 + 4·MaxLen.
		return algebra.Forever - 2*cfg.Span - 4*cfg.MaxLen
	}
	return 0
}

// DefaultConfig is small enough for exhaustive reference evaluation of
// three-way joins and varied enough to meet every temporal relationship.
func DefaultConfig(seed uint64) Config {
	return Config{Seed: seed, Span: 30, Entities: 3, Tuples: 7, OpenPct: 15, MaxLen: 12}
}

// IDs returns the identifiers of n instances of an entity type: a prefix
// unique among the catalog's types followed by a number.
func IDs(cat *algebra.Catalog, entityType string, n int) []string {
	prefix := Prefixes(cat)[entityType]
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%d", prefix, i+1)
	}
	return ids
}

// Prefixes gives each entity type a short identifier prefix no other type
// shares: its first letter, else its first and last letters, else the
// shortest unique prefix of its name.
func Prefixes(cat *algebra.Catalog) map[string]string {
	out := map[string]string{}
	used := map[string]bool{}
	types := append([]string(nil), cat.EntityTypes...)
	sort.Strings(types)
	firsts := map[string]int{}
	for _, t := range types {
		firsts[t[:1]]++
	}
	for _, t := range types {
		cands := []string{t[:1], t[:1] + t[len(t)-1:]}
		for n := 2; n <= len(t); n++ {
			cands = append(cands, t[:n])
		}
		if firsts[t[:1]] > 1 {
			cands = cands[1:]
		}
		for _, c := range cands {
			if !used[c] {
				out[t], used[c] = c, true
				break
			}
		}
		if out[t] == "" {
			out[t] = t + "_"
		}
	}
	return out
}

// Random makes a random history over every relation of cat.
func Random(cat *algebra.Catalog, cfg Config) *algebra.History {
	r := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	origin := cfg.Origin()
	// within is a random time in the first n chronons of the history.
	within := func(n int64) algebra.Time { return origin + r.Int64N(n) }
	h := algebra.NewHistory(cat)
	ids := map[string][]string{}
	for _, t := range cat.EntityTypes {
		ids[t] = IDs(cat, t, cfg.Entities)
	}
	value := func(a algebra.Attr) algebra.Value {
		switch a.Type.Kind {
		case algebra.KindEntity:
			l := ids[a.Type.Entity]
			return algebra.Entity(l[r.IntN(len(l))])
		case algebra.KindEnum:
			m := a.Type.Enum.Members
			i := r.IntN(len(m))
			return algebra.Enum(m[i], i)
		case algebra.KindInt:
			return algebra.Int(int64(r.IntN(5)))
		case algebra.KindFloat:
			return algebra.Float(float64(r.IntN(9)) / 2)
		case algebra.KindString:
			return algebra.Str(string(rune('a' + r.IntN(3))))
		case algebra.KindBool:
			return algebra.Bool(r.IntN(2) == 0)
		case algebra.KindTime:
			return algebra.TimeVal(within(cfg.Span))
		case algebra.KindDuration:
			return algebra.DurationVal(r.Int64N(10))
		}
		return algebra.Value{}
	}
	interval := func() (algebra.Time, algebra.Time) {
		from := within(cfg.Span)
		if r.IntN(100) < cfg.OpenPct {
			return from, algebra.Forever
		}
		return from, from + 1 + r.Int64N(cfg.MaxLen)
	}
	// Entity relations first: their lifetimes bound the other tuples.
	rels := append([]*algebra.Relation(nil), cat.Relations...)
	sort.SliceStable(rels, func(i, j int) bool {
		return rels[i].Class == algebra.ClassEntity && rels[j].Class != algebra.ClassEntity
	})
	type span struct{ from, to algebra.Time }
	life := map[string]map[string]span{} // entity type → id → lifetime
	lifetime := func(vals []algebra.Value, rel *algebra.Relation) (algebra.Time, algebra.Time, bool) {
		lo, hi := origin, algebra.Forever
		for i, a := range rel.Attrs {
			if a.Type.Kind != algebra.KindEntity {
				continue
			}
			l, ok := life[a.Type.Entity]
			if !ok {
				continue // no entity relation for this type
			}
			sp, ok := l[vals[i].S]
			if !ok {
				return 0, 0, false
			}
			lo, hi = max(lo, sp.from), min(hi, sp.to)
		}
		return lo, hi, lo < hi && lo < origin+cfg.Span
	}
	// pick draws a tuple's attribute values and valid time; with Integrity
	// it retries until the entities named share a lifetime, and places the
	// tuple inside it.
	pick := func(rel *algebra.Relation, event bool) ([]algebra.Value, algebra.Time, algebra.Time, bool) {
		for try := 0; try < 20; try++ {
			vals := make([]algebra.Value, len(rel.Attrs))
			for j, a := range rel.Attrs {
				vals[j] = value(a)
			}
			if !cfg.Integrity {
				if event {
					t := within(cfg.Span)
					return vals, t, algebra.Next(t), true
				}
				from, to := interval()
				return vals, from, to, true
			}
			lo, hi, ok := lifetime(vals, rel)
			if !ok {
				continue
			}
			top := min(hi, origin+cfg.Span)
			from := lo + r.Int64N(top-lo)
			if event {
				return vals, from, algebra.Next(from), true
			}
			if hi == algebra.Forever && r.IntN(100) < cfg.OpenPct {
				return vals, from, algebra.Forever, true
			}
			to := from + 1 + r.Int64N(cfg.MaxLen)
			if hi != algebra.Forever {
				to = min(to, hi)
			}
			return vals, from, to, true
		}
		return nil, 0, 0, false
	}
	for _, rel := range rels {
		t := h.Table(rel.Name)
		switch rel.Class {
		case algebra.ClassEntity:
			// Each entity lives as a sequence of back-to-back state intervals.
			et := rel.Attrs[0].Type.Entity
			life[et] = map[string]span{}
			for _, id := range ids[et] {
				at := within(cfg.Span / 3)
				born := at
				steps := 1 + r.IntN(4)
				for s := 0; s < steps; s++ {
					vals := make([]algebra.Value, len(rel.Attrs))
					vals[0] = algebra.Entity(id)
					for i := 1; i < len(rel.Attrs); i++ {
						vals[i] = value(rel.Attrs[i])
					}
					end := at + 1 + r.Int64N(cfg.MaxLen)
					if s == steps-1 && r.IntN(100) < cfg.OpenPct*2 {
						end = algebra.Forever
					}
					t.Add(vals, at, end)
					life[et][id] = span{born, end}
					if end == algebra.Forever {
						break
					}
					at = end
				}
			}
		default:
			n := r.IntN(cfg.Tuples + 1)
			for i := 0; i < n; i++ {
				vals, from, to, ok := pick(rel, rel.IsEvent())
				if !ok {
					continue
				}
				t.Add(vals, from, to)
			}
		}
	}
	return h
}
