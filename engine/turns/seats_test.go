package turns_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/turns"
)

// TestSeatClaims: a level node claims a seat held nowhere; a node that is
// not level claims none (its refusal is the answer, the seat stays) but
// keeps the seats it holds; a level node claims a seat from another.
func TestSeatClaims(t *testing.T) {
	u := openUnits(t, enginetest.NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)))
	ctx := ctxT(t)
	level := func(context.Context) *engine.Refusal { return nil }
	behind := func(context.Context) *engine.Refusal {
		return engine.Refuse(engine.CodeBehind, "this node is 12 records behind")
	}
	asked := 0
	counting := func(ctx context.Context) *engine.Refusal { asked++; return behind(ctx) }

	p, claimed, err := u.Claim(ctx, "seat-a", "n1", level)
	if err != nil || !claimed || p.Node != "n1" || p.Turns != 1 {
		t.Fatalf("first claim: %+v %v %v", p, claimed, err)
	}
	_, claimed, err = u.Claim(ctx, "seat-a", "n2", behind)
	var ref *engine.Refusal
	if !errors.As(err, &ref) || ref.Code != engine.CodeBehind || claimed {
		t.Fatalf("a claim by a node behind: %v %v", claimed, err)
	}
	p, claimed, err = u.Claim(ctx, "seat-a", "n1", counting)
	if err != nil || claimed || p.Node != "n1" || p.Turns != 2 || asked != 0 {
		t.Fatalf("a held seat on a node behind: %+v %v %v (level asked %d times)", p, claimed, err, asked)
	}
	p, claimed, err = u.Claim(ctx, "seat-a", "n2", level)
	if err != nil || !claimed || p.Node != "n2" || p.From != "n1" || p.Turns != 1 {
		t.Fatalf("a level node's claim: %+v %v %v", p, claimed, err)
	}
	if _, _, err := u.Claim(ctx, "seat-b", "join-1", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := u.Claim(ctx, "seat-c", "join-1", nil); err != nil {
		t.Fatal(err)
	}
	// Units beside the seats in the bucket: the listing reads seats alone.
	if _, err := u.Start(ctx, "unit-1", "seat-a", "n2", nil); err != nil {
		t.Fatal(err)
	}
	a := u.Answer(ctx, map[string]string{"n1": "", "n2": "behind: 12 records", "n3": ""})
	if a.Unread != "" || len(a.Seats) != 3 || a.Seats[0].Seat != "seat-a" || a.Seats[0].Node != "n2" {
		t.Fatalf("seats: %+v", a)
	}
	want := []turns.NodeClaims{{Node: "join-1", Claims: true, Holds: 2}, {Node: "n1", Claims: true}, {Node: "n2", Why: "behind: 12 records", Holds: 1}, {Node: "n3", Claims: true}}
	if len(a.Nodes) != len(want) {
		t.Fatalf("nodes: %+v", a.Nodes)
	}
	for i := range want {
		if a.Nodes[i] != want[i] {
			t.Fatalf("node %d: %+v, want %+v", i, a.Nodes[i], want[i])
		}
	}
}

// TestFloorsTable: a floor only rises, per log; a newer generation
// replaces an older one; Higher picks the later of two.
func TestFloorsTable(t *testing.T) {
	f := turns.NewFloors()
	tr := func(gen, seq uint64) engine.Position {
		return engine.Position{Stream: engine.StreamTracker, Generation: gen, Seq: seq}
	}
	if f.Floor(engine.StreamTracker) != nil {
		t.Fatal("an empty table has a floor")
	}
	f.Raise(tr(1, 10))
	f.Raise(tr(1, 7))
	f.Raise(engine.Position{Stream: engine.StreamPages, Generation: 1, Seq: 3})
	f.Raise(engine.Position{})
	if got := f.Floor(engine.StreamTracker); got == nil || *got != tr(1, 10) {
		t.Fatalf("tracker floor %v, want 10", got)
	}
	f.Raise(tr(2, 1))
	if got := f.Floor(engine.StreamTracker); *got != tr(2, 1) {
		t.Fatalf("a newer generation: %v", got)
	}
	f.Raise(tr(1, 99))
	if got := f.Floor(engine.StreamTracker); *got != tr(2, 1) {
		t.Fatalf("an older generation raised it: %v", got)
	}
	if all := f.All(); len(all) != 2 || all[0].Stream != engine.StreamPages {
		t.Fatalf("all: %v", all)
	}
	a, b := tr(1, 5), tr(1, 9)
	if *turns.Higher(&a, &b) != b || *turns.Higher(&b, &a) != b || turns.Higher(nil, &a) != &a || turns.Higher(&a, nil) != &a {
		t.Fatal("Higher")
	}
}
