package history

import (
	"cmp"
	"fmt"

	"github.com/tqmon/tqmon/algebra"
)

// chunkRows is how many tuples Chunk hands over at most: a few of the
// reader's batches, so that what a chunk costs its consumer (columns
// built, closures compiled) is paid per thousands of tuples.
const chunkRows = 4096

func byFrom(a, b algebra.Tuple) int { return cmp.Compare(a.From, b.From) }

// Chunk appends to buf the next tuples of relation rel — values, start
// and end (Forever for one still open) — in order of their starts, and
// returns it: the relation read whole, a chunk at a time, instead of as
// Begin and End elements (exec.Network.RunChunks reads it so). It
// returns buf unchanged at the end of the relation. A relation is read
// either by Chunk or by Next, not both: Chunk fails for one Next has
// begun to read. The tuples are checked as Next checks them, and the
// errors are Next's: a file out of time order is an *UnsortedError, bad
// rows the file's diagnostics. It appends at most chunkRows tuples.
func (s *Source) Chunk(rel string, buf []algebra.Tuple) ([]algebra.Tuple, error) {
	if s.err != nil {
		return buf, s.err
	}
	var rs *relStream
	for _, r := range s.rels {
		if r.name == rel {
			rs = r
		}
	}
	if rs == nil {
		return buf, fmt.Errorf("history source: relation %s not opened", rel)
	}
	if rs.haveHead || rs.bi > 0 || rs.seq > 0 {
		return buf, fmt.Errorf("history source: relation %s is read by Next", rel)
	}
	if rs.loaded {
		n := min(chunkRows, len(rs.rows)-rs.ri)
		buf = append(buf, rs.rows[rs.ri:rs.ri+n]...)
		rs.ri += n
		return buf, nil
	}
	for n := 0; n < chunkRows && rs.reading != nil; {
		if rs.cur == nil || rs.ci == len(rs.cur.tuples) {
			if b := rs.cur; b != nil {
				if b.end {
					rs.err = b.err
					<-rs.reading.exited
					rs.reading, rs.cur = nil, nil
					if rs.err != nil {
						s.err = rs.err
						return buf, s.err
					}
					break
				}
				select {
				case rs.reading.free <- b:
				default: // (never full: at most readAhead+2 batches exist)
				}
			}
			rs.cur, rs.ci = <-rs.reading.batches, 0
			continue
		}
		for ; rs.ci < len(rs.cur.tuples) && n < chunkRows; rs.ci++ {
			tu := &rs.cur.tuples[rs.ci]
			if rs.started && tu.from < rs.lastFrom {
				line := rs.cur.lines[rs.ci]
				rs.reading.stop()
				rs.reading, rs.cur = nil, nil
				s.err = &UnsortedError{Rel: rs.name, File: rs.file, Line: line}
				return buf, s.err
			}
			rs.started, rs.lastFrom = true, tu.from
			buf = append(buf, algebra.Tuple{Vals: tu.vals, From: tu.from, To: tu.to})
			n++
		}
	}
	return buf, nil
}
