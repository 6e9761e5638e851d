//go:build integration

package fleettest_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

var (
	failoverKills   = flag.Int("failover.kills", 0, "TestFailoverFigures: kills per case (0 skips it)")
	failoverArrange = flag.Bool("failover.arrange", false, "TestFailoverFigures: move leaders to make a case no node is in")
)

// failoverFleet starts three nodes, files one item per node and starts
// the steady load on them.
func failoverFleet(t *testing.T) (*fleettest.Cluster, *fleettest.Load) {
	c := fleettest.StartCluster(t, fleettest.Options{Configure: func(i int, cfg *node.Config) {
		cfg.HeartbeatInterval = time.Second
	}})
	ctx := context.Background()
	pw, err := c.Node(0).Tracker().CreateProject(ctx, engine.WriteOptions{}, "FO", "Failover")
	enginetest.Landed(t, c.Node(0), engine.DomainTracker, pw.WriteResult, err)
	var keys []string
	for i := 0; i < c.Size(); i++ {
		iw, err := c.Node(0).Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "FO", Title: "start"})
		if err != nil || iw.Outcome != engine.Applied {
			t.Fatalf("create item: %+v %v", iw, err)
		}
		keys = append(keys, iw.Item.Key)
	}
	l := fleettest.StartLoad(c, keys)
	t.Cleanup(l.Stop)
	return c, l
}

// ownReaders waits until every node's consumer is led by the node's own
// server: the arrangement each node claims for its reader.
func ownReaders(t *testing.T, c *fleettest.Cluster) fleettest.Roles {
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := fleettest.ReadRoles(ctx, c)
		cancel()
		own := err == nil
		for j := 0; own && j < c.Size(); j++ {
			own = r.Readers[j] == j
		}
		if own {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumers not led by their own nodes a minute on: %s %v", r, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestFailoverSurvivorsKeepApplying: under writes and linearizable reads
// on every node, each node's consumer is led by the node itself, so the
// loss of a node that does not lead the stream costs the survivors no
// pending write and no refused read; the loss of the stream's leader
// answers every write applied, pending or a refusal that wrote nothing
// (no_quorum, floor_unknown, ...) — never unknown.
func TestFailoverSurvivorsKeepApplying(t *testing.T) {
	if testing.Short() {
		t.Skip("kills two nodes of a fleet under load")
	}
	c, l := failoverFleet(t)
	r := ownReaders(t, c)
	v := (r.Stream + 1) % c.Size()
	rec, err := fleettest.KillAndMeasure(c, l, v, 2*time.Minute)
	rec.Case, rec.Roles = fleettest.CaseLeadsNothing, r
	t.Logf("%s", rec)
	if err != nil {
		t.Fatal(err)
	}
	for k, n := range rec.Counts {
		if k != string(engine.Applied) && k != "ok" {
			t.Errorf("the loss of n%d, which leads no other node's reader and not the stream, cost the survivors %d× %s", v+1, n, k)
		}
	}
	if err := fleettest.Rejoin(c, v); err != nil {
		t.Fatal(err)
	}
	r = ownReaders(t, c)
	rec, err = fleettest.KillAndMeasure(c, l, r.Stream, 2*time.Minute)
	rec.Case, rec.Roles = fleettest.CaseStreamLeader, r
	t.Logf("%s", rec)
	if err != nil {
		t.Fatal(err)
	}
	// The killed node may lead the coordination buckets too (the
	// positions register, the trim floors), and on a loaded machine their
	// elections and the reads around them can outlast
	// statelog.PublishedFresh (a run saw the floors unread on a survivor
	// from before the kill until 2 s after the floors' new leader). Then a
	// survivor's answers are floor_unknown, as the seeds have an
	// unreadable floor block: a refusal that wrote nothing, not an unknown
	// outcome.
	for k, n := range rec.Counts {
		switch k {
		case string(engine.Applied), string(engine.Pending), string(engine.CodeNoQuorum), "ok", string(engine.CodeBehind), string(engine.CodeBrokerUnreachable),
			string(engine.CodeFloorUnknown):
		default:
			t.Errorf("the stream leader's loss answered %d× %s on the survivors", n, k)
		}
	}
}

// TestFailoverFigures is the measurement (skipped unless
// -failover.kills N): N kills of each kind of node under the load, each
// followed by the node's restart, reporting per case p50 and max of the
// time until every survivor's writes answer applied and its linearizable
// reads answer, and the answers meanwhile.
//
//	go test ./engine/fleettest -run TestFailoverFigures -failover.kills 10 -v -timeout 60m
func TestFailoverFigures(t *testing.T) {
	if *failoverKills == 0 {
		t.Skip("the measurement; run with -failover.kills N")
	}
	c, l := failoverFleet(t)
	byCase := map[string][]fleettest.Recovery{}
	absent := map[string]int{}
	cases := []string{fleettest.CaseStreamLeader, fleettest.CaseReaderLeader, fleettest.CaseLeadsNothing}
	for k := 0; k < *failoverKills; k++ {
		for _, kase := range cases {
			time.Sleep(2 * time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			v, roles, err := fleettest.PickVictim(ctx, c, kase, *failoverArrange)
			cancel()
			if errors.Is(err, fleettest.ErrCaseAbsent) {
				absent[kase]++
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			rec, err := fleettest.KillAndMeasure(c, l, v, 2*time.Minute)
			rec.Case, rec.Roles = kase, roles
			t.Logf("%s", rec)
			if err != nil {
				t.Fatal(err)
			}
			byCase[kase] = append(byCase[kase], rec)
			if err := fleettest.Rejoin(c, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, kase := range cases {
		t.Logf("%s", fleettest.Figures(kase, byCase[kase], absent[kase]))
	}
}

// TestReaderLeadComesBack: a node's consumer that is a group on the
// stream's replicas (GroupReaders, as on an external broker or where a
// placement missed) and whose lead another node's broker took (moved
// there by a stepdown, as a partition would) is led by the node's own
// broker again, and the retention answer names who leads each node's
// reader and since when.
func TestReaderLeadComesBack(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-node fleet")
	}
	rec := enginetest.NewRecorder()
	c := fleettest.StartCluster(t, fleettest.Options{Configure: func(i int, cfg *node.Config) {
		cfg.GroupReaders = true
		if i == 1 {
			cfg.Logger = rec.Logger()
		}
	}})
	ownReaders(t, c)
	claimed := func() int {
		n := 0
		for _, l := range rec.Lines(engine.EvReaderLeadClaimed) {
			if l.Attrs["from"] == "n1" && l.Attrs["to"] == "n2" && l.Attrs[engine.LogDomain] == string(engine.DomainTracker) {
				n++
			}
		}
		return n
	}
	before := claimed()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Node(0).Log(engine.DomainTracker).MoveReaderLead(ctx, "n2", "n1"); err != nil {
		t.Fatal(err)
	}
	// n2 finds its reader led by n1's broker and claims it back.
	enginetest.CheckFor(t, time.Minute, 100*time.Millisecond, func() error {
		if claimed() == before {
			return fmt.Errorf("n2 has not claimed its tracker reader back from n1")
		}
		return nil
	})
	ownReaders(t, c)
	// The retention answer names each reader's leader. On a loaded
	// machine a consumer group may elect again at any moment; the claim
	// loop takes it back within its 2 s, so the answer is asked until it
	// shows every reader led by its own node.
	enginetest.CheckFor(t, time.Minute, 100*time.Millisecond, func() error {
		a, err := c.Node(2).Retention().Answer(context.Background())
		if err != nil {
			return err
		}
		for _, n := range a.Nodes {
			for _, d := range n.Domains {
				if d.Reader == nil || d.Reader.Leader != n.Node || d.Reader.Since == nil {
					return fmt.Errorf("retention: %s's %s reader %+v, want led by %s since an instant", n.Node, d.Domain, d.Reader, n.Node)
				}
			}
		}
		return nil
	})
}
