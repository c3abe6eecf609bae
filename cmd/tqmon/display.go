package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/display/show"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/wire"
)

// readDisplay reads a display spec file, keeping its text for diagnostics.
func readDisplay(path string) (query.Source, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return query.Source{}, fmt.Errorf("display spec: %w", err)
	}
	texts[path] = string(data)
	return query.Source{Name: path, Text: string(data)}, nil
}

// specReader reads a display spec file again (the r key), keeping the new
// text for diagnostics.
func specReader(path string) func() (string, error) {
	return func() (string, error) {
		src, err := readDisplay(path)
		return src.Text, err
	}
}

// liveDisplay is a live run with the animated display: what query
// --connect --display (and --kernel --display) need.
type liveDisplay struct {
	cat      *algebra.Catalog
	conns    []wire.Conn
	srcs     []query.Source
	display  string // the spec file
	params   map[string]string
	naive    bool
	lease    time.Duration
	duration time.Duration
	title    string
	ready    func() // called once the sensors are enabled (a paused command starts)
}

// runLiveDisplay compiles the queries with the display spec (enabling only
// the sensors both need) and shows the live results animated until the
// user quits; spec and query errors are usage errors reported before the
// terminal is touched.
func runLiveDisplay(ctx context.Context, ld liveDisplay) error {
	closeAll := func() {
		for _, c := range ld.conns {
			c.Close()
		}
	}
	dsrc, err := readDisplay(ld.display)
	if err != nil {
		closeAll()
		return usageErr(err)
	}
	setup, err := show.Compile(show.Config{Catalog: ld.cat, Queries: ld.srcs, Display: dsrc, Check: check.Options{Params: ld.params}})
	if err != nil {
		closeAll()
		return usageErr(err)
	}
	if ld.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ld.duration)
		defer cancel()
	}
	err = show.Live(ctx, setup, ld.conns, remote.LiveOptions{Naive: ld.naive, Lease: ld.lease, Ready: ld.ready}, nil,
		show.Options{Title: ld.title, ReadSpec: specReader(ld.display)})
	if err != nil {
		return runtimeErr(err)
	}
	return nil
}
