//go:build integration

package fleettest_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// TestPurgeGatesEveryNode: a task purged on one node of three is gated on
// every node, including a record a stale writer publishes after the
// purge: every node drops it (statelog_gated, gate=deleted) and none
// resurrects the task.
func TestPurgeGatesEveryNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, item := clusterWithItem(t, ctx, "doomed")
	victim := item.ID
	if p, err := c.Node(1).Tracker().PurgeWorkItem(ctx, engine.WriteOptions{}, item.Key); err != nil || p.Outcome != engine.Applied {
		t.Fatalf("purge on node 1: %+v %v", p, err)
	}
	payload, _ := json.Marshal(map[string]any{"id": victim, "title": "resurrected"})
	stale := &record.Record{Kind: trackrec.KindUpdateWorkItem, Version: 1, Writer: "n-stale", Generation: 1,
		Subject: "crewlet.tracker.item." + victim, Scope: []string{"item:" + victim}, Payload: payload}
	data, _ := record.Encode(stale)
	ack, err := c.Node(2).Log(engine.DomainTracker).Publish(ctx, stale.Subject, data, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < c.Size(); i++ {
		r := c.Node(i).Replica(engine.DomainTracker)
		if err := r.WaitApplied(ctx, ack.Seq); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		gate, writer, ok, err := r.GatedAt(ctx, ack.Seq)
		if err != nil || !ok || gate != "deleted" || writer != "n-stale" {
			t.Fatalf("node %d: record at %d gated=%v gate=%q writer=%q err=%v", i, ack.Seq, ok, gate, writer, err)
		}
		var n int
		c.Node(i).DB().QueryRow(`SELECT count(*) FROM tracker_items WHERE id = ?`, victim).Scan(&n)
		if n != 0 {
			t.Fatalf("node %d resurrected the purged task", i)
		}
	}
}
