package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestReaderDeletedUnderTheNode: a running node whose reader is deleted
// on the broker (as an operator's `nats consumer rm` would) makes it
// again after what it acknowledged, says so, and goes on applying: a
// write after the deletion lands, and every record is applied once.
func TestReaderDeletedUnderTheNode(t *testing.T) {
	rec := enginetest.NewRecorder()
	n := enginetest.OpenNode(t, node.Config{Logger: rec.Logger()})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pw, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "RD", "Readers")
	enginetest.Landed(t, n, engine.DomainTracker, pw.WriteResult, err)
	first, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "RD", Title: "before"})
	enginetest.Landed(t, n, engine.DomainTracker, first.WriteResult, err)

	s, err := n.Broker().JS.Stream(ctx, n.Log(engine.DomainTracker).Stream())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteConsumer(ctx, broker.ConsumerName("n1")); err != nil {
		t.Fatal(err)
	}
	// Pending until the reader is made again: Landed waits for it.
	after, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "RD", Title: "after"})
	enginetest.Landed(t, n, engine.DomainTracker, after.WriteResult, err)
	if len(rec.Lines(engine.EvReaderReopened)) == 0 {
		t.Errorf("no %s line after the reader was deleted", engine.EvReaderReopened)
	}
	got, err := n.Tracker().GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, after.Item.Key)
	if err != nil || got.Item.Title != "after" {
		t.Fatalf("read %s at linearizable: %+v %v", after.Item.Key, got, err)
	}
	// Each record once: two items, numbered 1 and 2.
	var items int
	if err := n.DB().QueryRowContext(ctx, `SELECT count(*) FROM tracker_items`).Scan(&items); err != nil {
		t.Fatal(err)
	}
	if items != 2 || first.Item.Key != "RD-1" || after.Item.Key != "RD-2" {
		t.Errorf("%d items (%s, %s), want RD-1 and RD-2 only", items, first.Item.Key, after.Item.Key)
	}
}
