package fleettest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

func lin() engine.ReadOptions { return engine.ReadOptions{Level: engine.Linearizable} }

// TestClusterR3: three nodes boot at once; each stream is created R3 by
// one of them and read as it is by the others; a write on one node is
// read linearizably on every other.
func TestClusterR3(t *testing.T) {
	rec := enginetest.NewRecorder()
	c := fleettest.StartCluster(t, fleettest.Options{Configure: func(i int, cfg *node.Config) { cfg.Logger = rec.Logger() }})
	ctx := context.Background()
	for _, st := range []string{engine.StreamOf(engine.DomainTracker), engine.StreamOf(engine.DomainPages)} {
		s, err := c.Node(1).Broker().JS.Stream(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		if r := s.CachedInfo().Config.Replicas; r != 3 {
			t.Fatalf("%s has %d replicas, want 3", st, r)
		}
		// Nodes racing to create it send the same config, which JetStream
		// takes as one create: every node must see the one stream.
		for i := 0; i < 3; i++ {
			si, err := c.Node(i).Broker().JS.Stream(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			if !si.CachedInfo().Created.Equal(s.CachedInfo().Created) {
				t.Fatalf("n%d sees %s created at %v, n2 at %v", i+1, st, si.CachedInfo().Created, s.CachedInfo().Created)
			}
		}
		if len(rec.Lines("jetstream_stream_created")) == 0 {
			t.Fatal("no node logged jetstream_stream_created")
		}
	}
	pw, err := c.Node(0).Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering")
	if err != nil || pw.Outcome != engine.Applied {
		t.Fatalf("create project on n1: %+v %v", pw, err)
	}
	iw, err := c.Node(0).Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "first"})
	if err != nil || iw.Outcome != engine.Applied {
		t.Fatalf("create item: %+v %v", iw, err)
	}
	for i := 1; i < 3; i++ {
		got, err := c.Node(i).Tracker().GetWorkItem(ctx, lin(), iw.Item.Key)
		if err != nil || got.Item.Title != "first" {
			t.Fatalf("n%d reads %+v %v", i+1, got, err)
		}
	}
}

// TestMinorityWriteNeverApplied: a node cut from both peers publishes into
// a broker with no quorum. The write ends unknown or is refused
// (no_quorum, broker_unreachable), never applied; the majority keeps
// writing; after the heal the cut node converges, and an unknown write is
// resolved by retrying it under the same op id.
func TestMinorityWriteNeverApplied(t *testing.T) {
	c := fleettest.StartCluster(t, fleettest.Options{})
	ctx := context.Background()
	if pw, err := c.Node(0).Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil || pw.Outcome != engine.Applied {
		t.Fatalf("create project: %+v %v", pw, err)
	}
	iw, err := c.Node(0).Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "t0"})
	if err != nil || iw.Outcome != engine.Applied {
		t.Fatalf("create item: %+v %v", iw, err)
	}
	key := iw.Item.Key
	waitApplied(t, c, 3)

	t0 := time.Now()
	c.Isolate(2)
	// Wait until the cut node's broker has noticed it is alone.
	enginetest.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		if n := c.Node(2).Broker().Server.NumRoutes(); n != 0 {
			return fmt.Errorf("n3 still has %d routes", n)
		}
		return nil
	})
	t.Logf("isolated after %v", time.Since(t0))
	title := "from the minority"
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	mw, err := c.Node(2).Tracker().UpdateWorkItem(wctx, engine.WriteOptions{}, key, 0, tracker.ItemPatch{Title: &title})
	cancel()
	var ref *engine.Refusal
	switch {
	case err == nil && mw.Outcome == engine.Unknown:
	case errors.As(err, &ref) && (ref.Code == engine.CodeNoQuorum || ref.Code == engine.CodeBrokerUnreachable):
	default:
		t.Fatalf("minority write answered %+v %v; want unknown or no_quorum/broker_unreachable", mw, err)
	}
	t.Logf("minority write: outcome=%q err=%v", mw.Outcome, err)

	// The majority goes on.
	maj := "from the majority"
	enginetest.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		w, err := c.Node(0).Tracker().UpdateWorkItem(ctx, engine.WriteOptions{}, key, 0, tracker.ItemPatch{Title: &maj})
		if err != nil || w.Outcome != engine.Applied {
			return fmt.Errorf("majority write: %+v %v", w, err)
		}
		return nil
	})

	t.Logf("majority wrote after %v", time.Since(t0))
	c.HealLinks()
	waitConverged(t, c)
	t.Logf("converged after %v", time.Since(t0))
	// The minority's op, retried under its id, answers from the log: it
	// either landed (applied) or never did and lands now; either way once.
	if mw.OpID != "" {
		var again tracker.ItemWrite
		enginetest.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
			again, err = c.Node(2).Tracker().UpdateWorkItem(ctx, engine.WriteOptions{OpID: mw.OpID}, key, 0, tracker.ItemPatch{Title: &title})
			if err != nil || again.Outcome != engine.Applied {
				return fmt.Errorf("retry: %+v %v", again, err)
			}
			return nil
		})
		waitConverged(t, c)
		if n := countOp(t, c.Node(0), mw.OpID); n != 1 {
			t.Fatalf("op %s is on the log %d times after its retry", mw.OpID, n)
		}
	}
}

func waitApplied(t *testing.T, c *fleettest.Cluster, n int) {
	t.Helper()
	enginetest.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		for i := 0; i < n; i++ {
			nd := c.Node(i)
			info, err := nd.Log(engine.DomainTracker).Info(context.Background())
			if err != nil {
				return err
			}
			if a := nd.Tracker().Replica().Applied(); a < info.LastSeq {
				return fmt.Errorf("n%d applied %d < %d", i+1, a, info.LastSeq)
			}
		}
		return nil
	})
}

// waitConverged waits until every node applied the whole log and every
// table hashes the same on every node.
func waitConverged(t *testing.T, c *fleettest.Cluster) {
	t.Helper()
	enginetest.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		return fleettest.Converged(context.Background(), c)
	})
}

func countOp(t *testing.T, n *node.Node, op string) int {
	t.Helper()
	recs, err := fleettest.ReadLog(context.Background(), n.Log(engine.DomainTracker))
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	for _, r := range recs {
		if r.MsgID == op {
			k++
		}
	}
	return k
}

var _ = jetstream.ErrStreamNotFound
