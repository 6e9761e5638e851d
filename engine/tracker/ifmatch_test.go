package tracker_test

import (
	"context"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestGesturesTakeAnOptionalIfMatch: move, merge, trash and restore take
// the version of the item they are about as an optional if_match. A
// version the item has left is refused stale, naming the current one,
// and writes nothing; the current one, or none, goes ahead; and the
// gesture brought back under its op_id is answered, not refused by the
// version its own first run moved.
func TestGesturesTakeAnOptionalIfMatch(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, time.Now())
	scene(r)
	cases := []struct {
		name string
		key  string
		run  func(w engine.WriteOptions) (tracker.ItemWrite, error)
	}{
		{"trash", "ENG-5", func(w engine.WriteOptions) (tracker.ItemWrite, error) { return r.svc.TrashWorkItem(ctx, w, "ENG-5") }},
		{"restore", "ENG-5", func(w engine.WriteOptions) (tracker.ItemWrite, error) { return r.svc.RestoreWorkItem(ctx, w, "ENG-5") }},
		{"merge", "ENG-5", func(w engine.WriteOptions) (tracker.ItemWrite, error) {
			return r.svc.MergeWorkItems(ctx, w, "ENG-5", []string{"ENG-6"})
		}},
		{"move", "ENG-1", func(w engine.WriteOptions) (tracker.ItemWrite, error) {
			return r.svc.MoveWorkItem(ctx, w, "ENG-1", "OPS")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := r.get(c.key).Version
			w := r.op(c.name, c.key)
			w.IfMatch = v - 1
			_, err := c.run(w)
			ref, ok := engine.AsRefusal(err)
			if !ok || ref.Code != engine.CodeStale || ref.Fields["current_version"] != v {
				t.Fatalf("if_match a version behind: %v, want stale naming %d", err, v)
			}
			if r.get(c.key).Version != v {
				t.Fatal("a stale gesture wrote")
			}
			w = r.op(c.name, c.key)
			w.IfMatch = v
			out, err := c.run(w)
			if err != nil || out.Outcome != engine.Applied {
				t.Fatalf("if_match the current version: %+v %v", out, err)
			}
			last := enginetest.LastWrite(t, r.n, engine.DomainTracker)
			again, err := c.run(engine.WriteOptions{OpID: out.OpID, IfMatch: v})
			if err != nil || again.Outcome != engine.Applied || enginetest.LastWrite(t, r.n, engine.DomainTracker) != last {
				t.Fatalf("brought back under its op_id: %+v %v, want the first run answered, nothing written", again, err)
			}
		})
	}
	// Without if_match, a gesture is decided against the current rows.
	title := "no if_match"
	if out, err := r.svc.TrashWorkItem(ctx, engine.WriteOptions{}, "ENG-2"); err != nil || out.Outcome != engine.Applied {
		t.Fatalf("trash without if_match: %+v %v", out, err)
	}
	if out, err := r.svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-3", 0, tracker.ItemPatch{Title: &title}); err != nil || out.Outcome != engine.Applied {
		t.Fatalf("update without if_match: %+v %v", out, err)
	}
}
