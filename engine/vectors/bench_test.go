package vectors_test

import (
	"context"
	"fmt"
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

// BenchmarkEmbedBuiltin: the builtin model's embeddings a second, over
// the labelled set's texts (title and description, as the duty embeds
// an item).
//
//	go test ./engine/vectors -run '^$' -bench EmbedBuiltin
func BenchmarkEmbedBuiltin(b *testing.B) {
	var texts []string
	for _, p := range loadPairs(b) {
		texts = append(texts, p.a.title+"\n\n"+p.a.description, p.b.title+"\n\n"+p.b.description)
	}
	e := embed.NewBuiltin()
	b.ResetTimer()
	start := time.Now()
	n := 0
	for b.Loop() {
		if _, err := e.Embed(context.Background(), texts); err != nil {
			b.Fatal(err)
		}
		n += len(texts)
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "embeddings/s")
}

// BenchmarkDuplicateRecall: recall@5 of the labelled duplicates, hybrid
// (bm25 fused with the builtin model's vectors) against bm25 alone, in
// one run. Every item of the set is filed on one node and embedded by the
// duty; each item is then asked for its likely duplicates
// (similar_work_items by key, itself left out): a hit is its pair among
// the first five.
//
//	go test ./engine/vectors -run '^$' -bench DuplicateRecall -benchtime 1x
func BenchmarkDuplicateRecall(b *testing.B) {
	pairs := loadPairs(b)
	n := enginetest.OpenNode(b, node.Config{Domains: specs()})
	trk, vs := n.Tracker(), n.Service(vecrec.Domain).(*vectors.Service)
	must(trk.CreateProject(ctx, engine.WriteOptions{}, "DUP", "Duplicates"))
	keys := make([][2]string, len(pairs))
	for i, p := range pairs {
		for j, x := range []issue{p.a, p.b} {
			w := must(trk.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "DUP", Title: x.title, Description: x.description}))
			keys[i][j] = w.Item.Key
		}
	}
	waitEmbeddedB(b, vs, semantic.WorkItem, 2*len(pairs))
	recall := func() float64 {
		found := 0
		for _, k := range keys {
			for j := range 2 {
				res := must(trk.SimilarWorkItems(ctx, engine.ReadOptions{}, tracker.SimilarQuery{Key: k[j], Limit: 5}))
				for _, h := range res.Hits {
					if h.Key == k[1-j] {
						found++
						break
					}
				}
			}
		}
		return float64(found) / float64(2*len(keys))
	}
	// The vectors alone: the items nearest to each item's own text.
	ids := map[string]string{}
	for i, p := range pairs {
		for j, x := range []issue{p.a, p.b} {
			id := must(trk.GetWorkItem(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, keys[i][j])).Item.ID
			ids[x.title] = id
		}
	}
	vectorsAlone := func() float64 {
		found := 0
		for _, p := range pairs {
			for _, xy := range [][2]issue{{p.a, p.b}, {p.b, p.a}} {
				hits := must(vs.Nearest(ctx, xy[0].title+"\n\n"+xy[0].description, []semantic.Kind{semantic.WorkItem}, 6))
				rank := 0
				for _, h := range hits {
					if h.ID == ids[xy[0].title] {
						continue
					}
					if rank++; rank <= 5 && h.ID == ids[xy[1].title] {
						found++
					}
				}
			}
		}
		return float64(found) / float64(2*len(pairs))
	}
	for b.Loop() {
		b.ReportMetric(vectorsAlone(), "recall@5-vectors")
		trk.UseIndex(vs)
		hybrid := recall()
		trk.UseIndex(nil)
		words := recall()
		trk.UseIndex(vs)
		b.ReportMetric(hybrid, "recall@5-hybrid")
		b.ReportMetric(words, "recall@5-bm25")
		b.ReportMetric(float64(len(pairs)), "pairs")
	}
}

func waitEmbeddedB(b *testing.B, vs *vectors.Service, kind semantic.Kind, want int) {
	b.Helper()
	enginetest.CheckFor(b, 5*time.Minute, 50*time.Millisecond, func() error {
		if _, err := vs.Nearest(ctx, "x", []semantic.Kind{kind}, 1); err != nil {
			return err
		}
		if got := vs.Embedded(kind); got < want {
			return fmt.Errorf("%d of %d embedded", got, want)
		}
		return nil
	})
}
