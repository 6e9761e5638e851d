package tracker_test

import (
	"context"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// scene is the setup every gesture runs on: ENG-1 with children ENG-2 and
// ENG-3, ENG-4 under ENG-2; ENG-5 and ENG-6 beside them; an OPS project.
func scene(r *rig) {
	r.project("ENG")
	r.project("OPS")
	a := r.item("ENG", "root task", "")
	b := r.item("ENG", "child one", a)
	r.item("ENG", "child two", a)
	r.item("ENG", "grandchild", b)
	r.item("ENG", "dup one", "")
	r.item("ENG", "dup two", "")
	ctx := context.Background()
	w := []string{"ana"}
	if _, err := r.svc.UpdateWorkItem(ctx, r.op("update", "ENG-5"), "ENG-5", 0, tracker.ItemPatch{AddWatchers: w}); err != nil {
		r.t.Fatal(err)
	}
}

type gesture struct {
	name  string
	steps int
	// prep runs after the scene and before the gesture (not faulted).
	prep func(r *rig)
	run  func(r *rig, w engine.WriteOptions) (tracker.ItemWrite, error)
	verb string
	obj  string
	// marked is the item whose mid-gesture mark must stay after a fault.
	marked string
}

var gestures = []gesture{
	{name: "move", steps: 6, verb: "move", obj: "ENG-1", marked: "ENG-1",
		run: func(r *rig, w engine.WriteOptions) (tracker.ItemWrite, error) {
			return r.svc.MoveWorkItem(context.Background(), w, "ENG-1", "OPS")
		}},
	{name: "merge", steps: 4, verb: "merge", obj: "ENG-1", marked: "ENG-1",
		run: func(r *rig, w engine.WriteOptions) (tracker.ItemWrite, error) {
			return r.svc.MergeWorkItems(context.Background(), w, "ENG-1", []string{"ENG-5", "ENG-6"})
		}},
	{name: "dependencies", steps: 3, verb: "update", obj: "ENG-1",
		run: func(r *rig, w engine.WriteOptions) (tracker.ItemWrite, error) {
			return r.svc.UpdateWorkItem(context.Background(), w, "ENG-1", 0, tracker.ItemPatch{
				AddEdges: []tracker.Edge{{Kind: tracker.EdgeDependsOn, Key: "ENG-5"}, {Kind: tracker.EdgeRelatesTo, Key: "ENG-6"}}})
		}},
	{name: "trash", steps: 4, verb: "trash", obj: "ENG-1",
		run: func(r *rig, w engine.WriteOptions) (tracker.ItemWrite, error) {
			return r.svc.TrashWorkItem(context.Background(), w, "ENG-1")
		}},
	{name: "restore", steps: 4, verb: "restore", obj: "ENG-1",
		prep: func(r *rig) {
			if out, err := r.svc.TrashWorkItem(context.Background(), r.op("trash", "ENG-1"), "ENG-1"); err != nil || out.Outcome != engine.Applied {
				r.t.Fatalf("trash: %+v %v", out, err)
			}
		},
		run: func(r *rig, w engine.WriteOptions) (tracker.ItemWrite, error) {
			return r.svc.RestoreWorkItem(context.Background(), w, "ENG-1")
		}},
}

// gestureRig is a fresh node with the scene and the gesture's prep.
func gestureRig(t *testing.T, g gesture, t0 time.Time) *rig {
	t.Helper()
	r := newRig(t, t0)
	scene(r)
	if g.prep != nil {
		g.prep(r)
	}
	return r
}

// uninterrupted runs the gesture without a fault: the op it runs under
// and the rows it leaves, which every faulted run must end with.
func uninterrupted(t *testing.T, g gesture, t0 time.Time) (engine.WriteOptions, string) {
	ref := gestureRig(t, g, t0)
	gw := ref.op(g.verb, g.obj)
	out, err := g.run(ref, gw)
	if err != nil || out.Outcome != engine.Applied || len(out.Steps) != g.steps {
		t.Fatalf("uninterrupted %s: %v %+v", g.name, err, out)
	}
	want := ref.dump()
	ref.n.Close()
	return gw, want
}

// unknownAtStep loses step k's acknowledgement (the record landed on odd
// steps, was never sent on even ones), checks the walk stopped there, then
// runs the gesture again under its op id and compares the rows with want.
func unknownAtStep(t *testing.T, g gesture, t0 time.Time, k int, gw engine.WriteOptions, want string) {
	landed := k%2 == 1
	r := gestureRig(t, g, t0)
	w := r.op(g.verb, g.obj)
	if w != gw {
		t.Fatalf("op ids differ between runs: %s %s", w.OpID, gw.OpID)
	}
	before := r.log.appends.Load()
	r.log.arm(k, landed)
	out, err := g.run(r, w)
	if err != nil {
		t.Fatalf("step %d: %v", k, err)
	}
	if out.Outcome != engine.Unknown || !namesKey(out.OpID, w.OpID) {
		t.Fatalf("step %d (landed %v): outcome %s op %s, want unknown under %s: %+v", k, landed, out.Outcome, out.OpID, w.OpID, out)
	}
	if len(out.Steps) != k || out.Steps[k-1].Outcome != engine.Unknown {
		t.Fatalf("step %d: walk went on past the unknown step: %+v", k, out.Steps)
	}
	published := int(r.log.appends.Load() - before)
	wantPub := k - 1
	if landed {
		wantPub = k
	}
	if published != wantPub {
		t.Fatalf("step %d (landed %v): %d records published, want %d", k, landed, published, wantPub)
	}
	if g.marked != "" && (k > 1 || landed) && k < g.steps {
		if m := r.get(g.marked).Mark; m == "" {
			t.Fatalf("step %d: the mid-%s mark was taken down", k, g.name)
		}
	}
	if g.name == "dependencies" && k > 1 && len(out.OneSided) == 0 {
		t.Fatalf("step %d: an unknown mirror was not reported one-sided: %+v", k, out)
	}
	rerunUnderOp(t, g, r, k, w, out)
	if got := r.dump(); got != want {
		t.Fatalf("step %d (landed %v): rows after the re-run differ from an uninterrupted run's:\n got %s\nwant %s", k, landed, got, want)
	}
	r.n.Close()
}

// rerunUnderOp runs the gesture again under the faulted run's operation
// and checks it finishes, naming every step both runs wrote as the first
// run did.
func rerunUnderOp(t *testing.T, g gesture, r *rig, k int, w engine.WriteOptions, out tracker.ItemWrite) {
	// Both spellings name the operation: the key the client
	// minted, and the op_id the unknown answer gave.
	rerun := w
	if k%2 == 0 {
		rerun = engine.WriteOptions{OpID: out.OpID}
	}
	again, err := g.run(r, rerun)
	if err != nil || again.Outcome != engine.Applied {
		t.Fatalf("step %d: re-run: %v %+v", k, err, again)
	}
	// A step is named by the task it writes: where both runs wrote
	// the same task with the same action, the op id is the same
	// (a restore's re-run lists only what is still in the trash).
	first := map[string]string{}
	for _, st := range out.Steps {
		first[st.Action+" "+st.OpID[37:]] = st.OpID
	}
	for _, st := range again.Steps {
		if id, ok := first[st.Action+" "+st.OpID[37:]]; ok && id != st.OpID {
			t.Fatalf("step %d: re-run named %s %s, first run %s", k, st.Action, st.OpID, id)
		}
	}
}
