package node_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

// BenchmarkAppliedWriteOverFloor: an applied create and an applied
// update, one writer through the service (no HTTP, no MCP), beside the
// floor they are held to, measured in alternation in the same run: the
// bare barrier loop plus the exactly-once headers — an append carrying a
// Nats-Msg-Id and the expected last sequence on its subject, the pull
// consumer's checkpoint commit, the wait for it. Reports each p50 and its
// ratio to the floor's (issue 38's goal: at most 1.5).
//
//	go test -run '^$' -bench AppliedWriteOverFloor -benchtime 2000x ./engine/node/
func BenchmarkAppliedWriteOverFloor(b *testing.B) {
	n := enginetest.OpenNode(b, node.Config{})
	svc := seedBenchNode(b, n)
	c0 := enginetest.CPUTime()
	bare := enginetest.NewBareRig(b)
	ctx := context.Background()
	var create, update, floor enginetest.Latencies
	var last uint64
	payload := make([]byte, 400) // about a create's record
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		ack, err := bare.JS.Publish(ctx, "bare.item.0", payload, jetstream.WithMsgID(fmt.Sprintf("op-%d", i)), jetstream.WithExpectLastSequencePerSubject(last))
		if err != nil {
			b.Fatal(err)
		}
		last = ack.Sequence
		bare.WaitApplied(ack.Sequence)
		floor = append(floor, time.Since(t0))
		t0 = time.Now()
		if w, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: fmt.Sprintf("w%d", i)}); err != nil || w.Outcome != engine.Applied {
			b.Fatal(w, err)
		}
		create = append(create, time.Since(t0))
		t0 = time.Now()
		if w, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-1", 0, tracker.ItemPatch{Title: ptr(fmt.Sprintf("t%d", i))}); err != nil || w.Outcome != engine.Applied {
			b.Fatal(w, err)
		}
		update = append(update, time.Since(t0))
	}
	b.StopTimer()
	// The process's CPU for one floor loop, one create and one update.
	b.ReportMetric(float64((enginetest.CPUTime()-c0).Microseconds())/float64(b.N), "cpu-µs/round")
	p50 := func(l enginetest.Latencies) float64 { slices.Sort(l); return float64(l[len(l)/2].Nanoseconds()) / 1e3 }
	f, c, u := p50(floor), p50(create), p50(update)
	b.ReportMetric(f, "floor-p50-µs")
	b.ReportMetric(c, "create-p50-µs")
	b.ReportMetric(u, "update-p50-µs")
	b.ReportMetric(c/f, "create/floor")
	b.ReportMetric(u/f, "update/floor")
}
