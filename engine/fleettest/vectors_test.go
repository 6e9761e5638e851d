//go:build integration

package fleettest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/embed"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/vectors"
	"github.com/crewlet/crewlet/engine/vectors/vecrec"
)

// vectorRows counts node i's vector rows for the sources and whether each
// is noted forgotten.
func vectorRows(c *fleettest.Cluster, i int, sources ...string) (rows, forgotten int) {
	for _, s := range sources {
		var n, f int
		c.Node(i).DB().QueryRow(`SELECT count(*) FROM vectors WHERE source = ?`, s).Scan(&n)
		c.Node(i).DB().QueryRow(`SELECT count(*) FROM vectors_forgotten WHERE source = ?`, s).Scan(&f)
		rows, forgotten = rows+n, forgotten+f
	}
	return rows, forgotten
}

// TestPurgeForgetsVectorsOnEveryNode: three data nodes run the vectors
// domain; the node holding the embedding duty embeds the items and the
// comment written on node 0 and every node applies the vectors; an item
// purged on node 1 is forgotten on every node (its vector and its
// comment's, each replaced on the stream by a forget), and the other
// item's vector stays.
func TestPurgeForgetsVectorsOnEveryNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := fleettest.StartCluster(t, fleettest.Options{Configure: func(i int, cfg *node.Config) {
		cfg.Domains = append(node.Builtin(), vectors.Spec)
		cfg.HeartbeatInterval = 250 * time.Millisecond
	}})
	trk := c.Node(0).Tracker()
	if _, err := trk.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		t.Fatal(err)
	}
	var items []tracker.WorkItem
	for _, title := range []string{"Checkout times out at the payment step", "Sidebar ignores the dark theme"} {
		w, err := trk.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: title})
		enginetest.Landed(t, c.Node(0), engine.DomainTracker, w.WriteResult, err)
		read, err := trk.GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, fmt.Sprintf("ENG-%d", len(items)+1))
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, read.Item)
	}
	cw, err := trk.CommentOnWorkItem(ctx, engine.WriteOptions{}, items[0].Key, "ana", "Stripe answers after 40 seconds.")
	enginetest.Landed(t, c.Node(0), engine.DomainTracker, cw.WriteResult, err)
	comments, err := trk.ListComments(ctx, engine.ReadOptions{Level: engine.Linearizable}, items[0].Key, "", 10)
	if err != nil || len(comments.Comments) != 1 {
		t.Fatalf("comments %+v %v", comments, err)
	}
	comment := tracker.CommentSource(int64(comments.Comments[0].ID))
	doomed := []string{items[0].ID, comment}
	enginetest.CheckFor(t, 90*time.Second, 50*time.Millisecond, func() error {
		for i := 0; i < c.Size(); i++ {
			if n, _ := vectorRows(c, i, items[0].ID, items[1].ID, comment); n != 3 {
				return fmt.Errorf("node %d holds %d of the 3 vectors", i, n)
			}
		}
		return nil
	})
	if p, err := c.Node(1).Tracker().PurgeWorkItem(ctx, engine.WriteOptions{}, items[0].Key); err != nil || p.Outcome != engine.Applied {
		t.Fatalf("purge on node 1: %+v %v", p, err)
	}
	enginetest.CheckFor(t, 90*time.Second, 50*time.Millisecond, func() error {
		for i := 0; i < c.Size(); i++ {
			if n, f := vectorRows(c, i, doomed...); n != 0 || f != 2 {
				return fmt.Errorf("node %d: %d vectors of the purged item left, %d noted forgotten", i, n, f)
			}
			if n, _ := vectorRows(c, i, items[1].ID); n != 1 {
				return fmt.Errorf("node %d lost the other item's vector", i)
			}
		}
		return nil
	})
	for _, s := range doomed {
		last, err := c.Node(2).Log(vecrec.Domain).LastOnSubject(ctx, vecrec.Subject(s))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := record.Decode(last.Data)
		if err != nil || rec.Kind != vecrec.KindForget {
			t.Fatalf("%s: the stream keeps %v (%v), want its forget alone", s, rec, err)
		}
		t.Logf("%s forgotten at %d by %s", s, last.Seq, rec.Writer)
	}
}

// TestNodesThatEmbedNothing: in a fleet where two data nodes are set
// embedder.provider none and one builtin, the one that can embed holds
// the embedding duty (the others never campaign for it) and embeds the
// items written on a node that embeds nothing; every node applies the
// vectors; the nodes that embed nothing answer their searches ranked by
// words and say why, while the one that embeds ranks hybrid.
func TestNodesThatEmbedNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const embeds = 2
	c := fleettest.StartCluster(t, fleettest.Options{Configure: func(i int, cfg *node.Config) {
		cfg.Domains = append(node.Builtin(), vectors.Spec)
		if i != embeds {
			cfg.Embedder = embed.Config{Provider: embed.ProviderNone}
		}
	}})
	for i := 0; i < c.Size(); i++ {
		if names := c.Node(i).Duties().Names(); slices.Contains(names, vectors.DutyName) != (i == embeds) {
			t.Fatalf("node %d campaigns for %v", i, names)
		}
	}
	trk := c.Node(0).Tracker()
	if _, err := trk.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		t.Fatal(err)
	}
	w, err := trk.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "Checkout times out at the payment step"})
	enginetest.Landed(t, c.Node(0), engine.DomainTracker, w.WriteResult, err)
	read, err := trk.GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, "ENG-1")
	if err != nil {
		t.Fatal(err)
	}
	enginetest.CheckFor(t, 90*time.Second, 50*time.Millisecond, func() error {
		if h := holderOf(c, vectors.DutyName); h != embeds {
			return fmt.Errorf("the embedding duty is held by node %d", h)
		}
		for i := 0; i < c.Size(); i++ {
			if n, _ := vectorRows(c, i, read.Item.ID); n != 1 {
				return fmt.Errorf("node %d holds no vector of the item", i)
			}
		}
		return nil
	})
	for i := 0; i < c.Size(); i++ {
		res, err := c.Node(i).Tracker().SearchWorkItems(ctx, engine.ReadOptions{}, "checkout payment", "", 5)
		if err != nil || len(res.Hits) != 1 {
			t.Fatalf("search on node %d: %+v %v", i, res, err)
		}
		none := strings.Contains(res.Note, "embedder.provider is none")
		if i == embeds && (res.Ranking != tracker.RankingHybrid || none || res.Coverage.Embedded != 1) {
			t.Fatalf("search on the node that embeds: %+v", res)
		}
		if i != embeds && (res.Ranking != tracker.RankingBM25 || !none || res.Coverage.Embedded != 0) {
			t.Fatalf("search on node %d, which embeds nothing: %+v", i, res)
		}
	}
}
