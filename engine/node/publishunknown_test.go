//go:build integration

package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestPublishUnknown: with the broker stopped, nothing can be established
// about a write: unknown, logged statelog_publish_unknown with its op id.
func TestPublishUnknown(t *testing.T) {
	ctx := context.Background()
	rec := enginetest.NewRecorder()
	n := enginetest.OpenNode(t, node.Config{Logger: rec.Logger(), PublishTimeout: 300 * time.Millisecond})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	if _, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "x"}); err != nil {
		t.Fatal(err)
	}
	n.Broker().Server.Shutdown()
	w, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-1", 0, tracker.ItemPatch{Title: ptr("y")})
	if err != nil || w.Outcome != engine.Unknown || w.Position != "" || w.OpID == "" {
		t.Fatalf("%+v %v", w, err)
	}
	lines := rec.Lines(engine.EvPublishUnknown)
	if len(lines) != 1 || lines[0].Attrs[engine.LogOpID] != w.OpID {
		t.Fatalf("publish_unknown lines: %+v", lines)
	}
}
