package trim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

// BenchmarkLogBytesPerItem: the tracker log's bytes per work item after a
// long synthetic history of a thousand items (each filed, then updated
// twice), without the trim and with it (a backup and a trim every hundred
// items, the age floor set to nothing). The trimmed log's figure is its
// largest size, just before a trim, over the items of the whole history:
// it is bounded by the cadence, so the ratio grows with the history. The
// figures are sizes, not speeds.
func BenchmarkLogBytesPerItem(b *testing.B) {
	const items, every = 1000, 100
	run := func(trimmed bool) float64 {
		ctx := context.Background()
		var peak uint64
		n := enginetest.OpenNode(b, node.Config{HeartbeatInterval: 10 * time.Millisecond,
			Trim: node.TrimConfig{MinAge: time.Nanosecond, Interval: time.Hour}})
		defer n.Close()
		w, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Eng")
		enginetest.Landed(b, n, engine.DomainTracker, w.WriteResult, err)
		for i := 1; i <= items; i++ {
			iw, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: fmt.Sprintf("item %d", i),
				Description: "a synthetic item of a long history, with a description of ordinary length for a work tracker"})
			enginetest.Landed(b, n, engine.DomainTracker, iw.WriteResult, err)
			for _, st := range []string{"in_progress", "done"} {
				s := st
				uw, err := n.Tracker().UpdateWorkItem(ctx, engine.WriteOptions{}, iw.Item.Key, 0, tracker.ItemPatch{Status: &s})
				enginetest.Landed(b, n, engine.DomainTracker, uw.WriteResult, err)
			}
			if trimmed && i%every == 0 {
				// The log at its largest: just before a trim.
				info, err := n.Log(engine.DomainTracker).Info(ctx)
				if err != nil {
					b.Fatal(err)
				}
				peak = max(peak, info.Bytes)
				if _, err := n.Backup(ctx, nil); err != nil {
					b.Fatal(err)
				}
				waitBeat(b, n)
				if _, err := n.Trim().Once(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		if trimmed {
			return float64(peak) / items
		}
		info, err := n.Log(engine.DomainTracker).Info(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return float64(info.Bytes) / items
	}
	var plain, trimmed float64
	for i := 0; i < b.N; i++ {
		plain, trimmed = run(false), run(true)
	}
	b.ReportMetric(plain, "untrimmed_log_bytes/item")
	b.ReportMetric(trimmed, "trimmed_log_bytes/item")
	b.ReportMetric(plain/trimmed, "x_smaller")
	b.ReportMetric(0, "ns/op")
}

// waitBeat waits for the node's next heartbeat, so the register holds
// where it stands now.
func waitBeat(b *testing.B, n *node.Node) {
	_, at := n.Register().Known()
	for {
		if _, now := n.Register().Known(); now.After(at) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
