package node_test

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestExactlyOnceProperty runs random schedules of writes, lost acks (a
// TCP proxy between the node's connection and its broker drops the
// PubAck, and sometimes the log reads too), duplicate-window expiry,
// ledger sweeps across up to 40 simulated days, and retries under the
// same id, then asserts on the log and the rows: every op landed at most
// once, every applied or pending op landed, every unknown op landed once
// or not at all, and nothing applied twice.
func TestExactlyOnceProperty(t *testing.T) {
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == "100" {
		f.Value.Set("8") // each check boots a node; -rapid.checks=N runs more
	}
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		clock := enginetest.NewClock(time.Now())
		var proxy *enginetest.AckDropper
		n := enginetest.OpenNode(t, node.Config{Clock: clock, PublishTimeout: 250 * time.Millisecond,
			Stream: node.StreamConfig{DuplicateWindow: 150 * time.Millisecond},
			Hooks: node.Hooks{ClientURL: func(u string) string {
				proxy = enginetest.NewAckDropper(t, u)
				return proxy.URL()
			}}})
		defer n.Close()
		svc := n.Tracker()
		mustProject(t, svc, "ENG")

		type op struct {
			id      string
			create  bool
			key     string
			title   string
			outcome engine.Outcome
		}
		var ops []*op
		var keys []string
		run := func(o *op) {
			t0 := time.Now()
			defer func() { rt.Logf("%v %s %s -> %s in %v", o.create, o.key, o.title, o.outcome, time.Since(t0)) }()
			var w engine.WriteResult
			var err error
			if o.create {
				var r tracker.ItemWrite
				r, err = svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: o.id}, tracker.NewWorkItem{Project: "ENG", Title: o.title})
				w = r.WriteResult
				if err == nil && r.Item != nil && o.key == "" {
					o.key = r.Item.Key
					keys = append(keys, r.Item.Key)
				}
			} else {
				var r tracker.ItemWrite
				r, err = svc.UpdateWorkItem(ctx, engine.WriteOptions{OpID: o.id}, o.key, 0, tracker.ItemPatch{Title: &o.title})
				w = r.WriteResult
			}
			if o.id == "" {
				o.id = w.OpID
			}
			if err != nil {
				if engine.CodeOf(err) == engine.CodeInternal {
					rt.Fatalf("internal error: %v", err)
				}
				return // refused: decided against the rows, wrote nothing new
			}
			if o.outcome != engine.Applied && o.outcome != engine.Pending {
				o.outcome = w.Outcome
			}
		}
		steps := rapid.IntRange(4, 14).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			switch rapid.IntRange(0, 6).Draw(rt, "action") {
			case 0, 1:
				o := &op{create: true, title: fmt.Sprintf("c%d", i)}
				ops = append(ops, o)
				run(o)
			case 2:
				if len(keys) > 0 {
					o := &op{key: keys[rapid.IntRange(0, len(keys)-1).Draw(rt, "item")], title: fmt.Sprintf("u%d", i)}
					ops = append(ops, o)
					run(o)
				}
			case 3:
				if len(ops) > 0 {
					o := ops[rapid.IntRange(0, len(ops)-1).Draw(rt, "retry")]
					if o.id != "" {
						run(o)
					}
				}
			case 4:
				proxy.DropAcks(1)
				if rapid.Bool().Draw(rt, "lose the log too") {
					proxy.DropAPI(2)
				}
			case 5:
				time.Sleep(200 * time.Millisecond) // past the duplicate window
			case 6:
				clock.Advance(time.Duration(rapid.IntRange(1, 12).Draw(rt, "days")) * 24 * time.Hour)
				if _, err := n.SweepLedger(ctx); err != nil {
					rt.Fatal(err)
				}
			}
		}
		// Heal and quiesce: the applier reaches the log's end.
		proxy.Heal()
		info, err := n.Log(engine.DomainTracker).Info(ctx)
		if err != nil {
			rt.Fatal(err)
		}
		if err := svc.Replica().WaitApplied(ctx, info.LastSeq); err != nil {
			rt.Fatal(err)
		}
		landed := map[string]int{}
		for seq := uint64(1); seq <= info.LastSeq; seq++ {
			m, err := n.Log(engine.DomainTracker).Get(ctx, seq)
			if err != nil {
				rt.Fatal(err)
			}
			if m.MsgID != "" {
				landed[m.MsgID]++
			}
		}
		for _, o := range ops {
			if o.id == "" {
				continue
			}
			c := landed[o.id]
			if c > 1 {
				rt.Fatalf("op %s landed %d times", o.id, c)
			}
			if (o.outcome == engine.Applied || o.outcome == engine.Pending) && c != 1 {
				rt.Fatalf("op %s answered %s is not on the log", o.id, o.outcome)
			}
		}
		var items, distinct int
		n.DB().QueryRow(`SELECT count(*), count(DISTINCT key) FROM tracker_items`).Scan(&items, &distinct)
		if items != distinct {
			rt.Fatalf("%d items on %d keys", items, distinct)
		}
		creates := 0
		for id, c := range landed {
			if len(id) > 37 && id[37:] == "create_work_item-ENG" {
				creates += c
			}
		}
		if items != creates {
			rt.Fatalf("%d items for %d create records", items, creates)
		}
		rt.Logf("ops=%d landed=%d dropped=%d", len(ops), len(landed), proxy.Dropped.Load())
	})
}
