package kernel_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
	"github.com/tqmon/tqmon/resident/kernel/launch"
	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/wire"
)

// Concurrent sessions enabling one sensor for different entities: two
// workloads making 3,000 and 1,000 getppid calls, a session selecting
// each one's getppid calls, and a third taking every call of the first.
// Each session's counts are its own: the first two are sent and want
// exactly their own workload's calls (3,000 and 1,000), and for each of
// the three delivered + dropped = wanted. Before, a session's wanted
// counted the packets sent only to the sessions enabling the other
// workload (the kernel's count for the sensor): 4,000 for both.
func TestKernelSessionsOwnEntities(t *testing.T) {
	kerneltest.Need(t)
	bin := kerneltest.BuildC(t, "testdata/workload.c", true)
	dir := t.TempDir()
	ns := []int{3000, 1000}
	argvs := [][]string{
		{bin, strconv.Itoa(ns[0]), "20", filepath.Join(dir, "cpu1")},
		{bin, strconv.Itoa(ns[1]), "20", filepath.Join(dir, "cpu2")},
	}
	results, stats := concurrentlyOn(t, argvs, func(i int) int { return []int{0, 1, 0}[i] }, nil, nil,
		`range of s is Syscall retrieve (s.Name) where s.Process = $target and s.Name = "getppid"`,
		`range of s is Syscall retrieve (s.Name) where s.Process = $target and s.Name = "getppid"`,
		`range of s is Syscall retrieve (s.Name) where s.Process = $target`,
	)
	for i, st := range stats {
		p, w, d := st.Packets["Syscall"], st.Wanted["Syscall"], st.Dropped["Syscall"]
		t.Logf("session %d: %d results; %d Syscall packets delivered, %d dropped, %d wanted", i+1, len(results[i][0].Table.Rows), p, d, w)
		if uint64(p)+d != w {
			t.Errorf("session %d: %d Syscall packets delivered + %d dropped, %d wanted; want delivered + dropped = wanted", i+1, p, d, w)
		}
		if i < 2 && (len(results[i][0].Table.Rows) != ns[i] || p != ns[i] || w != uint64(ns[i])) {
			t.Errorf("session %d: %d results, %d packets delivered, %d wanted; want its workload's %d getppid calls for each", i+1, len(results[i][0].Table.Rows), p, w, ns[i])
		}
	}
	if p := stats[2].Packets["Syscall"]; p <= ns[0] || len(results[2][0].Table.Rows) != p {
		t.Errorf("session 3: %d packets, %d results; want more than the first workload's %d getppid calls, one result each", p, len(results[2][0].Table.Rows), ns[0])
	}
}

// An interval in progress whose begin went to a session that has since
// closed does not end in a newer session that took the closed one's
// index: session A enables OffCPU (reported as a begin at the switch out
// and an end at the switch in) for a process that sleeps, closes, and B
// opens at A's index while the process still sleeps (a keeper holds the
// sensor, enabled for another sleeping process, so the interval stays
// noted). B is sent no OffCPU packet — it enabled nothing of that
// process's and saw no begin — and wants none. Before, the interval's
// noted recipients (A's index) sent B its end.
func TestKernelSlotReuseInterval(t *testing.T) {
	kerneltest.Need(t)
	res, err := kernel.New(kernel.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Skip("no sleep:", err)
	}
	defer other.Wait()
	defer other.Process.Kill()
	keeper := res.Open()
	defer keeper.Close()
	h := res.Hello()
	sc := sensorID(t, h, "OffCPU")
	enable := func(s *kernel.Session, pid int) {
		t.Helper()
		if err := s.Apply(&wire.Command{Kind: wire.CEnable, Sensor: sc, Entity: strconv.Itoa(pid)}); err != nil {
			t.Fatal(err)
		}
	}
	enable(keeper, other.Process.Pid)
	cmd, err := launch.Start([]string{"sleep", "1.5"}, launch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cmd.Kill()
	a := res.Open()
	enable(a, cmd.Pid)
	cmd.Release()
	// Asleep (its interval off the processors in progress), and drained.
	stat := fmt.Sprintf("/proc/%d/stat", cmd.Pid)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		text, err := os.ReadFile(stat)
		if i := strings.LastIndexByte(string(text), ')'); err == nil && i > 0 && strings.HasPrefix(string(text[i:]), ") S") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep is not asleep: %q %v", text, err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	slot := a.Index()
	a.Close()
	// Indices are handed out round-robin: open and close sessions until
	// the next one takes A's.
	var b *kernel.Session
	for range session.MaxSessions {
		s := res.Open()
		if s.Index() == slot {
			b = s
			break
		}
		s.Close()
	}
	if b == nil {
		t.Fatalf("no session took index %d again", slot)
	}
	defer b.Close()
	enable(b, other.Process.Pid)
	select {
	case <-cmd.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("sleep did not finish")
	}
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	until := ts.Nano() + int64(50*time.Millisecond)
	var got []wire.Packet
	var counts []wire.Count
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		batch, err := b.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range batch.Packets {
			if p.Sensor == sc {
				got = append(got, p)
			}
		}
		counts = batch.Counts
		if batch.Watermark > until {
			break
		}
	}
	if len(got) != 0 {
		t.Errorf("B was sent %d OffCPU packets (the first a %v): the ends of intervals whose begins went to A", len(got), got[0].Kind)
	}
	for _, c := range counts {
		if c.Sensor == sc && c.Wanted != c.Drops {
			t.Errorf("B's OffCPU counts: %d wanted, %d dropped; want none wanted but drops", c.Wanted, c.Drops)
		}
	}
}
