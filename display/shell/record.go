package shell

import (
	"fmt"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/store/record"
	"github.com/tqmon/tqmon/subject"
)

// setRecord makes the session store the results of its named retrieves in
// a database (\record DB), or stops (\record off).
func (sh *shell) setRecord(dir string) {
	switch dir {
	case "":
		if sh.record == "" {
			fmt.Fprintln(sh.out, "Not recording: \\record DB stores the results of named retrieves there.")
		} else {
			fmt.Fprintf(sh.out, "Recording named retrieves' results into %s.\n", sh.record)
		}
		return
	case "off":
		sh.record = ""
		fmt.Fprintln(sh.out, "Recording is off.")
		return
	}
	if _, err := sh.src.Spec(); err != nil {
		sh.errorf("%v\n", err)
		return
	}
	sh.record = dir
	fmt.Fprintf(sh.out, "Recording the results of named retrieves (retrieve NAME ...) into %s.\n", dir)
}

// shellRecording stores one statement's named results.
type shellRecording struct {
	rec   *record.ResultDB
	index []int // statement → index among the recorded, or −1
}

// startRecord opens the recording of stmts' named results, if \record is
// on; nil otherwise (its methods do nothing on nil).
func (sh *shell) startRecord(stmts []*check.Retrieve) *shellRecording {
	if sh.record == "" {
		return nil
	}
	var named []*check.Retrieve
	idx := make([]int, len(stmts))
	for i, r := range stmts {
		idx[i] = -1
		if r.Name == "" {
			sh.notef("(retrieve %d is not recorded: name it, retrieve NAME (...), to record it)\n", i+1)
			continue
		}
		idx[i] = len(named)
		named = append(named, r)
	}
	if len(named) == 0 {
		return nil
	}
	rec, err := subject.Results(sh.src, sh.record, named)
	if err != nil {
		sh.errorf("%s", sh.render(err))
		return nil
	}
	return &shellRecording{rec: rec, index: idx}
}

func (r *shellRecording) elem(i int, e stream.Elem) {
	if r != nil && r.index[i] >= 0 {
		r.rec.Elem(r.index[i], e)
	}
}

func (r *shellRecording) table(i int, t *algebra.Table) {
	if r != nil && r.index[i] >= 0 {
		r.rec.Table(r.index[i], t)
	}
}

func (r *shellRecording) finish(sh *shell) {
	if r == nil {
		return
	}
	if err := r.rec.Close(); err != nil {
		sh.errorf("%s", sh.render(err))
	}
}
