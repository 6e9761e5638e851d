package audit_test

import (
	"context"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
)

// TestTrailIsAReplicationAnswer: the audit trail is answered at stale
// with each domain's seen_through and lag and complete; on a node whose
// tracker log is not its rows' (a stream deleted and created again) it
// refuses wrong_stream, like any read of those rows, rather than answer a
// trail nothing vouches for.
func TestTrailIsAReplicationAnswer(t *testing.T) {
	ctx := context.Background()
	n := enginetest.OpenNode(t, node.Config{DataDir: t.TempDir()})
	if w, err := n.NodeGates().EvictNode(ctx, engine.WriteOptions{}, "ghost"); err != nil || w.Outcome != engine.Applied {
		t.Fatalf("evict ghost: %+v %v", w, err)
	}
	a, err := n.Audit().List(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if a.Level != engine.Stale || !a.Complete || len(a.SeenThrough) != len(a.Lag) || len(a.Lag) == 0 || len(a.Entries) == 0 {
		t.Fatalf("the trail: %+v", a)
	}
	for _, l := range a.Lag {
		if l == nil {
			t.Fatalf("a domain's lag is missing: %+v", a)
		}
	}
	js := n.Broker().JS
	st, err := js.Stream(ctx, engine.StreamTracker)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, engine.StreamTracker); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, info.Config); err != nil {
		t.Fatal(err)
	}
	n.Replica(engine.DomainTracker).VerifyLog(ctx)
	if _, err := n.Audit().List(ctx, 10); engine.CodeOf(err) != engine.CodeWrongStream {
		t.Fatalf("the trail on a node whose log is not its rows': %v, want wrong_stream", err)
	}
}
