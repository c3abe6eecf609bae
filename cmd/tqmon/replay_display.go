package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/display/show"
	"github.com/tqmon/tqmon/store/db"
)

// runReplayDisplay plays a database into the animated display: every
// stored relation, in time order, paced by the display's player (space,
// +/-, → and the timeline work as in tqmon view), with the queries'
// results drawn as the spec says.
func runReplayDisplay(f *replayFlags, params map[string]string, from, to *algebra.Time) error {
	d, err := db.Open(f.dbDir, db.Options{ReadOnly: true})
	if err != nil {
		return usageErr(err)
	}
	defer d.Close()
	dsrc, err := readDisplay(f.display)
	if err != nil {
		return usageErr(err)
	}
	start, end, ok := d.Extent()
	window := d.Window()
	if ok && window == nil {
		window = &algebra.Window{From: start, To: end}
	}
	setup, err := show.Compile(show.Config{Catalog: d.Catalog(), Queries: f.srcs, Display: dsrc,
		Check: check.Options{Params: params, Now: end}, FeedAll: true})
	if err != nil {
		return usageErr(err)
	}
	var reads []db.Read
	for _, r := range d.Catalog().Relations {
		reads = append(reads, db.Read{Rel: r.Name})
	}
	src, err := d.NewSource(reads)
	if err != nil {
		return runtimeErr(err)
	}
	defer src.Close()
	po := play.Options{Speed: f.speed, Paused: f.paused, Start: from, End: end}
	if f.max {
		po.Speed = play.MaxSpeed
	}
	if to != nil {
		po.End = *to
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	err = show.History(ctx, setup, src, window, po,
		show.Options{Title: "tqmon replay " + f.dbDir, ReadSpec: specReader(f.display)})
	if err != nil {
		return runtimeErr(err)
	}
	return nil
}
