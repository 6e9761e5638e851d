package tracker_test

import (
	"context"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestRepairFinishesOneSidedMirrors: a dependencies gesture whose step k
// is unknown (the update itself landed unseen, a mirror landed unseen, a
// mirror never sent) leaves mirrors owed; the tracker duty's repair
// finishes them under the gesture's own step ids, so the rows equal an
// uninterrupted run's, every step's record is on the log exactly once,
// nothing stays owed, a second repair writes nothing, and the gesture
// run again under its op id answers every step without an append.
func TestRepairFinishesOneSidedMirrors(t *testing.T) {
	t0 := time.Now()
	g := gestures[2] // dependencies: the update, then a mirror on ENG-5 and one on ENG-6
	if g.name != "dependencies" {
		t.Fatalf("gestures[2] is %s", g.name)
	}
	_, want := uninterrupted(t, g, t0)
	for _, c := range []struct {
		k      int
		landed bool
	}{{1, true}, {2, true}, {2, false}, {3, false}} {
		r := gestureRig(t, g, t0)
		w := r.op(g.verb, g.obj)
		r.log.arm(c.k, c.landed)
		out, err := g.run(r, w)
		if err != nil || out.Outcome != engine.Unknown {
			t.Fatalf("step %d: %v %+v", c.k, err, out)
		}
		if c.k > 1 && len(out.OneSided) == 0 {
			t.Fatalf("step %d: nothing reported one-sided: %+v", c.k, out)
		}
		ctx := context.Background()
		caughtUp(t, r)
		if n := owedRows(t, r); n == 0 {
			t.Fatalf("step %d: no mirror is owed after the gesture stopped", c.k)
		}
		before := r.log.appends.Load()
		reps, err := r.svc.RepairMirrors(ctx, 0, nil)
		if err != nil {
			t.Fatalf("step %d: repair: %v %+v", c.k, err, reps)
		}
		for _, rp := range reps {
			if rp.Outcome != engine.Applied {
				t.Fatalf("step %d: repair %+v", c.k, rp)
			}
		}
		if got := r.dump(); got != want {
			t.Fatalf("step %d (landed %v): rows after the repair differ from an uninterrupted run's:\n got %s\nwant %s", c.k, c.landed, got, want)
		}
		if n := owedRows(t, r); n != 0 {
			t.Fatalf("step %d: %d mirrors still owed after the repair", c.k, n)
		}
		// Each step id the repair used is on the log exactly once, and the
		// repair appended only what had not landed.
		msgs, err := fleettest.ReadLog(ctx, r.n.Log(engine.DomainTracker))
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]int{}
		for _, m := range msgs {
			ids[m.MsgID]++
		}
		for _, rp := range reps {
			if ids[rp.OpID] != 1 {
				t.Fatalf("step %d: step %s is on the log %d times", c.k, rp.OpID, ids[rp.OpID])
			}
		}
		if again, err := r.svc.RepairMirrors(ctx, 0, nil); err != nil || len(again) != 0 {
			t.Fatalf("step %d: a second repair found %+v %v", c.k, again, err)
		}
		appended := r.log.appends.Load() - before
		rerun, err := g.run(r, w)
		if err != nil || rerun.Outcome != engine.Applied || len(rerun.OneSided) != 0 {
			t.Fatalf("step %d: re-run after the repair: %v %+v", c.k, err, rerun)
		}
		if n := r.log.appends.Load() - before - appended; n != 0 {
			t.Fatalf("step %d: the re-run appended %d records the repair had finished", c.k, n)
		}
		if got := r.dump(); got != want {
			t.Fatalf("step %d: rows after the re-run moved", c.k)
		}
		r.n.Close()
	}
}

// TestRepairLeavesAGestureUnderWay: a mirror owed for less than the grace
// is left to the gesture writing it, and the duty names itself tracker.
func TestRepairLeavesAGestureUnderWay(t *testing.T) {
	r := gestureRig(t, gestures[2], time.Now())
	r.log.arm(2, false)
	if _, err := gestures[2].run(r, r.op("update", "ENG-1")); err != nil {
		t.Fatal(err)
	}
	reps, err := r.svc.RepairMirrors(context.Background(), time.Hour, nil)
	if err != nil || len(reps) != 0 {
		t.Fatalf("repaired inside the grace: %+v %v", reps, err)
	}
	if js := r.svc.Duties(); len(js) != 1 || js[0].Name != tracker.DutyName {
		t.Fatalf("duties %+v", js)
	}
}

// caughtUp waits until the rig's node has applied its tracker log to
// the end (a record that landed unseen included).
func caughtUp(t *testing.T, r *rig) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := r.n.Log(engine.DomainTracker).Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.n.Replica(engine.DomainTracker).WaitApplied(ctx, info.LastSeq); err != nil {
		t.Fatal(err)
	}
}

func owedRows(t *testing.T, r *rig) int {
	t.Helper()
	var n int
	if err := r.n.DB().QueryRow(`SELECT count(*) FROM tracker_mirror_due`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
