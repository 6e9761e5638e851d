//go:build integration

package fleettest_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestTrimWaitsForEveryNode: on a three-node fleet one node is stopped
// and the others write past where it stands. The trim holds at zero
// while no backup has reached anything (term backup), then, once one has,
// trims exactly through the stopped node's position (term node, holder
// n3): the broker really purges below it, the floor is published and the
// retention answer names it. The stopped node comes back at the floor,
// not below it, replays the rest and converges. With two of three nodes
// down the survivor cannot read the floor, and its reads refuse
// floor_unknown until a peer is back.
func TestTrimWaitsForEveryNode(t *testing.T) {
	ctx := context.Background()
	c := fleettest.StartCluster(t, fleettest.Options{Configure: func(i int, cfg *node.Config) {
		cfg.HeartbeatInterval = 100 * time.Millisecond
		cfg.Trim = node.TrimConfig{MinAge: time.Nanosecond, Interval: time.Hour}
	}})
	n1 := c.Node(0)
	pw, err := n1.Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Eng")
	enginetest.Landed(t, n1, engine.DomainTracker, pw.WriteResult, err)
	fileItems(t, n1, 3)
	end := logEnd(t, n1)
	for i := 0; i < 3; i++ {
		waitPublished(t, n1, fmt.Sprintf("n%d", i+1), end)
	}
	held := registered(t, n1, "n3")
	c.Stop(2)
	fileItems(t, n1, 5)

	// No backup reached anything: the gate holds the floor at zero.
	f := trimOnce(t, c)
	if f.Through != 0 || f.Term != fleet.TermBackup {
		t.Fatalf("floor with no backup: %+v", f)
	}
	if first := firstSeq(t, n1); first > 1 {
		t.Fatalf("the log starts at %d with no backup taken", first)
	}

	// A backup lands (a real snapshot in the broker's object store, the
	// fleet's repository) past where n3 stands: the stopped node holds the
	// floor once the running ones have published where they stand.
	m, err := n1.Backup(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	backedUp := m.Domains[string(engine.DomainTracker)].Seq
	end = logEnd(t, n1)
	waitPublished(t, n1, "n1", end)
	waitPublished(t, n1, "n2", end)
	f = trimOnce(t, c)
	if f.Through != held || f.Term != fleet.TermNode || f.Holder != "n3" {
		t.Fatalf("floor %+v, want through %d held by node n3", f, held)
	}
	if first := firstSeq(t, n1); first != held+1 {
		t.Fatalf("the log starts at %d, want %d: the purge did not run", first, held+1)
	}
	a, err := c.Node(1).Retention().Answer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l := trackerLog(a); l.Floor == nil || l.Floor.Through != held || l.Floor.Holder != "n3" || l.FirstSeq != held+1 {
		t.Fatalf("retention answer's tracker log: %+v", l)
	}

	// n3 comes back at the floor: it replays what the log still holds.
	if err := c.Start(2); err != nil {
		t.Fatal(err)
	}
	if c.Node(2).Replica(engine.DomainTracker).BelowFloor() {
		t.Fatal("n3, standing at the floor, was judged below it")
	}
	enginetest.CheckFor(t, time.Minute, 50*time.Millisecond, func() error { return fleettest.Converged(ctx, c) })

	// Everyone is past the backup now: the gate holds the floor there.
	fileItems(t, n1, 2)
	end = logEnd(t, n1)
	for i := 0; i < 3; i++ {
		waitPublished(t, n1, fmt.Sprintf("n%d", i+1), end)
	}
	f = trimOnce(t, c)
	if f.Through != backedUp || f.Term != fleet.TermBackup || !strings.Contains(f.Holder, m.Name) {
		t.Fatalf("floor %+v, want through %d held by the backup %s", f, backedUp, m.Name)
	}

	floorUnknownWithoutQuorum(t, c)
}

// floorUnknownWithoutQuorum: n2 and n3 stop; n1's heartbeat cannot read
// the floor (its bucket has no quorum) and its reads refuse
// floor_unknown, never a guessed floor; n2 back, they answer again.
func floorUnknownWithoutQuorum(t *testing.T, c *fleettest.Cluster) {
	ctx := context.Background()
	c.Stop(1)
	c.Stop(2)
	n1 := c.Node(0)
	stale := engine.ReadOptions{Level: engine.Stale}
	enginetest.CheckFor(t, 2*time.Minute, 100*time.Millisecond, func() error {
		_, err := n1.Replica(engine.DomainTracker).Read(ctx, stale, func(context.Context, *sql.Tx) error { return nil })
		if ref, ok := engine.AsRefusal(err); ok && ref.Code == engine.CodeFloorUnknown {
			return nil
		}
		return fmt.Errorf("a stale read on n1 alone answers %v", err)
	})
	if err := c.Start(1); err != nil {
		t.Fatal(err)
	}
	enginetest.CheckFor(t, 2*time.Minute, 100*time.Millisecond, func() error {
		_, err := n1.Replica(engine.DomainTracker).Read(ctx, stale, func(context.Context, *sql.Tx) error { return nil })
		return err
	})
}

func fileItems(t *testing.T, n *node.Node, count int) {
	t.Helper()
	for i := 0; i < count; i++ {
		w, err := n.Tracker().CreateWorkItem(context.Background(), engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: fmt.Sprintf("item %d", i)})
		enginetest.Landed(t, n, engine.DomainTracker, w.WriteResult, err)
	}
}

func logEnd(t *testing.T, n *node.Node) uint64 {
	t.Helper()
	info, err := n.Log(engine.DomainTracker).Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.LastSeq
}

func firstSeq(t *testing.T, n *node.Node) uint64 {
	t.Helper()
	info, err := n.Log(engine.DomainTracker).Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.FirstSeq
}

// waitPublished waits for node name's tracker position in the register
// to reach seq.
func waitPublished(t *testing.T, n *node.Node, name string, seq uint64) {
	t.Helper()
	enginetest.CheckFor(t, time.Minute, 50*time.Millisecond, func() error {
		if got := registered(t, n, name); got < seq {
			return fmt.Errorf("%s published %d, want %d", name, got, seq)
		}
		return nil
	})
}

func registered(t *testing.T, n *node.Node, name string) uint64 {
	t.Helper()
	all, err := fleet.ReadAll(context.Background(), n.Register().KV())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		if p.Node == name && p.Domain == engine.DomainTracker {
			return p.Seq
		}
	}
	return 0
}

// trimOnce runs the trim on every running node (the one that trims each
// log does) and returns the tracker log's published floor.
func trimOnce(t *testing.T, c *fleettest.Cluster) fleet.Floor {
	t.Helper()
	ctx := context.Background()
	var out []fleet.Floor
	for i := 0; i < c.Size(); i++ {
		if n := c.Node(i); n != nil {
			fs, err := n.Trim().Once(ctx)
			if err != nil {
				t.Fatalf("trim on n%d: %v", i+1, err)
			}
			for _, f := range fs {
				if f.Domain == engine.DomainTracker {
					out = append(out, f)
				}
			}
		}
	}
	if len(out) != 1 {
		t.Fatalf("the tracker log was trimmed by %d nodes: %+v", len(out), out)
	}
	return out[0]
}

func trackerLog(a fleet.Answer) fleet.LogFigures {
	for _, l := range a.Logs {
		if l.Domain == engine.DomainTracker {
			return l
		}
	}
	return fleet.LogFigures{}
}
