package vectors_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/embed"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/semantic"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/vectors"
	"github.com/crewlet/crewlet/engine/vectors/vecrec"
)

// TestRefreshBeforeAgingOut: a vector whose message is older than
// RefreshAfter is published again, unchanged (same text hash, a new
// sequence), so the stream still holds it when its first message ages
// out after 90 days.
func TestRefreshBeforeAgingOut(t *testing.T) {
	clock := enginetest.NewClock(time.Now())
	n := enginetest.OpenNode(t, node.Config{Domains: specs(), Clock: clock})
	trk, vs := n.Tracker(), n.Service(vecrec.Domain).(*vectors.Service)
	must(trk.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"))
	key := create(t, trk, "Reports export slowly", "")
	waitEmbedded(t, vs, semantic.WorkItem, 1)
	id := must(trk.GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, key)).Item.ID
	hash, seq, _ := row(t, n, id)
	clock.Advance(vectors.RefreshAfter + time.Hour)
	enginetest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		h, s, ok := row(t, n, id)
		if !ok || s == seq {
			return fmt.Errorf("not published again yet")
		}
		if h != hash {
			return fmt.Errorf("the refresh changed the text hash: %s, was %s", h, hash)
		}
		return nil
	})
}

// TestEmbedderDown: with the HTTP provider unreachable the searches still
// answer, ranked by their words, and say why (ranking bm25, the note);
// the duty's passes fail and embed nothing.
func TestEmbedderDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	n := enginetest.OpenNode(t, node.Config{Domains: specs(), Embedder: embed.Config{Provider: embed.ProviderOpenAI,
		URL: "http://" + addr, Model: "m", Dimensions: 8, Timeout: time.Second}})
	trk, vs := n.Tracker(), n.Service(vecrec.Domain).(*vectors.Service)
	must(trk.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"))
	key := create(t, trk, "Checkout fails at the payment step", "")
	res := must(trk.SearchWorkItems(ctx, engine.ReadOptions{}, "checkout payment", "", 5))
	if res.Ranking != tracker.RankingBM25 || !strings.Contains(res.Note, "Vector ranking was unavailable") || len(res.Hits) != 1 || res.Hits[0].Key != key {
		t.Fatalf("search with the embedder down: %+v", res)
	}
	if res.Coverage == nil || res.Coverage.Total != 1 || res.Coverage.Embedded != 0 || res.Coverage.Model != "openai:m@8" {
		t.Fatalf("coverage %+v", res.Coverage)
	}
	if _, err := vs.Reconcile(ctx); err == nil || vs.Embedded(semantic.WorkItem) != 0 {
		t.Fatalf("a pass with the provider down: %v, %d embedded", err, vs.Embedded(semantic.WorkItem))
	}
}
