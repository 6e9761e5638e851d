package vectors_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/semantic"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
	"github.com/crewlet/crewlet/engine/vectors"
	"github.com/crewlet/crewlet/engine/vectors/vecrec"
	"github.com/crewlet/crewlet/ledger"
)

// publishItems puts n create records on the tracker log, each item's
// title and description a labelled issue's words shuffled with a number,
// so the corpus reads like a tracker's rather than n copies of one text.
func publishItems(tb testing.TB, js jetstream.JetStream, pairs []pair, n int) {
	r := rand.New(rand.NewPCG(7, 11))
	for j := 1; j <= n; j++ {
		p := pairs[r.IntN(len(pairs))]
		x := p.a
		if j%2 == 0 {
			x = p.b
		}
		words := strings.Fields(x.title)
		r.Shuffle(len(words), func(a, b int) { words[a], words[b] = words[b], words[a] })
		op, _ := ledger.MintFor(time.Now(), "create_work_item", "ENG", "")
		payload, _ := json.Marshal(trackrec.CreateWorkItem{ID: fmt.Sprintf("wi_%d", j), Project: "ENG", Number: int64(j),
			Title: fmt.Sprintf("%s %d", strings.Join(words, " "), j), Description: x.description, Status: "open"})
		data, _ := record.Encode(&record.Record{Kind: trackrec.KindCreateWorkItem, Version: 1, OpID: op.String(), Writer: "n1", Generation: 1,
			Subject: "crewlet.tracker.project.ENG", Payload: payload})
		if _, err := js.PublishAsync("crewlet.tracker.project.ENG", data, jetstream.WithMsgID(op.String())); err != nil {
			tb.Fatal(err)
		}
		if j%256 == 0 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
}

// BenchmarkHybridSearch: search_work_items' p50 ranked by hybrid
// retrieval (bm25 fused with the vectors) beside bm25 alone, over the
// same 10 000 embedded items, in one run.
//
//	go test ./engine/vectors -run '^$' -bench HybridSearch -benchtime 1x
func BenchmarkHybridSearch(b *testing.B) {
	const items = 10_000
	pairs := loadPairs(b)
	n := enginetest.OpenNode(b, node.Config{Domains: specs()})
	trk, vs := n.Tracker(), n.Service(vecrec.Domain).(*vectors.Service)
	must(trk.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"))
	publishItems(b, n.Broker().JS, pairs, items)
	waitEmbeddedB(b, vs, semantic.WorkItem, items)
	var queries []string
	for i, p := range pairs {
		if i%5 == 0 {
			w := strings.Fields(p.b.title)
			queries = append(queries, strings.Join(w[:min(3, len(w))], " "))
		}
	}
	run := func() time.Duration {
		var ds []time.Duration
		for range 3 {
			for _, q := range queries {
				start := time.Now()
				must(trk.SearchWorkItems(ctx, engine.ReadOptions{}, q, "", 20))
				ds = append(ds, time.Since(start))
			}
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	for b.Loop() {
		trk.UseIndex(vs)
		hybrid := run()
		trk.UseIndex(nil)
		words := run()
		trk.UseIndex(vs)
		b.ReportMetric(float64(hybrid.Microseconds())/1000, "hybrid-p50-ms")
		b.ReportMetric(float64(words.Microseconds())/1000, "bm25-p50-ms")
		b.ReportMetric(float64(hybrid)/float64(words), "hybrid/bm25")
		b.ReportMetric(items, "items")
	}
}
