package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
	"github.com/crewlet/crewlet/ledger"
)

// TestDrainedNumbersInLogOrder: creates drained in large batches hold
// back their projects' counters, history, keys, search postings and
// writers for the transaction's end (tracker/held.go), while an update
// and a move in the same batch read what they held: the update rewrites
// a held posting, the move takes its number from the project's row.
// Numbers follow the log's order across all of them, in two projects at
// once; each project's counter and version end where the last record
// that moved it left them; every held row is there once.
func TestDrainedNumbersInLogOrder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	mustProject(t, svc, "OPS")
	mover, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "OPS", Title: "mover"})
	if err != nil || mover.Outcome != engine.Applied {
		t.Fatal(mover, err)
	}
	n.Close()

	log := openDownLog(t, dir)
	keys := map[string]string{} // item id → the key log order gives it
	next := map[string]int{"ENG": 0, "OPS": 1}
	var last, lastENG uint64
	create := func(project string, i int) {
		id := fmt.Sprintf("wi_%s_%d", project, i)
		op := must(ledger.MintFor(time.Now(), "create_work_item", project, "")).String()
		last = log.put(op, trackrec.KindCreateWorkItem, id, map[string]any{"id": id, "project": project, "title": "drained " + id, "status": "open"})
		next[project]++
		keys[id] = fmt.Sprintf("%s-%d", project, next[project])
		if project == "ENG" {
			lastENG = last
		}
	}
	for i := 0; i < 40; i++ {
		create("ENG", i)
		if i%4 == 0 {
			create("OPS", i)
		}
	}
	// An update of an item the batch created: its posting was held.
	op := must(ledger.MintFor(time.Now(), "update_work_item", "wi_ENG_5", "")).String()
	log.put(op, trackrec.KindUpdateWorkItem, "wi_ENG_5", map[string]any{"id": "wi_ENG_5", "title": "renamed"})
	op = must(ledger.MintFor(time.Now(), "move_work_item", mover.Item.ID, "")).String()
	last = log.put(op, trackrec.KindMove, mover.Item.ID, map[string]any{"id": mover.Item.ID, "to": "ENG"})
	next["ENG"]++
	keys[mover.Item.ID] = fmt.Sprintf("ENG-%d", next["ENG"])
	for i := 40; i < 80; i++ {
		create("ENG", i)
	}
	log.close()

	n = enginetest.OpenNode(t, node.Config{DataDir: dir})
	waitAppliedOrFailed(t, n.Replica(engine.DomainTracker), last)
	for id, key := range keys {
		var got string
		if err := n.DB().QueryRow(`SELECT key FROM tracker_items WHERE id = ?`, id).Scan(&got); err != nil || got != key {
			t.Fatalf("%s: key %q (%v), want %s", id, got, err, key)
		}
	}
	drained := len(keys) - 1
	for q, want := range map[string]int{
		`SELECT count(*) FROM tracker_item_keys`:                                        len(keys) + 1, // the mover holds two
		`SELECT count(*) FROM tracker_items i JOIN tracker_search s ON s.rowid = i.doc`: len(keys),
		`SELECT count(*) FROM tracker_search WHERE tracker_search MATCH 'drained'`:      drained - 1,
		`SELECT count(*) FROM tracker_search WHERE tracker_search MATCH 'renamed'`:      1,
		`SELECT count(DISTINCT item) FROM tracker_history WHERE field = 'created'`:      len(keys),
		`SELECT count(*) FROM tracker_record_by WHERE by = 'seat:drain'`:                drained + 2,
	} {
		if got := count(t, n, q); got != want {
			t.Fatalf("%s: %d, want %d", q, got, want)
		}
	}
	for project, number := range next {
		var lastNumber int
		var version uint64
		if err := n.DB().QueryRow(`SELECT last_number, max(version, scoped_through) FROM tracker_projects WHERE key = ?`, project).Scan(&lastNumber, &version); err != nil {
			t.Fatal(err)
		}
		if lastNumber != number {
			t.Fatalf("%s: last_number %d, want %d", project, lastNumber, number)
		}
		if project == "ENG" && version != lastENG {
			t.Fatalf("ENG's version %d, want %d: the last create into it", version, lastENG)
		}
	}
}
