//go:build integration

package fleettest_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// TestEvictAndReadmit: a node evicted from the fleet refuses its own
// writes and reads `evicted`; a record it appends anyway is dropped by
// every node's applier under the eviction gate; readmitted, it writes
// again.
func TestEvictAndReadmit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, item := clusterWithItem(t, ctx, "kept")
	svc := c.Node(0).Tracker()
	evicted := c.Node(2)
	if _, err := evicted.NodeGates().EvictNode(ctx, engine.WriteOptions{}, evicted.Name()); engine.CodeOf(err) != engine.CodeInvalidArgument {
		t.Fatalf("a node evicting itself: %v", err)
	}
	ev, err := c.Node(0).NodeGates().EvictNode(ctx, engine.WriteOptions{}, evicted.Name())
	if err != nil || ev.Outcome != engine.Applied || len(ev.Steps) != 2 {
		t.Fatalf("evict: %+v %v", ev, err)
	}
	pos, _ := engine.ParsePosition(ev.Steps[0].Position)
	if err := evicted.Replica(engine.DomainTracker).WaitApplied(ctx, pos.Seq); err != nil {
		t.Fatal(err)
	}
	if !evicted.Replica(engine.DomainTracker).Evicted() {
		t.Fatal("the evicted node does not know it")
	}
	title := "from the evicted node"
	_, err = evicted.Tracker().UpdateWorkItem(ctx, engine.WriteOptions{}, item.Key, 0, tracker.ItemPatch{Title: &title})
	if ref, ok := engine.AsRefusal(err); !ok || ref.Code != engine.CodeEvicted || ref.Position != nil {
		t.Fatalf("evicted node's write: %v", err)
	}
	if _, err := evicted.Tracker().GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, item.Key); engine.CodeOf(err) != engine.CodeEvicted {
		t.Fatalf("evicted node's read: %v", err)
	}
	// The evicted node appends anyway, straight onto the log.
	payload, _ := json.Marshal(map[string]any{"id": item.ID, "title": title})
	rec := &record.Record{Kind: trackrec.KindUpdateWorkItem, Version: 1, Writer: evicted.Name(), Generation: 1,
		Subject: "crewlet.tracker.item." + item.ID, Scope: []string{"item:" + item.ID}, Payload: payload}
	data, _ := record.Encode(rec)
	ack, err := evicted.Log(engine.DomainTracker).Publish(ctx, rec.Subject, data, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < c.Size(); i++ {
		r := c.Node(i).Replica(engine.DomainTracker)
		if err := r.WaitApplied(ctx, ack.Seq); err != nil {
			t.Fatal(err)
		}
		gate, writer, ok, err := r.GatedAt(ctx, ack.Seq)
		if err != nil || !ok || gate != "evicted" || writer != evicted.Name() {
			t.Fatalf("node %d: gated=%v gate=%q writer=%q err=%v", i, ok, gate, writer, err)
		}
	}
	got, err := svc.GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, item.Key)
	if err != nil || got.Item.Title != "kept" {
		t.Fatalf("after the evicted node's append: %+v %v", got.Item, err)
	}
	re, err := c.Node(1).NodeGates().ReadmitNode(ctx, engine.WriteOptions{}, evicted.Name())
	if err != nil || re.Outcome != engine.Applied {
		t.Fatalf("readmit: %+v %v", re, err)
	}
	pos, _ = engine.ParsePosition(re.Steps[0].Position)
	if err := evicted.Replica(engine.DomainTracker).WaitApplied(ctx, pos.Seq); err != nil {
		t.Fatal(err)
	}
	title = "readmitted"
	up, err := evicted.Tracker().UpdateWorkItem(ctx, engine.WriteOptions{}, item.Key, 0, tracker.ItemPatch{Title: &title})
	if err != nil || up.Outcome != engine.Applied || up.Item.Title != "readmitted" {
		t.Fatalf("readmitted node's write: %+v %v", up, err)
	}
}
