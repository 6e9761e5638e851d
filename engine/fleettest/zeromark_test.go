//go:build integration

package fleettest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestCreationMarksAtThreeReplicas: on a fleet of three at three
// replicas, where a create's creation-instant question would be a
// request to the stream's leader, creates ride creation marks by default
// (statelog's zeromark.go): after the first create of a node has made
// its mark, the next ask nothing; every copy converges. Then the tracker's
// stream is deleted and created again, and a create on another node,
// riding its own mark, is refused by the stream's new leader, asks, and
// refuses wrong_stream having appended nothing.
func TestCreationMarksAtThreeReplicas(t *testing.T) {
	ctx := context.Background()
	c := fleettest.StartCluster(t, fleettest.Options{Configure: func(i int, cfg *node.Config) {
		cfg.HeartbeatInterval = time.Hour // the write alone finds the recreated stream
	}})
	n1, n2 := c.Node(0), c.Node(1)
	pw, err := n1.Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Eng")
	enginetest.Landed(t, n1, engine.DomainTracker, pw.WriteResult, err)
	for _, n := range []*node.Node{n1, n2} {
		fileItems(t, n, 1)
		settledMarks(t, n)
	}
	before := n1.Replica(engine.DomainTracker).Marks()
	fileItems(t, n1, 4)
	after := n1.Replica(engine.DomainTracker).Marks()
	if after.Rode-before.Rode != 4 || after.Asked != before.Asked || after.Refused != 0 {
		t.Fatalf("n1's marks %+v, then %+v after four creates: want four that rode a mark and none that asked", before, after)
	}
	if err := c.Settle(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < c.Size(); i++ {
		items, err := c.Node(i).Tracker().ListWorkItems(ctx, engine.ReadOptions{Level: engine.Linearizable}, tracker.ListFilter{Project: "ENG"})
		if err != nil || len(items.Items) != 6 {
			t.Fatalf("n%d lists %d items of ENG (%v), want 6", i+1, len(items.Items), err)
		}
	}

	s, err := n1.Broker().JS.Stream(ctx, engine.StreamTracker)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := n1.Broker().JS.DeleteStream(ctx, engine.StreamTracker); err != nil {
		t.Fatal(err)
	}
	enginetest.CheckFor(t, time.Minute, 100*time.Millisecond, func() error {
		_, err := n1.Broker().JS.CreateStream(ctx, info.Config)
		return err
	})
	_, err = n2.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "onto another stream"})
	if ref, ok := engine.AsRefusal(err); !ok || ref.Code != engine.CodeWrongStream {
		t.Fatalf("a create riding its mark on a recreated stream: %v, want wrong_stream", err)
	}
	if mc := n2.Replica(engine.DomainTracker).Marks(); mc.Refused != 1 {
		t.Fatalf("n2's marks %+v: want its create's mark refused once", mc)
	}
	end, err := n2.Log(engine.DomainTracker).Info(ctx)
	if err != nil || end.LastSeq != 0 {
		t.Fatalf("the recreated stream holds %d records (%v): the refused create appended", end.LastSeq, err)
	}
}

// settledMarks waits until n's tracker has made a mark and none is under
// way.
func settledMarks(t *testing.T, n *node.Node) {
	t.Helper()
	enginetest.CheckFor(t, time.Minute, 10*time.Millisecond, func() error {
		if mc := n.Replica(engine.DomainTracker).Marks(); mc.Made == 0 || mc.Marking > 0 {
			return fmt.Errorf("marks %+v: want one made and none under way", mc)
		}
		return nil
	})
}
