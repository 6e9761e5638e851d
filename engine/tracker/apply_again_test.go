package tracker_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// A create whose item is filed already applies nothing: a copy of it
// that reaches the domain (its ledger row swept after the ledger's
// window, say) takes no second number, files no second item and writes
// no history. Applied straight to a real database, one record a
// transaction as the applier does.
func TestCreateOfAFiledItemIsMoot(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "apply.db"), 5)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(trackapply.Domain{}.Schema()); err != nil {
		t.Fatal(err)
	}
	seq := uint64(0)
	apply := func(kind string, payload any) {
		t.Helper()
		data, _ := json.Marshal(payload)
		seq++
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		rec := &record.Record{Kind: kind, Payload: data, Subject: "crewlet.tracker.item.wi_a"}
		if err := (trackapply.Domain{}).Apply(ctx, tx, rec, statelog.Applying{Seq: seq, Time: time.Unix(1_700_000_000+int64(seq), 0)}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	apply(trackrec.KindCreateProject, map[string]string{"key": "ENG", "name": "Engineering"})
	create := map[string]any{"id": "wi_a", "project": "ENG", "number": 1, "title": "first", "description": "", "status": "open", "assignee": ""}
	apply(trackrec.KindCreateWorkItem, create)
	apply(trackrec.KindCreateWorkItem, create)
	again := map[string]any{"id": "wi_a", "project": "ENG", "number": 2, "title": "other title", "description": "", "status": "open", "assignee": ""}
	apply(trackrec.KindCreateWorkItem, again)

	var items, last, history int
	var key, title string
	if err := db.QueryRow(`SELECT count(*), max(key), max(title) FROM tracker_items`).Scan(&items, &key, &title); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT last_number FROM tracker_projects WHERE key = 'ENG'`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM tracker_history WHERE item = 'wi_a'`).Scan(&history); err != nil {
		t.Fatal(err)
	}
	if items != 1 || key != "ENG-1" || title != "first" || last != 1 {
		t.Fatalf("after a create applied three times: %d items (%s %q), project counter at %d; want one item ENG-1 \"first\", counter 1", items, key, title, last)
	}
	var once int
	if err := db.QueryRow(`SELECT count(*) FROM tracker_history WHERE item = 'wi_a' AND seq = 2`).Scan(&once); err != nil {
		t.Fatal(err)
	}
	if history != once {
		t.Fatalf("the copies wrote history: %d rows for the item, %d of them the first create's", history, once)
	}
}
