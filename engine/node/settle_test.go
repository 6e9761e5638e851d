package node_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
	"github.com/crewlet/crewlet/ledger"
)

// heldLog holds the applier's deliveries back while it is closed, as a
// node that is behind the log sees it: records other nodes appended are
// on the log and not in its rows. It opens on the first barrier this node
// appends, so a refusal answered without establishing the log's end is
// answered from the held-back rows.
type heldLog struct {
	statelog.Log
	mu      sync.Mutex
	closed  bool
	held    []statelog.Delivery
	out     chan statelog.Delivery
	opened  chan struct{}
	barrier string
}

func newHeldLog(l statelog.Log, d engine.Domain) *heldLog {
	return &heldLog{Log: l, out: make(chan statelog.Delivery, 1024), barrier: statelog.BarrierSubject(d)}
}

// hold closes the gate: deliveries from now on wait for a barrier.
func (h *heldLog) hold() {
	h.mu.Lock()
	h.closed, h.opened = true, make(chan struct{})
	h.mu.Unlock()
}

func (h *heldLog) open() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		return
	}
	h.closed = false
	close(h.opened)
	for _, d := range h.held {
		h.out <- d
	}
	h.held = nil
}

func (h *heldLog) Publish(ctx context.Context, subject string, data []byte, msgID string, expectLast *uint64) (statelog.PubAck, error) {
	ack, err := h.Log.Publish(ctx, subject, data, msgID, expectLast)
	if subject == h.barrier {
		h.open()
	}
	return ack, err
}

func (h *heldLog) Subscribe(ctx context.Context, checkpoint uint64) (statelog.Subscription, error) {
	in, err := h.Log.Subscribe(ctx, checkpoint)
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			select {
			case d := <-in.C():
				h.mu.Lock()
				if h.closed {
					h.held = append(h.held, d)
				} else {
					h.out <- d
				}
				h.mu.Unlock()
			case <-in.Done():
				return
			}
		}
	}()
	return heldSub{Subscription: in, c: h.out}, nil
}

type heldSub struct {
	statelog.Subscription
	c chan statelog.Delivery
}

func (s heldSub) C() <-chan statelog.Delivery { return s.c }

// publishAs appends a tracker record another node decided, as that node
// would, and returns its sequence.
func publishAs(t *testing.T, n *node.Node, kind, subject string, payload any) uint64 {
	t.Helper()
	op, err := ledger.MintFor(time.Now(), "peer", "x", "")
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	data, err := record.Encode(&record.Record{Kind: kind, Version: 1, OpID: op.String(), Writer: "n2", Generation: 1, Subject: subject, Payload: body})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := n.Log(engine.DomainTracker).Publish(context.Background(), subject, data, op.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Seq
}

// TestRefusalsHoldAtTheLogsEnd: a node whose rows are behind the log
// (another node's create and update are on the log, not yet applied here)
// does not refuse a create into the project it has not seen not_found, nor
// an update conditioned on the version another node answered stale: it
// establishes the log's end (a barrier), catches up and decides again. A
// refusal that still holds there (an unknown project, a version the item
// has left) is answered, and is not a write.
func TestRefusalsHoldAtTheLogsEnd(t *testing.T) {
	var held *heldLog
	n := enginetest.OpenNode(t, node.Config{Hooks: node.Hooks{WrapLog: func(d engine.Domain, l statelog.Log) statelog.Log {
		if d != engine.DomainTracker {
			return l
		}
		held = newHeldLog(l, d)
		return held
	}}})
	ctx := context.Background()
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	iw, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "first"})
	if err != nil || iw.Outcome != engine.Applied {
		t.Fatalf("create: %+v %v", iw, err)
	}

	// Another node files project OPS; this one has not applied it.
	held.hold()
	publishAs(t, n, trackrec.KindCreateProject, "crewlet.tracker.project.OPS", map[string]any{"key": "OPS", "name": "Operations"})
	ow, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "OPS", Title: "on a project another node filed"})
	if err != nil || ow.Outcome != engine.Applied || ow.Item == nil || ow.Item.Key != "OPS-1" {
		t.Fatalf("create into a project this node had not applied yet: %+v %v", ow, err)
	}

	// Another node updates ENG-1; its caller read the new version there.
	held.hold()
	title := "renamed on n2"
	v2 := publishAs(t, n, trackrec.KindUpdateWorkItem, "crewlet.tracker.item."+iw.Item.ID, map[string]any{"id": iw.Item.ID, "title": title})
	mine := "renamed here, against n2's version"
	uw, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{}, iw.Item.Key, v2, tracker.ItemPatch{Title: &mine})
	if err != nil || uw.Outcome != engine.Applied || uw.Item == nil || uw.Item.Title != mine {
		t.Fatalf("update at the version another node answered: %+v %v", uw, err)
	}

	// Refusals that hold at the log's end are answered, and write nothing.
	before := enginetest.LastWrite(t, n, engine.DomainTracker)
	held.hold()
	_, err = svc.UpdateWorkItem(ctx, engine.WriteOptions{}, iw.Item.Key, v2, tracker.ItemPatch{Title: &title})
	if ref, ok := engine.AsRefusal(err); !ok || ref.Code != engine.CodeStale {
		t.Fatalf("update at a version the item has left: %v, want stale", err)
	}
	held.hold()
	_, err = svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "NOPE", Title: "x"})
	if engine.CodeOf(err) != engine.CodeNotFound {
		t.Fatalf("create into a project nobody filed: %v, want not_found", err)
	}
	held.hold()
	_, err = svc.MoveWorkItem(ctx, engine.WriteOptions{}, "ENG-99", "OPS")
	if engine.CodeOf(err) != engine.CodeNotFound {
		t.Fatalf("move of an item nobody filed: %v, want not_found", err)
	}
	if after := enginetest.LastWrite(t, n, engine.DomainTracker); after != before {
		t.Fatalf("refusals wrote to the log: last write %d -> %d", before, after)
	}
}
