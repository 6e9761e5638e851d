//go:build integration

package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/statelog"
)

// TestReplayReportsProgress: a node rebuilding its database from the log
// (started on an empty database) logs its progress while it catches up
// with the log's end as it stood at the boot — seq, target, records left,
// the rate and an estimate — and a last line when it has reached it.
func TestReplayReportsProgress(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir})
	if _, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		t.Fatal(err)
	}
	enginetest.PublishCreates(t, n.Broker().JS, 1, 2000)
	s, err := n.Broker().JS.Stream(ctx, "CREWLET_TRACKER_LOG")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	end := info.State.LastSeq
	if err := n.Replica(engine.DomainTracker).WaitApplied(ctx, end); err != nil {
		t.Fatal(err)
	}
	n.Close()
	dropDatabase(t, dir)

	rec := enginetest.NewRecorder()
	n = enginetest.OpenNode(t, node.Config{DataDir: dir, Logger: rec.Logger(), ProgressEvery: 1})
	if err := n.Replica(engine.DomainTracker).WaitApplied(ctx, end); err != nil {
		t.Fatal(err)
	}
	// The last line follows the commit that reached the end, within the
	// write wait a commit's waiters are given.
	enginetest.CheckFor(t, node.DefaultWriteWait, 10*time.Millisecond, func() error {
		for _, l := range rec.Lines(statelog.EvReplayDone) {
			if l.Attrs["domain"] == string(engine.DomainTracker) && fmt.Sprint(l.Attrs["through"]) == fmt.Sprint(end) {
				return nil
			}
		}
		return fmt.Errorf("no statelog_replay_done through %d: %v", end, rec.Lines(statelog.EvReplayDone))
	})
	var tracker []enginetest.Line
	for _, l := range rec.Lines(statelog.EvReplayProgress) {
		if l.Attrs["domain"] == string(engine.DomainTracker) {
			tracker = append(tracker, l)
		}
	}
	if len(tracker) == 0 {
		t.Fatal("a rebuild of 2 000 records logged no statelog_replay_progress line")
	}
	a := tracker[0].Attrs
	for _, k := range []string{"seq", "target", "records_left", "percent", "records_per_second", "component", "stream"} {
		if _, ok := a[k]; !ok {
			t.Errorf("statelog_replay_progress lacks %s: %v", k, a)
		}
	}
}
