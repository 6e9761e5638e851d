//go:build integration

package trackapply_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"pgregory.net/rapid"

	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// TestComputedColumnsEqualARecomputation: after any sequence of status
// changes, hand-offs, moves, trash and restore, the computed columns the
// apply maintained (reopens, hand-offs, updated_at, each history row's
// hand-off count, each project's active count) equal a recomputation from
// the history: the rederive finds nothing to write. Records applied
// straight to a real database (each as a domain applied by hand, without
// an applier; a round's in one transaction).
func TestComputedColumnsEqualARecomputation(t *testing.T) {
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
	var tx *sql.Tx
	apply := func(rt *rapid.T, kind, subject string, payload any) {
		seq++
		if err := applyByHand(ctx, tx, seq, kind, subject, payload); err != nil {
			rt.Fatal(err)
		}
	}
	round := 0
	rapid.Check(t, func(rt *rapid.T) {
		round++
		var err error
		if tx, err = sqlite.BeginWrite(ctx, db); err != nil {
			rt.Fatal(err)
		}
		defer tx.Rollback()
		p, q := fmt.Sprintf("P%d", round), fmt.Sprintf("Q%d", round)
		for _, k := range []string{p, q} {
			apply(rt, trackrec.KindCreateProject, trackrec.ProjectSubject(k), trackrec.CreateProject{Key: k, Name: k})
		}
		var ids []string
		for i := range 3 {
			id := fmt.Sprintf("%s-i%d", p, i)
			ids = append(ids, id)
			apply(rt, trackrec.KindCreateWorkItem, trackrec.ItemSubject(id), trackrec.CreateWorkItem{ID: id, Project: p, Title: "item", Status: trackrec.StatusOpen})
		}
		people := []string{"", "ana", "bo", "cy"}
		for _, act := range rapid.SliceOfN(rapid.IntRange(0, 5), 1, 12).Draw(rt, "ops") {
			id := rapid.SampledFrom(ids).Draw(rt, "item")
			subject := trackrec.ItemSubject(id)
			switch act {
			case 0, 1:
				st := rapid.SampledFrom(trackrec.Statuses).Draw(rt, "status")
				apply(rt, trackrec.KindUpdateWorkItem, subject, trackrec.UpdateWorkItem{ID: id, Status: &st})
			case 2:
				who := rapid.SampledFrom(people).Draw(rt, "assignee")
				apply(rt, trackrec.KindUpdateWorkItem, subject, trackrec.UpdateWorkItem{ID: id, Assignee: &who})
			case 3:
				apply(rt, trackrec.KindTrash, subject, trackrec.Trash{ID: id, Root: id})
			case 4:
				apply(rt, trackrec.KindRestore, subject, trackrec.Restore{ID: id})
			case 5:
				apply(rt, trackrec.KindMove, subject, trackrec.Move{ID: id, To: rapid.SampledFrom([]string{p, q}).Draw(rt, "to")})
			}
		}
		n, err := trackapply.Domain{}.Rederive(ctx, tx)
		if err != nil {
			rt.Fatal(err)
		}
		if n != 0 {
			rt.Fatalf("the recomputation from history changed %d rows the apply had computed", n)
		}
		if err := tx.Commit(); err != nil {
			rt.Fatal(err)
		}
	})
}
