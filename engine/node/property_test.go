//go:build integration

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
		s := &schedule{ctx: context.Background(), rt: rt, clock: enginetest.NewClock(time.Now())}
		s.n = enginetest.OpenNode(t, node.Config{Clock: s.clock, PublishTimeout: 250 * time.Millisecond,
			Stream: node.StreamConfig{DuplicateWindow: 150 * time.Millisecond},
			Hooks: node.Hooks{ClientURL: func(u string) string {
				s.proxy = enginetest.NewAckDropper(t, u)
				return s.proxy.URL()
			}}})
		defer s.n.Close()
		s.svc = s.n.Tracker()
		mustProject(t, s.svc, "ENG")

		steps := rapid.IntRange(4, 14).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			s.step(i)
		}
		landed := s.quiesce()
		s.checkLanded(landed)
		s.checkItems(landed)
		rt.Logf("ops=%d landed=%d dropped=%d", len(s.ops), len(landed), s.proxy.Dropped.Load())
	})
}

// scheduledOp is one write of a schedule: a create, or an update of an
// item a create filed, with the outcome it answered (applied or pending
// stay, whatever a retry answers later).
type scheduledOp struct {
	id      string
	create  bool
	key     string
	title   string
	outcome engine.Outcome
}

// schedule is one random run of TestExactlyOnceProperty: the node behind
// its ack-dropping proxy, the ops written so far and the keys created.
type schedule struct {
	ctx   context.Context
	rt    *rapid.T
	clock *enginetest.Clock
	n     *node.Node
	proxy *enginetest.AckDropper
	svc   *tracker.Service
	ops   []*scheduledOp
	keys  []string
}

// step draws and takes one action: a create, an update, a retry of an op
// under its id, lost acks (and log reads), a wait past the duplicate
// window, or days passing and the ledger swept.
func (s *schedule) step(i int) {
	rt := s.rt
	switch rapid.IntRange(0, 6).Draw(rt, "action") {
	case 0, 1:
		o := &scheduledOp{create: true, title: fmt.Sprintf("c%d", i)}
		s.ops = append(s.ops, o)
		s.run(o)
	case 2:
		if len(s.keys) > 0 {
			o := &scheduledOp{key: s.keys[rapid.IntRange(0, len(s.keys)-1).Draw(rt, "item")], title: fmt.Sprintf("u%d", i)}
			s.ops = append(s.ops, o)
			s.run(o)
		}
	case 3:
		if len(s.ops) > 0 {
			o := s.ops[rapid.IntRange(0, len(s.ops)-1).Draw(rt, "retry")]
			if o.id != "" {
				s.run(o)
			}
		}
	case 4:
		s.proxy.DropAcks(1)
		if rapid.Bool().Draw(rt, "lose the log too") {
			s.proxy.DropAPI(2)
		}
	case 5:
		time.Sleep(200 * time.Millisecond) // past the duplicate window
	case 6:
		s.clock.Advance(time.Duration(rapid.IntRange(1, 12).Draw(rt, "days")) * 24 * time.Hour)
		if _, err := s.n.SweepLedger(s.ctx); err != nil {
			rt.Fatal(err)
		}
	}
}

// run writes o (again, under its id, once it has one) and keeps what it
// answered: the op id, the key a create filed, the outcome.
func (s *schedule) run(o *scheduledOp) {
	ctx, rt, svc := s.ctx, s.rt, s.svc
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
			s.keys = append(s.keys, r.Item.Key)
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

// quiesce heals the proxy, waits for the applier to reach the log's end
// and counts how often each op id landed on the log.
func (s *schedule) quiesce() map[string]int {
	ctx, rt, n := s.ctx, s.rt, s.n
	// Heal and quiesce: the applier reaches the log's end.
	s.proxy.Heal()
	info, err := n.Log(engine.DomainTracker).Info(ctx)
	if err != nil {
		rt.Fatal(err)
	}
	if err := s.svc.Replica().WaitApplied(ctx, info.LastSeq); err != nil {
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
	return landed
}

// checkLanded: every op landed at most once, and every op answered
// applied or pending landed.
func (s *schedule) checkLanded(landed map[string]int) {
	for _, o := range s.ops {
		if o.id == "" {
			continue
		}
		c := landed[o.id]
		if c > 1 {
			s.rt.Fatalf("op %s landed %d times", o.id, c)
		}
		if (o.outcome == engine.Applied || o.outcome == engine.Pending) && c != 1 {
			s.rt.Fatalf("op %s answered %s is not on the log", o.id, o.outcome)
		}
	}
}

// checkItems: one item per key, and one per create record on the log:
// nothing applied twice.
func (s *schedule) checkItems(landed map[string]int) {
	rt := s.rt
	var items, distinct int
	s.n.DB().QueryRow(`SELECT count(*), count(DISTINCT key) FROM tracker_items`).Scan(&items, &distinct)
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
}
