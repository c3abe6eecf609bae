package shell

import (
	"context"
	"errors"
	"fmt"
	"github.com/tqmon/tqmon/algebra"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/tqmon/tqmon/display/defaults"
	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/subject"
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
	if _, err := sh.readDisplay(path); err != nil {
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
	dsrc := query.Source{Name: defaults.PaperSpecName, Text: defaults.PaperSpec()}
	if sh.display != "" {
		src, err := sh.readDisplay(sh.display)
		if err != nil {
			sh.errorf("%v\n", err)
			return
		}
		dsrc = src
	} else {
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
	sh.out.Flush()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	o := subject.DisplayOptions{Queries: sh.log, Spec: dsrc, Params: sh.params, Title: "tqmon shell — " + sh.src.Describe()}
	if sh.opts.Time&algebra.TimeLocal != 0 {
		o.TZ = "local" // --tz local
	}
	if sh.display != "" {
		o.ReadSpec = func() (string, error) {
			src, err := sh.readDisplay(sh.display)
			return src.Text, err
		}
	}
	o.Play.Speed = speed
	if start, end, ok := sh.src.Extent(); ok {
		o.Play.End = end
		if speed == 0 {
			o.Play.Speed = max(1, float64(end-start)/float64(time.Minute))
		}
	}
	err := subject.Display(ctx, sh.src, o)
	if err != nil {
		sh.errorf("%s", sh.render(err))
		if errors.Is(err, subject.ErrInput) && sh.display == "" {
			sh.errorf("(the default display is the paper's; choose one for this system with \\display SPEC)\n")
		}
	}
}

// readDisplay reads a display spec file, keeping its text for
// diagnostics.
func (sh *shell) readDisplay(path string) (query.Source, error) {
	text, err := source.ReadFile(path, nil)
	if err != nil {
		return query.Source{}, fmt.Errorf("display spec: %w", err)
	}
	return query.Source{Name: path, Text: text}, nil
}
