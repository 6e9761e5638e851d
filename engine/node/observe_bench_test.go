package node_test

import (
	"context"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

// BenchmarkScrape: one full gather of a node's metrics, what a GET
// /metrics costs before encoding: each domain's log end and fill asked of
// the broker, the ledger counted, the alarms read. Compare with
// BenchmarkBareBarrierLoop in the same run:
//
//	go test -run '^$' -bench 'Scrape|BareBarrierLoop' -benchtime 500x ./engine/node/
func BenchmarkScrape(b *testing.B) {
	n := enginetest.OpenNode(b, node.Config{})
	ctx := context.Background()
	if _, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		b.Fatal(err)
	}
	if _, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "bench"}); err != nil {
		b.Fatal(err)
	}
	g := n.Metrics().Gatherer()
	enginetest.Timed(b, func(int) {
		if _, err := g.Gather(); err != nil {
			b.Fatal(err)
		}
	})
}
