package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/statelog"
)

// TestUnreadFloorVouchedOnlyByAFreshPosition: the trim floors' bucket is
// gone, so the heartbeat cannot read the floor. While the positions
// register still takes this node's position, the floor is vouched for (it
// is never past a live node's published position) and reads go on; once
// the register cannot take it either (the node may be cut off, or evicted
// unknowing) and PublishedFresh has passed, reads refuse floor_unknown
// rather than guess.
func TestUnreadFloorVouchedOnlyByAFreshPosition(t *testing.T) {
	ctx := context.Background()
	clock := enginetest.NewClock(time.Now())
	n := enginetest.OpenNode(t, node.Config{DataDir: t.TempDir(), Clock: clock, HeartbeatInterval: 20 * time.Millisecond})
	mustProject(t, n.Tracker(), "ENG")
	js := n.Broker().JS
	if err := js.DeleteStream(ctx, fleet.FloorBucket); err != nil {
		t.Fatal(err)
	}
	enginetest.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		a, err := n.Retention().Answer(ctx)
		if err != nil {
			return err
		}
		for _, l := range a.Logs {
			if l.Domain == engine.DomainTracker && l.FloorUnread != "" {
				return nil
			}
		}
		return fmt.Errorf("the floor still reads")
	})
	if _, err := n.Tracker().ListProjects(ctx, engine.ReadOptions{Level: engine.Stale}); err != nil {
		t.Fatalf("a read while the register takes this node's position: %v", err)
	}
	if err := js.DeleteStream(ctx, "KV_"+fleet.Bucket); err != nil {
		t.Fatal(err)
	}
	enginetest.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		// A beat's put in flight as the bucket went may still land and
		// be taken as fresh: move past it on every look.
		clock.Advance(statelog.PublishedFresh + time.Second)
		_, err := n.Tracker().ListProjects(ctx, engine.ReadOptions{Level: engine.Stale})
		if engine.CodeOf(err) != engine.CodeFloorUnknown {
			return fmt.Errorf("a read with the floor unread and no fresh position: %v, want floor_unknown", err)
		}
		return nil
	})
}
