package tracker_test

import (
	"context"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// A node back on its file still drops the records about a task it purged
// before it stopped: the deletion gate reads the purge markers its rows
// hold, not only the purges it sees apply. The first record after the
// restart is one about the purged task, published by a stale writer.
func TestPurgeGateHoldsAfterRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := newRig(t, time.Now(), node.Config{DataDir: dir})
	r.project("ENG")
	r.item("ENG", "to purge", "")
	victim := idOf(t, r, "ENG-1")
	if pr, err := r.svc.PurgeWorkItem(ctx, r.op("purge", "ENG-1"), "ENG-1"); err != nil || pr.Outcome != engine.Applied {
		t.Fatalf("purge: %+v %v", pr, err)
	}
	r.n.Close()

	r2 := newRig(t, time.Now(), node.Config{DataDir: dir})
	seq := publishStale(t, r2, trackrec.KindUpdateWorkItem, r2.op("update", "ENG-1").OpID, victim, []string{trackrec.ItemScope(victim)},
		map[string]any{"id": victim, "title": "resurrected"})
	heldByDeletedGate(t, r2, seq)
}
