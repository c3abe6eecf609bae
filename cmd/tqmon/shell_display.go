package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/display/defaults"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/display/show"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
)

// setDisplay chooses the display spec \view shows.
func (sh *shell) setDisplay(path string) {
	if path == "" {
		if sh.display == "" {
			fmt.Fprintln(sh.out, "No display spec: \\view shows the paper's default one.")
		} else {
			fmt.Fprintf(sh.out, "Display spec is %s.\n", sh.display)
		}
		return
	}
	if _, err := readDisplay(path); err != nil {
		sh.errorf("%v\n", err)
		return
	}
	sh.display = path
	fmt.Fprintf(sh.out, "Display spec is %s: \\view shows it.\n", path)
}

// view switches to the animated display of the session's statements (a
// recorded history plays at a speed that shows it whole in about a
// minute, or at \view SPEED; a live source shows the system now), and back
// to the shell when the user quits it with q.
func (sh *shell) view(arg string) {
	dsrc := query.Source{Name: defaults.PaperSpecName, Text: defaults.PaperSpec}
	if sh.display != "" {
		src, err := readDisplay(sh.display)
		if err != nil {
			sh.errorf("%v\n", err)
			return
		}
		dsrc = src
	} else {
		texts[dsrc.Name] = dsrc.Text
	}
	speed := 0.0
	if arg != "" {
		s, err := strconv.ParseFloat(arg, 64)
		if err != nil || !(s > 0) {
			sh.errorf("\\view [SPEED]: SPEED is subject seconds per real second, not %q\n", arg)
			return
		}
		speed = s
	}
	setup, err := show.Compile(show.Config{Catalog: sh.src.Catalog(), Queries: sh.log, Display: dsrc,
		Check: check.Options{Params: sh.params, Now: sh.src.Now()}, FeedAll: !sh.src.Live()})
	if err != nil {
		sh.errorf("%s", renderError(err))
		if sh.display == "" {
			sh.errorf("(the default display is the paper's; choose one for this system with \\display SPEC)\n")
		}
		return
	}
	sh.out.Flush()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	opts := show.Options{Title: "tqmon shell — " + sh.src.Describe()}
	if sh.display != "" {
		opts.ReadSpec = specReader(sh.display)
	}
	switch src := sh.src.(type) {
	case *historySource:
		po := play.Options{Speed: speed}
		window := src.h.Window
		if start, end, ok := src.h.Extent(); ok {
			po.End = end
			if window == nil {
				window = &algebra.Window{From: start, To: end}
			}
			if speed == 0 {
				po.Speed = max(1, float64(end-start)/float64(time.Minute))
			}
		}
		err = show.History(ctx, setup, play.HistorySource(src.h, nil), window, po, opts)
	case *liveSource:
		conns, derr := src.dial(ctx)
		if derr != nil {
			sh.errorf("%v\n", derr)
			return
		}
		err = show.Live(ctx, setup, conns, remote.LiveOptions{}, nil, opts)
	default:
		sh.errorf("\\view is not available for this source\n")
		return
	}
	if err != nil {
		sh.errorf("%s", renderError(err))
	}
}
