//go:build integration

package fleettest_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// TestAuditReplicated: the audit trail is derived from the log, so a
// purge made on one node and an eviction and readmission made on others
// are on every node's trail alike, naming the node that wrote each and
// who asked.
func TestAuditReplicated(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, item := clusterWithItem(t, ctx, "doomed")
	ops := engine.WithActor(ctx, "operator")
	p, err := c.Node(1).Tracker().PurgeWorkItem(ops, engine.WriteOptions{}, item.Key)
	if err != nil || (p.Outcome != engine.Applied && p.Outcome != engine.Pending) {
		t.Fatalf("purge: %+v %v", p, err)
	}
	target := c.Node(2).Name()
	if _, err := c.Node(0).NodeGates().EvictNode(ops, engine.WriteOptions{}, target); err != nil {
		t.Fatal(err)
	}
	re, err := c.Node(1).NodeGates().ReadmitNode(ops, engine.WriteOptions{}, target)
	if err != nil || (re.Outcome != engine.Applied && re.Outcome != engine.Pending) {
		t.Fatalf("readmit: %+v %v", re, err)
	}
	// Every node applies through the last step of each log (a loaded
	// machine may have answered pending: the wait is the same).
	for _, st := range re.Steps {
		pos, _ := engine.ParsePosition(st.Position)
		for i := 0; i < c.Size(); i++ {
			if err := c.Node(i).Replica(engine.Domain(st.Domain)).WaitApplied(ctx, pos.Seq); err != nil {
				t.Fatal(err)
			}
		}
	}
	first, err := c.Node(0).Audit().List(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Entries) != 5 {
		t.Fatalf("node 0's trail: %+v", first.Entries)
	}
	writers := map[string]string{}
	for _, e := range first.Entries {
		writers[e.Kind] = e.Writer
		if e.By != "operator" {
			t.Errorf("entry %+v does not say the operator asked", e)
		}
	}
	if writers["tracker.purge_work_item"] != c.Node(1).Name() || writers["statelog.evict"] != c.Node(0).Name() || writers["statelog.readmit"] != c.Node(1).Name() {
		t.Fatalf("the writers on the trail: %v", writers)
	}
	for i := 1; i < c.Size(); i++ {
		other, err := c.Node(i).Audit().List(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(other.Entries, first.Entries) {
			t.Fatalf("node %d's trail differs:\n%+v\nnode 0's:\n%+v", i, other.Entries, first.Entries)
		}
	}
}
