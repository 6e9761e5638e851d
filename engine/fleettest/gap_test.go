//go:build integration

package fleettest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/ledger"
)

// losingLog hands the applier every delivery of the real log but one: the
// delivery at seq drop is lost in flight, as one is when a replicated
// consumer's leader changes and newer records are delivered before the
// lost one would be redelivered.
type losingLog struct {
	statelog.Log
	drop *atomic.Uint64
}

func (l losingLog) Subscribe(ctx context.Context, checkpoint uint64) (statelog.Subscription, error) {
	in, err := l.Log.Subscribe(ctx, checkpoint)
	if err != nil {
		return nil, err
	}
	out := &losingSub{Subscription: in, c: make(chan statelog.Delivery, 64)}
	go func() {
		for {
			select {
			case d := <-in.C():
				if d.Seq == l.drop.Load() {
					l.drop.Store(0) // lost once
					continue
				}
				out.c <- d
			case <-in.Done():
				for {
					select {
					case d := <-in.C():
						out.c <- d
					default:
						return
					}
				}
			}
		}
	}()
	return out, nil
}

type losingSub struct {
	statelog.Subscription
	c chan statelog.Delivery
}

func (s *losingSub) C() <-chan statelog.Delivery { return s.c }

// TestDeliveryGapFilledFromTheLog: a record the consumer never delivered,
// followed by one it did, is read from the log and applied in order; the
// acknowledgement after the later one would otherwise have acknowledged
// it away, and its operation would be missing from this node for good
// (found by the nemesis run: one node's ledger lacked an applied op).
func TestDeliveryGapFilledFromTheLog(t *testing.T) {
	var drop atomic.Uint64
	n := enginetest.OpenNode(t, node.Config{WriteWait: 500 * time.Millisecond, Hooks: node.Hooks{
		WrapLog: func(_ engine.Domain, l statelog.Log) statelog.Log { return losingLog{Log: l, drop: &drop} }}})
	ctx := context.Background()
	pw, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "GAP", "Gap")
	enginetest.Landed(t, n, engine.DomainTracker, pw.WriteResult, err)
	// Landed: under load the create may answer pending within this node's
	// short write wait; it is waited for, not failed.
	iw, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "GAP", Title: "t0"})
	enginetest.Landed(t, n, engine.DomainTracker, iw.WriteResult, err)
	const key = "GAP-1"
	info, err := n.Log(engine.DomainTracker).Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	drop.Store(info.LastSeq + 1)
	t1 := "lost in flight"
	op, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	// Its record lands and is never delivered here: the answer is pending
	// or unknown once the wait ends, whichever way the write path puts it.
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	w1, err := n.Tracker().UpdateWorkItem(wctx, engine.WriteOptions{OpID: op.String()}, key, 0, tracker.ItemPatch{Title: &t1})
	t.Logf("first update: %+v %v", w1.WriteResult, err)
	cancel()
	// A linearizable read appends a barrier after it, which is delivered.
	got, err := n.Tracker().GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, key)
	if err != nil || got.Item.Title != t1 {
		t.Fatalf("item reads %+v %v, want the update lost in flight applied", got.Item, err)
	}
	enginetest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		var k int
		// The key the client minted runs under its client form.
		if err := n.DB().QueryRow(`SELECT count(*) FROM statelog_ledger WHERE op_id LIKE ?`, ledger.ClientForm(op).String()+".%").Scan(&k); err != nil {
			return err
		}
		if k != 1 {
			return fmt.Errorf("the record lost in flight (%s) is not applied", op)
		}
		return nil
	})
}
