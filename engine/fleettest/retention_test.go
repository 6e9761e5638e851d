//go:build integration

package fleettest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestPositionsRegister: every data node is in the register from its
// start (its first entry is position zero, before any beat), each beat
// publishes its checkpoint's figures, a stopped node stays counted with
// its last position, and the retention answer names every node with its
// lag. Cut off from the log's end, a node's answer weakens to
// consistent_prefix and says why.
func TestPositionsRegister(t *testing.T) {
	c := fleettest.StartCluster(t, fleettest.Options{Configure: func(i int, cfg *node.Config) {
		cfg.HeartbeatInterval = 100 * time.Millisecond
		if i == 2 {
			// The register keeps 64 entries a key: at a second a beat,
			// n3's entry at zero outlives a slow restart on a loaded
			// machine (at 100 ms it was gone after 6.4 s).
			cfg.HeartbeatInterval = time.Second
		}
	}})
	registerEntersAtZero(t, c)
	beatsPublishFigures(t, c)
	stoppedNodeStaysCounted(t, c)
	cutOffAnswerWeakens(t, c)
}

// registerEntersAtZero: n3 restarted enters the register at position zero
// before its first beat.
func registerEntersAtZero(t *testing.T, c *fleettest.Cluster) {
	ctx := context.Background()
	// n3 restarted enters the register at zero before its first beat:
	// the oldest entry its new process wrote is position zero.
	c.Stop(2)
	if err := c.Start(2); err != nil {
		t.Fatal(err)
	}
	started := c.Node(2).Register().StartedAt()
	// The history is read through another member, which may not hold the
	// new process's entries yet: wait for them, then judge the oldest.
	var first fleet.Position
	enginetest.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		hist, err := c.Node(0).Register().KV().History(ctx, fleet.Key("n3", engine.DomainTracker))
		if err != nil {
			return err
		}
		for _, e := range hist {
			var p fleet.Position
			if err := json.Unmarshal(e.Value(), &p); err != nil {
				return err
			}
			if p.StartedAt.Equal(started) {
				first = p
				return nil
			}
		}
		return fmt.Errorf("no entry of n3's new process (started %v) in the register yet", started)
	})
	if first.Seq != 0 || first.AppliedThrough != 0 || !first.BeatAt.IsZero() || first.StartedAt.IsZero() {
		t.Fatalf("n3 entered the register at %+v, want position zero before its first beat", first)
	}
}

// beatsPublishFigures: after six writes, every node's beat publishes its
// checkpoint's figures, and the retention answer names all three at no
// lag.
func beatsPublishFigures(t *testing.T, c *fleettest.Cluster) {
	ctx := context.Background()
	pw, err := c.Node(0).Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering")
	enginetest.Landed(t, c.Node(0), engine.DomainTracker, pw.WriteResult, err)
	for i := 0; i < 5; i++ {
		// A write refused behind published nothing: it is made again.
		w, err := enginetest.Retried(func() (engine.WriteResult, error) {
			iw, err := c.Node(i%3).Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: fmt.Sprint(i)})
			return iw.WriteResult, err
		})
		enginetest.Landed(t, c.Node(i%3), engine.DomainTracker, w, err)
	}
	last, err := c.Node(0).Log(engine.DomainTracker).Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	enginetest.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		a, err := c.Node(1).Retention().Answer(ctx)
		if err != nil {
			return err
		}
		if a.Level != engine.Stale || len(a.Nodes) != 3 {
			return fmt.Errorf("answer %+v", a)
		}
		for _, n := range a.Nodes {
			d := trackerOf(n)
			if d.Domain != engine.DomainTracker || d.Seq < last.LastSeq || d.AppliedThrough < last.LastSeq || d.Lag == nil || d.Lag.Seq != 0 ||
				d.Generation != 1 || d.StreamCreatedAt.IsZero() || d.CheckpointStoredAt.IsZero() {
				return fmt.Errorf("%s: %+v", n.Node, d)
			}
		}
		return nil
	})
}

// stoppedNodeStaysCounted: a stopped node keeps its place, at its last
// position, and lags; it is started again after.
func stoppedNodeStaysCounted(t *testing.T, c *fleettest.Cluster) {
	ctx := context.Background()
	// A stopped node keeps its place, at its last position, and lags.
	c.Stop(2)
	iw, err := c.Node(0).Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "after"})
	enginetest.Landed(t, c.Node(0), engine.DomainTracker, iw.WriteResult, err)
	enginetest.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		a, err := c.Node(0).Retention().Answer(ctx)
		if err != nil {
			return err
		}
		for _, n := range a.Nodes {
			if n.Node == "n3" {
				if d := trackerOf(n); d.Lag == nil || d.Lag.Seq == 0 {
					return fmt.Errorf("stopped n3: %+v", d)
				}
				return nil
			}
		}
		return fmt.Errorf("n3 left the register: %+v", a.Nodes)
	})
	if err := c.Start(2); err != nil {
		t.Fatal(err)
	}
}

// cutOffAnswerWeakens: n3 cut off from the log's end answers at
// consistent_prefix with a note, naming every node with no lag.
func cutOffAnswerWeakens(t *testing.T, c *fleettest.Cluster) {
	ctx := context.Background()
	// Cut off, n3 cannot read the log's end: the answer weakens.
	enginetest.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if k, _ := c.Node(2).Register().Known(); len(k) != 6 { // 3 nodes × 2 domains
			return fmt.Errorf("n3 has read %d positions", len(k))
		}
		return nil
	})
	c.Isolate(2)
	enginetest.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		a, err := c.Node(2).Retention().Answer(ctx)
		if err != nil {
			return err
		}
		if a.Level != engine.ConsistentPrefix || a.Note == "" {
			return fmt.Errorf("isolated n3 answers level %s note %q", a.Level, a.Note)
		}
		if len(a.Nodes) != 3 {
			return fmt.Errorf("isolated n3 names %d nodes", len(a.Nodes))
		}
		for _, n := range a.Nodes {
			if trackerOf(n).Lag != nil {
				return fmt.Errorf("isolated n3 measured a lag for %s", n.Node)
			}
		}
		t.Logf("isolated n3: %s: %s", a.Level, a.Note)
		return nil
	})
	c.HealLinks()
}

// trackerOf is a node's figures for the tracker domain.
func trackerOf(n fleet.NodeFigures) fleet.DomainFigures {
	for _, d := range n.Domains {
		if d.Domain == engine.DomainTracker {
			return d
		}
	}
	return fleet.DomainFigures{}
}
