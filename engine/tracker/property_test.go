package tracker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
	"pgregory.net/rapid"
)

// TestComputedColumnsEqualARecomputation: after any sequence of status
// changes, hand-offs, moves, trash and restore, the computed columns the
// apply maintained (reopens, hand-offs, updated_at, each history row's
// hand-off count, each project's active count) equal a recomputation from
// the history: the rederive finds nothing to write.
func TestComputedColumnsEqualARecomputation(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	round := 0
	rapid.Check(t, func(rt *rapid.T) {
		round++
		p, q := fmt.Sprintf("P%d", round), fmt.Sprintf("Q%d", round)
		r.project(p)
		r.project(q)
		var keys []string
		for i := 0; i < 3; i++ {
			keys = append(keys, r.item(p, "item", ""))
		}
		people := []string{"", "ana", "bo", "cy"}
		for _, act := range rapid.SliceOfN(rapid.IntRange(0, 5), 1, 12).Draw(rt, "ops") {
			k := rapid.SampledFrom(keys).Draw(rt, "key")
			var err error
			switch act {
			case 0, 1:
				st := rapid.SampledFrom(tracker.Statuses).Draw(rt, "status")
				_, err = r.svc.UpdateWorkItem(ctx, engine.WriteOptions{}, k, 0, tracker.ItemPatch{Status: &st})
			case 2:
				who := rapid.SampledFrom(people).Draw(rt, "assignee")
				_, err = r.svc.UpdateWorkItem(ctx, engine.WriteOptions{}, k, 0, tracker.ItemPatch{Assignee: &who})
			case 3:
				_, err = r.svc.TrashWorkItem(ctx, engine.WriteOptions{}, k)
			case 4:
				_, err = r.svc.RestoreWorkItem(ctx, engine.WriteOptions{}, k)
			case 5:
				var out tracker.ItemWrite
				out, err = r.svc.MoveWorkItem(ctx, engine.WriteOptions{}, k, rapid.SampledFrom([]string{p, q}).Draw(rt, "to"))
				if err == nil && out.Item != nil {
					for i := range keys {
						if keys[i] == k {
							keys[i] = out.Item.Key
						}
					}
				}
			}
			if err != nil {
				rt.Fatalf("op %d on %s: %v", act, k, err)
			}
		}
		tx, err := r.n.DB().BeginTx(ctx, nil)
		if err != nil {
			rt.Fatal(err)
		}
		defer tx.Rollback()
		n, err := trackapply.Domain{}.Rederive(ctx, tx)
		if err != nil {
			rt.Fatal(err)
		}
		if n != 0 {
			rt.Fatalf("the recomputation from history changed %d rows the apply had computed", n)
		}
	})
}
