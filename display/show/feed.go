package show

import (
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/scene"
)

// Feed connects a program's results to a scene: OnElem may be called from
// the goroutine running the network; the deltas wait in Inbox until the
// goroutine that owns the scene drains them.
type Feed struct {
	Scene *scene.Scene
	Inbox *scene.Inbox
	rels  []*scene.Relation
}

// NewFeed makes a scene for the setup's spec, with a store for each fed
// relation.
func (s *Setup) NewFeed() *Feed {
	f := &Feed{Scene: scene.New(s.Spec), Inbox: scene.NewInbox()}
	for _, r := range s.feeds {
		var st *scene.Relation
		if r != nil {
			st = f.Scene.Relation(r)
		}
		f.rels = append(f.rels, st)
	}
	return f
}

// OnElem takes a result delta of statement stmt of the setup's program.
func (f *Feed) OnElem(stmt int, e stream.Elem) {
	if stmt < len(f.rels) && f.rels[stmt] != nil {
		f.Inbox.Put(f.rels[stmt], e)
	}
}

// Hook sets the collectors of a network built from the setup's program to
// feed the display.
func (f *Feed) Hook(net *exec.Network) {
	for i, st := range net.Stmts {
		if i < len(f.rels) && f.rels[i] != nil {
			i := i
			st.Result.OnElem = func(e stream.Elem) { f.OnElem(i, e) }
		}
	}
}
