package kernel_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/kernel/launch"
	"github.com/tqmon/tqmon/resident/wire"
)

// run is one live run of queries against a kernel resident, with a
// command started paused and released once the sensors are ready.
type run struct {
	results []query.Result
	stats   remote.LiveStats
	flags   map[string][]string // the enable maps when the command was released
	placed  map[string][]string // the selections in the kernel then (Resident.Placed)
	kstats  map[string]kernel.SensorStats
	pid     int
	state   *os.ProcessState
	stdout  string // the command's output
}

// runCommand starts argv paused, runs the queries with $target its pid,
// releases it when the sensors are ready, and ends the run once it has
// exited and the rings are drained.
func runCommand(t *testing.T, opts kernel.Options, argv []string, queries ...string) *run {
	t.Helper()
	return runCommandWith(t, opts, remote.LiveOptions{}, argv, queries...)
}

// runCommandWith is runCommand with live options (its Ready is the
// command's release).
func runCommandWith(t *testing.T, opts kernel.Options, lo remote.LiveOptions, argv []string, queries ...string) *run {
	t.Helper()
	res, err := kernel.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	outFile, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	cmd, err := launch.Start(argv, launch.Options{Stdout: outFile})
	if err != nil {
		t.Fatal(err)
	}
	defer cmd.Kill()
	out := &run{pid: cmd.Pid}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var srcs []query.Source
	for i, q := range queries {
		srcs = append(srcs, query.Source{Name: "q" + string(rune('1'+i)), Text: q})
	}
	prog, err := query.Compile(res.Catalog(), srcs, check.Options{Params: map[string]string{"target": itoa(cmd.Pid)}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var runErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		lo.Ready = func() {
			out.flags = res.Flags()
			out.placed = res.Placed()
			if err := cmd.Release(); err != nil {
				t.Error(err)
			}
		}
		out.results, out.stats, runErr = remote.RunLive(context.Background(), prog, []wire.Conn{res.Local()}, lo)
	}()
	select {
	case <-cmd.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("the command did not finish")
	}
	out.state, _ = cmd.Wait()
	text, _ := os.ReadFile(outFile.Name())
	out.stdout = string(text)
	time.Sleep(20 * time.Millisecond) // its last context switch
	// As the command does (subject): what the drain has noted is applied
	// (read by the monitor) before the resident closes.
	if err := res.WaitApplied(ctx); err != nil {
		t.Errorf("the drain did not apply the command's records in time: %v", err)
	}
	out.kstats = res.Stats()
	res.Close()
	wg.Wait()
	if runErr != nil {
		t.Fatal(runErr)
	}
	return out
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// column returns column c of a result's rows, as strings.
func column(tab *algebra.Table, c int) []string {
	var out []string
	for _, tu := range tab.Rows {
		v := tu.Vals[c]
		if v.K == algebra.KindString || v.K == algebra.KindEntity {
			out = append(out, v.S)
		} else {
			out = append(out, v.String())
		}
	}
	return out
}

func join(s []string) string { return strings.Join(s, ",") }
