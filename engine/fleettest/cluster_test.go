//go:build integration

package fleettest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
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
	for _, st := range []string{engine.StreamTracker, engine.StreamPages} {
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

// TestMinorityWriteNeverApplied: a node cut from both peers, and not the
// tracker stream's leader, publishes into a broker with no quorum: only a
// stream's leader listens on its subjects, so the broker answers that
// nobody took the append, and the write is refused no_quorum (nothing
// written), as is a linearizable read's barrier; never applied. The
// majority keeps writing; after the heal the cut node converges, and the
// refused write retried under its op id lands once.
func TestMinorityWriteNeverApplied(t *testing.T) {
	c := fleettest.StartCluster(t, fleettest.Options{})
	ctx := context.Background()
	pw, err := c.Node(0).Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering")
	enginetest.Landed(t, c.Node(0), engine.DomainTracker, pw.WriteResult, err)
	iw, err := c.Node(0).Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "t0"})
	if err != nil || iw.Outcome != engine.Applied {
		t.Fatalf("create item: %+v %v", iw, err)
	}
	key := iw.Item.Key
	waitApplied(t, c, 3)

	victim, t0 := isolateFollower(t, c)
	title := "from the minority"
	opID := mintOpID(t)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	mw, err := c.Node(victim).Tracker().UpdateWorkItem(wctx, engine.WriteOptions{OpID: opID}, key, 0, tracker.ItemPatch{Title: &title})
	cancel()
	var ref *engine.Refusal
	if !errors.As(err, &ref) || ref.Code != engine.CodeNoQuorum || ref.RetryAfter != 4 {
		t.Fatalf("minority write answered %+v %v; want refused no_quorum with a 4 s hint", mw, err)
	}
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	_, err = c.Node(victim).Tracker().GetWorkItem(rctx, lin(), key)
	cancel()
	if !errors.As(err, &ref) || ref.Code != engine.CodeNoQuorum {
		t.Fatalf("minority linearizable read: %v; want refused no_quorum", err)
	}

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
	if n := countOp(t, c.Node(0), opID); n != 0 {
		t.Fatalf("the write refused no_quorum is on the log %d times", n)
	}
	// Retried under its id, the refused write lands now, once.
	var again tracker.ItemWrite
	enginetest.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		again, err = c.Node(victim).Tracker().UpdateWorkItem(ctx, engine.WriteOptions{OpID: opID}, key, 0, tracker.ItemPatch{Title: &title})
		if err != nil || again.Outcome != engine.Applied {
			return fmt.Errorf("retry: %+v %v", again, err)
		}
		return nil
	})
	waitConverged(t, c)
	if n := countOp(t, c.Node(0), again.OpID); n != 1 {
		t.Fatalf("op %s is on the log %d times after its retry", again.OpID, n)
	}
}

// isolateFollower cuts off a node that does not lead the tracker stream
// and waits until its broker has noticed it is alone. It returns the node
// and when it was cut.
func isolateFollower(t *testing.T, c *fleettest.Cluster) (int, time.Time) {
	ctx := context.Background()
	st, err := c.Node(0).Broker().JS.Stream(ctx, engine.StreamTracker)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil || info.Cluster == nil {
		t.Fatalf("stream info: %+v %v", info, err)
	}
	victim := 2
	if info.Cluster.Leader == c.Config(victim).Name {
		victim = 1
	}
	t0 := time.Now()
	c.Isolate(victim)
	// Wait until the cut node's broker has noticed it is alone.
	enginetest.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		if n := c.Node(victim).Broker().Server.NumRoutes(); n != 0 {
			return fmt.Errorf("n%d still has %d routes", victim+1, n)
		}
		return nil
	})
	t.Logf("isolated n%d (the leader is %s) after %v", victim+1, info.Cluster.Leader, time.Since(t0))
	return victim, t0
}

// mintOpID is a key minted by the client before its first attempt.
func mintOpID(t *testing.T) string {
	t.Helper()
	u, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return u.String()
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
			if a := nd.Replica(engine.DomainTracker).Applied(); a < info.LastSeq {
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
		// A client-minted key is named <uuid>.<verb>-<object> on the log.
		if r.MsgID == op || strings.HasPrefix(r.MsgID, op+".") {
			k++
		}
	}
	return k
}

var _ = jetstream.ErrStreamNotFound
