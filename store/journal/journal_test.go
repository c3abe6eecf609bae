package journal

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/fleet/embedded"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/parquet"
	"github.com/tqmon/tqmon/store/record"
	"github.com/tqmon/tqmon/store/truth"
)

var all = []string{"Processor", "Process", "Mailbox", "SendMessage", "RunningOn", "Waiting"}

func jetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	srv, err := embedded.Start(embedded.Options{Addr: "127.0.0.1:0", Data: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(context.Background(), js, Options{}); err != nil {
		t.Fatal(err)
	}
	return js
}

// TestResumeAfterKill: the demo subject is recorded live into its
// journal on JetStream while a consumer writes the journal as Parquet
// files; the consumer is killed (its context cancelled: no Close, no
// final write) several times mid-run and restarted on the same
// directory. The recording it ends with equals the subject's ground
// truth: nothing lost, nothing twice.
func TestResumeAfterKill(t *testing.T) {
	js := jetStream(t)
	spec := db.Spec{Name: "os.sdl", Text: ossensors.SDL}
	store, err := db.CreateInMemory(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cat := store.Catalog()
	clock := demo.NewClock(1000)
	rec := truth.New(cat, 0, 0)
	res := resident.New(ossensors.Spec(), demo.Options(clock, rec))
	h := res.Hello()
	rec.SetClock(h.MonoBase, h.WallBase)
	pub, err := NewPublisher(js, "web-1", spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "pq")
	// A small Every: files are written often, so kills fall between
	// writes with tuples open and held.
	popts := parquet.Options{Host: "web-1", Every: 20 * time.Second}

	ready := make(chan struct{})
	recorded := make(chan error, 1)
	go func() {
		_, err := record.Live(context.Background(), []wire.Conn{res.Local()}, pub, cat,
			record.Options{SyncEvery: 10 * time.Millisecond, Ready: func() { close(ready) }})
		recorded <- err
	}()
	<-ready
	consumed := make(chan error, 1)
	consume := func(ctx context.Context) { consumed <- Consume(ctx, js, "web-1", dir, popts) }
	ctx, kill := context.WithCancel(context.Background())
	go consume(ctx)

	runCtx, stopRun := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer stopRun()
	done := make(chan struct{})
	go func() {
		demo.New(ossensors.New(res), demo.DefaultConfig(7)).Run(runCtx)
		close(done)
	}()
	kills := 0
	for i := 0; i < 3; i++ {
		time.Sleep(300 * time.Millisecond)
		kill()
		if err := <-consumed; !errors.Is(err, context.Canceled) {
			t.Fatalf("consumer %d: %v", i, err)
		}
		kills++
		ctx, kill = context.WithCancel(context.Background())
		go consume(ctx)
	}
	defer kill()
	<-done
	stop := clock.Stop()
	res.Close()
	if err := <-recorded; err != nil && !errors.Is(err, remote.ErrIncomplete) {
		t.Fatal(err)
	}
	pub.SetWindow(algebra.Window{From: h.WallBase, To: h.WallBase + (stop - h.MonoBase)})
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-consumed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the consumer did not reach the journal's end")
	}
	// A consumer run again on the finished recording reads the journal
	// from its resume position to its end again: nothing changes.
	again, cancelAgain := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelAgain()
	if err := Consume(again, js, "web-1", dir, popts); err != nil {
		t.Fatalf("consuming again: %v", err)
	}
	s, err := parquet.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.History()
	if err != nil {
		t.Fatal(err)
	}
	want := rec.History(stop)
	if g, w := testkit.History(got, all...), testkit.History(want, all...); g != w {
		t.Fatalf("after %d kills: recorded\n%s\nground truth\n%s", kills, g, w)
	}
	for _, name := range all {
		if len(got.Table(name).Rows) == 0 {
			t.Errorf("%s: nothing recorded", name)
		}
	}
}

// TestGoneIsAnError: a writer whose resume position the stream no longer
// holds (retention dropped it) stops with ErrGone naming the positions,
// rather than resuming with a hole.
func TestGoneIsAnError(t *testing.T) {
	js := jetStream(t)
	ctx := context.Background()
	spec := db.Spec{Name: "os.sdl", Text: ossensors.SDL}
	pub, err := NewPublisher(js, "web-9", spec)
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := spec.Catalog()
	state := cat.Lookup("Process").Attrs[1].Type.Enum
	procs, _ := pub.Relation("Process")
	for i := range 50 {
		at := int64(i+1) * int64(time.Minute)
		if err := procs.Begin(uint64(i), at, []algebra.Value{algebra.Entity(fmt.Sprint("P", i)), algebra.Enum(state.Members[0], 0)}); err != nil {
			t.Fatal(err)
		}
		pub.Advance(at)
	}
	if err := pub.Sync(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "pq")
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	err = Consume(cctx, js, "web-9", dir, parquet.Options{Every: time.Minute})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the first consumer: %v", err)
	}
	st, err := js.Stream(ctx, Stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx); err != nil { // as retention would
		t.Fatal(err)
	}
	pub.Advance(int64(time.Hour))
	if err := pub.Sync(); err != nil {
		t.Fatal(err)
	}
	cctx, cancel = context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = Consume(cctx, js, "web-9", dir, parquet.Options{Every: time.Minute})
	if !errors.Is(err, ErrGone) || !strings.Contains(err.Error(), "resumes from position") {
		t.Fatalf("resuming past retention: %v", err)
	}
}

// TestJournalReplicas: on a three-node cluster, Options.Replicas (record
// --journal --replicas 3) makes the journal's stream kept by three nodes.
func TestJournalReplicas(t *testing.T) {
	nodes, err := embedded.StartCluster(3, func(int) string { return t.TempDir() })
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range nodes {
			s.Shutdown()
		}
	}()
	nc, err := nats.Connect(nodes[0].URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var st jetstream.Stream
	// (The cluster's peers may not all be current yet: asked again.)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		if st, err = Ensure(ctx, js, Options{Replicas: 3}); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Replicas != 3 {
		t.Fatalf("%d replicas, want 3", info.Config.Replicas)
	}
}
