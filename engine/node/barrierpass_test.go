package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestBarriersPassedWithoutATransaction: the applier passes a batch of
// nothing but barriers without a transaction of its own, so its
// checkpoint commits later. What must hold meanwhile: every linearizable
// read is answered from a position past the log's end as it stood when
// the read began (seen_through included); the reader's acknowledgement
// never passes the committed checkpoint; a write commits the held
// barriers' checkpoint with its own rows; the held checkpoint commits on
// its own when nothing else comes; and a clean stop leaves the reader
// level with the checkpoint, so the next boot finds no drift to rebuild.
func TestBarriersPassedWithoutATransaction(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir, BarrierReads: true})
	svc := n.Tracker()
	if _, err := svc.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "one"}); err != nil {
		t.Fatal(err)
	}
	rep := n.Replica(engine.DomainTracker)
	readPast := func() { t.Helper(); readPastEnd(t, n) }
	// One reader at a time, then many at once (batches of barriers).
	for i := 0; i < 20; i++ {
		readPast()
	}
	readConcurrently(t, svc, 16, 10)
	checkAckFloor(t, n)

	// A write carries the held barriers' checkpoint in its transaction.
	readPast()
	w, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-1", 0, tracker.ItemPatch{Title: ptr("two")})
	if err != nil || w.Outcome != engine.Applied {
		t.Fatal(w, err)
	}
	pos, err := engine.ParsePosition(w.Position)
	if err != nil {
		t.Fatal(err)
	}
	if cp, err := rep.Checkpoint(ctx); err != nil || cp.Seq < pos.Seq {
		t.Fatalf("checkpoint %+v (%v) after the write applied at %d", cp, err, pos.Seq)
	}
	checkAckFloor(t, n)

	// With nothing after them, held barriers commit on their own, within
	// the write wait a commit's waiters are given.
	readPast()
	end := passedLogEnd(t, n)
	enginetest.CheckFor(t, node.DefaultWriteWait, 10*time.Millisecond, func() error {
		cp, err := rep.Checkpoint(ctx)
		if err == nil && cp.Seq < end {
			err = fmt.Errorf("checkpoint %d, the applier passed %d", cp.Seq, end)
		}
		return err
	})

	// A clean stop commits what is held: the next boot finds the reader
	// level with the checkpoint.
	readPast()
	end = passedLogEnd(t, n)
	n.Close()
	rec := enginetest.NewRecorder()
	n = enginetest.OpenNode(t, node.Config{DataDir: dir, Logger: rec.Logger()})
	if cp, err := n.Replica(engine.DomainTracker).Checkpoint(ctx); err != nil || cp.Seq != end {
		t.Fatalf("after a clean stop the checkpoint is %+v (%v), the applier had passed %d", cp, err, end)
	}
	if l := rec.Lines(engine.EvConsumerRebuilt); len(l) > 0 {
		t.Fatalf("a clean stop with barriers held left the reader drifted: %v", l)
	}
	if _, err := n.Tracker().GetWorkItem(ctx, lin(), "ENG-1"); err != nil {
		t.Fatal(err)
	}
}

// checkAckFloor fails when the tracker's durable reader has acknowledged
// past the committed checkpoint: a boot would find the drift.
func checkAckFloor(t *testing.T, n *node.Node) {
	t.Helper()
	ctx := context.Background()
	// The ack floor first: the checkpoint only grows, so one read after
	// it that is behind it was behind it when the ack was made.
	cons, err := n.Broker().JS.Consumer(ctx, n.Log(engine.DomainTracker).Stream(), broker.ConsumerName("n1"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := n.Replica(engine.DomainTracker).Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.AckFloor.Stream > cp.Seq {
		t.Fatalf("the reader acknowledged through %d, past the committed checkpoint %d", info.AckFloor.Stream, cp.Seq)
	}
}

// readPastEnd reads ENG-1 at linearizable and fails unless the answer is
// from past the log's end as it stood when the read began.
func readPastEnd(t *testing.T, n *node.Node) {
	t.Helper()
	ctx := context.Background()
	info, err := n.Log(engine.DomainTracker).Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := n.Tracker().GetWorkItem(ctx, lin(), "ENG-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.SeenThrough.Seq <= info.LastSeq {
		t.Fatalf("a linearizable read begun at log end %d answered seen_through %d", info.LastSeq, got.SeenThrough.Seq)
	}
	checkAckFloor(t, n)
}

// passedLogEnd waits for the applier to pass the log's end, the barrier
// of the read before (a read is answered once the record before its
// barrier is applied, so it may return before the barrier is passed),
// and returns it.
func passedLogEnd(t *testing.T, n *node.Node) uint64 {
	t.Helper()
	ctx := context.Background()
	info, err := n.Log(engine.DomainTracker).Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, node.DefaultWriteWait)
	defer cancel()
	if err := n.Replica(engine.DomainTracker).WaitApplied(wctx, info.LastSeq); err != nil {
		t.Fatalf("the applier did not pass the log's end %d: %v", info.LastSeq, err)
	}
	return info.LastSeq
}

// readConcurrently reads ENG-1 at linearizable on conc goroutines, per
// times each: batches of barriers for the applier.
func readConcurrently(t *testing.T, svc *tracker.Service, conc, per int) {
	parallel(conc, per, func(_, _ int) {
		if _, err := svc.GetWorkItem(context.Background(), lin(), "ENG-1"); err != nil {
			t.Error(err)
		}
	})
}
