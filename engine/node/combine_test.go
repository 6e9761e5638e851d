//go:build integration

package node_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

// combinedOp is one write of TestCombinedWritesExactlyOnce and every
// answer it got.
type combinedOp struct {
	id, title, key string
	create         bool
	outcomes       []string
}

// TestCombinedWritesExactlyOnce: 64 writers at once on a node whose
// embedded broker takes atomic batches, so their appends are combined,
// while a proxy between the node and its broker loses batch answers and
// single acks. Creates, and updates racing on the same items (appends
// that lose the arbitration, so batches are refused whole). Every op
// answered unknown is retried under its op id until it is settled. Then:
// every op landed at most once, every one answered applied or pending
// landed, one item per create record, each with its title.
func TestCombinedWritesExactlyOnce(t *testing.T) {
	ctx := context.Background()
	var proxy *enginetest.AckDropper
	n := enginetest.OpenNode(t, node.Config{PublishTimeout: 2 * time.Second,
		Hooks: node.Hooks{ClientURL: func(u string) string { proxy = enginetest.NewAckDropper(t, u); return proxy.URL() }}})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	var contested []string
	for i := 0; i < 4; i++ {
		w, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "contested"})
		if err != nil {
			t.Fatal(err)
		}
		contested = append(contested, w.Item.Key)
	}
	var ops []*combinedOp
	log := n.Log(engine.DomainTracker)
	// Rounds go on until a batch was taken and one lost: how many appends
	// are under way at once (the combiner batches from combineAt) depends
	// on how busy the machine is, so a loaded one may need more rounds.
	for round := 0; round < 24 && (round < 2 || log.Batches().Taken == 0 || log.Batches().Lost == 0); round++ {
		proxy.DropBatchAcks(1)
		proxy.DropAcks(1)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := 0; w < 64; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 4; i++ {
					o := &combinedOp{title: fmt.Sprintf("r%d-w%d-%d", round, w, i), create: w%8 != 0}
					if !o.create {
						o.key = contested[(w/8+i)%len(contested)]
					}
					writeUntilSettled(t, svc, o)
					mu.Lock()
					ops = append(ops, o)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		proxy.Heal()
	}
	b := log.Batches()
	if b.Taken == 0 {
		t.Fatal("64 writers at once were never combined into a batch")
	}
	t.Logf("%d ops; batches %+v; %d answers dropped", len(ops), b, proxy.Dropped.Load())
	checkCombinedOps(t, n, svc, ops)
}

// writeUntilSettled writes o, and again under the op id its answer gave
// while the answer is unknown.
func writeUntilSettled(t *testing.T, svc *tracker.Service, o *combinedOp) {
	for attempt := 0; attempt < 20; attempt++ {
		var w tracker.ItemWrite
		var err error
		if o.create {
			w, err = svc.CreateWorkItem(context.Background(), engine.WriteOptions{OpID: o.id}, tracker.NewWorkItem{Project: "ENG", Title: o.title})
		} else {
			w, err = svc.UpdateWorkItem(context.Background(), engine.WriteOptions{OpID: o.id}, o.key, 0, tracker.ItemPatch{Title: &o.title})
		}
		if o.id == "" {
			o.id = w.OpID
		}
		if err != nil {
			o.outcomes = append(o.outcomes, string(engine.CodeOf(err)))
			if engine.CodeOf(err) == engine.CodeConflict {
				return
			}
			t.Errorf("%s: %v", o.title, err)
			return
		}
		o.outcomes = append(o.outcomes, string(w.Outcome))
		if o.create && w.Item != nil {
			o.key = w.Item.Key
		}
		if w.Outcome != engine.Unknown {
			return
		}
	}
	t.Errorf("%s stayed unknown through 20 attempts: %v", o.title, o.outcomes)
}

// checkCombinedOps: every op id on the log at most once, every op
// answered applied or pending on it, one item per create record and each
// created item with its title.
func checkCombinedOps(t *testing.T, n *node.Node, svc *tracker.Service, ops []*combinedOp) {
	ctx := context.Background()
	log := n.Log(engine.DomainTracker)
	info, err := log.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Replica().WaitApplied(ctx, info.LastSeq); err != nil {
		t.Fatal(err)
	}
	landed := map[string]int{}
	for seq := info.FirstSeq; seq <= info.LastSeq; seq++ {
		m, err := log.Get(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		landed[m.MsgID]++
	}
	creates := 0
	for _, o := range ops {
		c := landed[o.id]
		if c > 1 {
			t.Fatalf("%s (%s) landed %d times", o.id, o.title, c)
		}
		final := o.outcomes[len(o.outcomes)-1]
		if (final == string(engine.Applied) || final == string(engine.Pending)) && c != 1 {
			t.Fatalf("%s answered %v is not on the log", o.title, o.outcomes)
		}
		if !o.create {
			continue
		}
		creates++
		var title string
		if err := n.DB().QueryRow(`SELECT title FROM tracker_items WHERE key = ?`, o.key).Scan(&title); err != nil || title != o.title {
			t.Fatalf("%s answered %v: item %s has title %q (%v)", o.title, o.outcomes, o.key, title, err)
		}
	}
	var items, distinct int
	if err := n.DB().QueryRow(`SELECT count(*), count(DISTINCT key) FROM tracker_items`).Scan(&items, &distinct); err != nil {
		t.Fatal(err)
	}
	if items != distinct || items != creates+4 {
		t.Fatalf("%d items on %d keys for %d creates and 4 contested items", items, distinct, creates)
	}
}
