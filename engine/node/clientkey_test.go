package node_test

import (
	"context"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/ledger"
)

// TestClientKeysRetriedAtAnyTime: a key the client minted is retried
// after any delay (the node's clock is moved by hand), under either
// spelling: the bare key, or the op_id an answer gave. A key whose write
// landed is answered from the ledger however late the retry comes, at
// the first copy's position; a key under which nothing landed is a first
// use, taken within the mint window and refused invalid_argument past it.
// Never two records for one key.
func TestClientKeysRetriedAtAnyTime(t *testing.T) {
	ctx := context.Background()
	clock := enginetest.NewClock(time.Now())
	n := enginetest.OpenNode(t, node.Config{Clock: clock})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	// Draws within this margin of the window's edge are moved off it: the
	// key's instant is kept to the millisecond.
	const margin = 2 * time.Second
	rapid.Check(t, func(rt *rapid.T) {
		age := time.Duration(rapid.IntRange(0, 290).Draw(rt, "age_s")) * time.Second
		delay := time.Duration(rapid.IntRange(0, 4*3600).Draw(rt, "delay_s")) * time.Second
		landFirst := rapid.Bool().Draw(rt, "lands_first")
		answered := rapid.Bool().Draw(rt, "retry_with_answered_id")
		if d := age + delay - ledger.ClientMintWindow; d > -margin && d < margin {
			delay += 2 * margin
		}
		u, err := ledger.NewV7At(clock.Now().Add(-age))
		if err != nil {
			rt.Fatal(err)
		}
		key := u.String()
		in := tracker.NewWorkItem{Project: "ENG", Title: "keyed " + key}
		name := ".create_work_item-ENG"
		var first tracker.ItemWrite
		if landFirst {
			first, err = svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: key}, in)
			if err != nil || first.Outcome != engine.Applied || first.OpID != ledger.ClientForm(u).String()+name {
				rt.Fatalf("first use: %+v %v", first, err)
			}
		}
		before := enginetest.LastWrite(t, n, engine.DomainTracker)
		clock.Advance(delay)
		spelling := key
		if answered {
			spelling = ledger.ClientForm(u).String() + name
		}
		again, err := svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: spelling}, in)
		after := enginetest.LastWrite(t, n, engine.DomainTracker)
		switch {
		case landFirst:
			if err != nil || again.Outcome != engine.Applied || again.Position != first.Position || again.Item == nil || again.Item.Key != first.Item.Key {
				rt.Fatalf("retry %v after its write landed: %+v %v, want %s at %s", delay, again, err, first.Item.Key, first.Position)
			}
			if after != before {
				rt.Fatalf("a retry of a landed write wrote again: %d -> %d", before, after)
			}
		case age+delay <= ledger.ClientMintWindow:
			if err != nil || again.Outcome != engine.Applied || again.OpID != ledger.ClientForm(u).String()+name {
				rt.Fatalf("first use %v after its mint: %+v %v", age+delay, again, err)
			}
			if after == before {
				rt.Fatal("a first use within the window wrote nothing")
			}
		default:
			if engine.CodeOf(err) != engine.CodeInvalidArgument {
				rt.Fatalf("first use %v after its mint: %+v %v, want invalid_argument", age+delay, again, err)
			}
			if after != before {
				rt.Fatalf("a refused key wrote: %d -> %d", before, after)
			}
		}
		var rows int
		if err := n.DB().QueryRow(`SELECT count(*) FROM statelog_ledger WHERE op_id LIKE ?`, ledger.ClientForm(u).String()+".%").Scan(&rows); err != nil {
			rt.Fatal(err)
		}
		if want := map[bool]int{true: 1, false: 0}[landFirst || err == nil]; rows != want {
			rt.Fatalf("%d ledger rows for key %s, want %d", rows, key, want)
		}
	})
}
