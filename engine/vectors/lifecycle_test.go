package vectors_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/embed"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/kb"
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

// TestNodeThatEmbedsNothing: a node whose embedder.provider is none keeps
// no vector side: it never campaigns for the embedding duty (so a fleet's
// embedding is done by a node that can embed), its searches of both
// domains and similar_work_items answer ranked by their words and say
// why, and their coverage names no model.
func TestNodeThatEmbedsNothing(t *testing.T) {
	n := enginetest.OpenNode(t, node.Config{Domains: specs(), Embedder: embed.Config{Provider: embed.ProviderNone}})
	trk, vs := n.Tracker(), n.Service(vecrec.Domain).(*vectors.Service)
	for _, d := range n.Duties().Names() {
		if d == vectors.DutyName {
			t.Fatalf("a node that embeds nothing runs the %s duty (%v)", d, n.Duties().Names())
		}
	}
	if _, err := vs.Reconcile(ctx); !errors.Is(err, embed.ErrNone) {
		t.Fatalf("a pass on a node that embeds nothing: %v", err)
	}
	must(trk.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"))
	key := create(t, trk, "Checkout fails at the payment step", "Stripe answers after 40 seconds.")
	why := "embedder.provider is none"
	res := must(trk.SearchWorkItems(ctx, engine.ReadOptions{}, "checkout payment", "", 5))
	if res.Ranking != tracker.RankingBM25 || !strings.Contains(res.Note, why) || len(res.Hits) != 1 || res.Hits[0].Key != key || res.Hits[0].Similarity != nil {
		t.Fatalf("search on a node that embeds nothing: %+v", res)
	}
	if res.Coverage == nil || res.Coverage.Total != 1 || res.Coverage.Embedded != 0 || res.Coverage.Model != "" {
		t.Fatalf("coverage %+v", res.Coverage)
	}
	sim := must(trk.SimilarWorkItems(ctx, engine.ReadOptions{}, tracker.SimilarQuery{Title: "Payment step of checkout fails"}))
	if sim.Ranking != tracker.RankingBM25 || !strings.Contains(sim.Note, why) || len(sim.Hits) != 1 {
		t.Fatalf("similar_work_items on a node that embeds nothing: %+v", sim)
	}
	pages := n.Pages()
	must(pages.CreateSpace(ctx, engine.WriteOptions{}, "DOCS", "Docs"))
	must(pages.CreatePage(ctx, engine.WriteOptions{}, kb.NewPage{Space: "DOCS", Title: "Deploying a release", Body: "Tag it and roll it out."}))
	kres := must(pages.SearchKnowledge(ctx, engine.ReadOptions{}, kb.SearchQuery{Query: "release"}))
	if kres.Ranking != kb.RankingBM25 || !strings.Contains(kres.Note, why) || len(kres.Hits) != 1 || kres.Coverage.Embedded != 0 {
		t.Fatalf("search_knowledge on a node that embeds nothing: %+v", kres)
	}
	if _, err := vs.Nearest(ctx, "x", []semantic.Kind{semantic.WorkItem}, 1); !errors.Is(err, embed.ErrNone) || vs.Model() != "" {
		t.Fatalf("Nearest %v, model %q", err, vs.Model())
	}
}
