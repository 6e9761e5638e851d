package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
	"github.com/crewlet/crewlet/ledger"
)

// TestLinearizableReadAtLogEnd: at one replica a linearizable read asks
// the log's one server where the log ends instead of appending a barrier,
// and still sees every write acknowledged before it began — here creates
// another writer put on the log (as another node of the fleet would),
// which this node's applier, slowed, has not applied when the read
// begins. The read appends nothing and waits for them.
func TestLinearizableReadAtLogEnd(t *testing.T) {
	ctx := context.Background()
	var slow atomic.Bool
	n := enginetest.OpenNode(t, node.Config{Hooks: node.Hooks{BeforeApplyCommit: func(engine.Domain, uint64) error {
		if slow.Load() {
			time.Sleep(20 * time.Millisecond)
		}
		return nil
	}}})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	rep := n.Replica(engine.DomainTracker)
	before := rep.Stats()
	slow.Store(true)
	const others = 10
	for j := 1; j <= others; j++ {
		op, _ := ledger.MintFor(time.Now(), "create_work_item", "ENG", "")
		payload, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("wi_other_%d", j), "project": "ENG", "title": "another writer's", "description": "", "status": "open", "assignee": ""})
		data, _ := record.Encode(&record.Record{Kind: trackrec.KindCreateWorkItem, Version: 1, OpID: op.String(), Writer: "n2", Generation: 1,
			Subject: "crewlet.tracker.project.ENG", Payload: payload})
		if _, err := n.Broker().JS.Publish(ctx, "crewlet.tracker.project.ENG", data, jetstream.WithMsgID(op.String())); err != nil {
			t.Fatal(err)
		}
	}
	applied := rep.Applied()
	res, err := svc.ListWorkItems(ctx, lin(), tracker.ListFilter{Project: "ENG", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	slow.Store(false)
	after := rep.Stats()
	t.Logf("applied %d when the read began; it answered through %d", applied, res.SeenThrough.Seq)
	if len(res.Items) != others {
		t.Fatalf("the read saw %d of the %d creates acknowledged before it began", len(res.Items), others)
	}
	if after.BarrierAppends != before.BarrierAppends || after.EndReads == before.EndReads {
		t.Fatalf("the read made %d barrier appends and %d end reads; want none and one", after.BarrierAppends-before.BarrierAppends, after.EndReads-before.EndReads)
	}
}
