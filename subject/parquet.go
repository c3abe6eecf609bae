package subject

import (
	"context"
	"fmt"
	"io"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/parquet"
	"github.com/tqmon/tqmon/store/replay"
)

// parquetSubject is a Parquet recording (store/parquet): queries run as
// over a database (replay.RunStore), each relation read through its scan
// window from the files that window needs.
type parquetSubject struct {
	recording
	dir string
	st  *parquet.Store
	h   *algebra.History // the whole recording, loaded on first need
}

func openParquet(dir string) (*parquetSubject, error) {
	st, err := parquet.Open(dir)
	if err != nil {
		return nil, badInput(err)
	}
	return &parquetSubject{dir: dir, st: st}, nil
}

func (s *parquetSubject) Describe() string {
	n := 0
	for _, k := range s.st.Files() {
		n += k
	}
	desc := fmt.Sprintf("Parquet recording %s: %d relations, %d files", s.dir, len(s.st.Catalog().Relations), n)
	if start, end, ok := s.st.Extent(); ok {
		desc += fmt.Sprintf(", %s to %s", algebra.FormatTime(start, algebra.TimeAuto), algebra.FormatTime(end, algebra.TimeAuto))
	}
	return desc
}

func (s *parquetSubject) Catalog() *algebra.Catalog { return s.st.Catalog() }
func (s *parquetSubject) Spec() (db.Spec, error)    { return s.st.Spec(), nil }
func (s *parquetSubject) Window() *algebra.Window   { return s.st.Window() }
func (s *parquetSubject) database() *db.DB          { return nil }
func (s *parquetSubject) Close() error              { return nil }
func (s *parquetSubject) Sensors() string {
	return "no sensors: the source is a Parquet recording (what was recorded is all there is)\n"
}

func (s *parquetSubject) Extent() (algebra.Time, algebra.Time, bool) { return s.st.Extent() }

func (s *parquetSubject) Now() algebra.Time {
	if _, end, ok := s.st.Extent(); ok {
		return end
	}
	return 0
}

func (s *parquetSubject) history() (*algebra.History, error) {
	if s.h == nil {
		h, err := s.st.History()
		if err != nil {
			return nil, err
		}
		s.h = h
	}
	return s.h, nil
}

// Run plans the program for stored relations, as over a database, and
// reads each relation through its window (runStored).
func (s *parquetSubject) Run(ctx context.Context, prog *query.Program, o RunOptions) ([]query.Result, Stats, error) {
	return runStored(ctx, replay.Parquet(s.st), prog, o, s.history, Stats{Files: s.st.Files()})
}

func (s *parquetSubject) Explain(w io.Writer, prog *query.Program, first int, _ bool) error {
	return explainStored(w, s.st.Catalog(), prog, first)
}

func (s *parquetSubject) recorded() (playable, error) {
	h, err := s.history()
	if err != nil {
		return playable{}, err
	}
	start, end, ok := h.Extent()
	return playable{src: play.HistorySource(h, recordedNames(h.Catalog)), done: func() {},
		window: extentWindow(h.Window, start, end, ok), obs: h}, nil
}
