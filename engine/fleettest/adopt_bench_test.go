//go:build integration

package fleettest_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/node"
)

// BenchmarkAdoptVsReplay: n3 joins a fleet holding a 100 000-item log on
// an empty database twice — once replaying the whole log, once after the
// log's start was purged, adopting a peer's snapshot — each timed from its
// start to having applied the log's end, in the same run.
//
//	go test -run '^$' -bench AdoptVsReplay -benchtime 1x ./engine/fleettest/
func BenchmarkAdoptVsReplay(b *testing.B) {
	const items = 100000
	if b.N > 1 {
		b.Fatal("run with -benchtime 1x: the first round purges the log's start, so a second would not replay")
	}
	ctx := context.Background()
	c := fleettest.StartCluster(b, fleettest.Options{Configure: func(_ int, cfg *node.Config) { cfg.Retention.BackupOff = true }})
	n1 := c.Node(0)
	if _, err := n1.Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		b.Fatal(err)
	}
	c.Stop(2)
	js, _ := jetstream.New(n1.Broker().Conn, jetstream.WithPublishAsyncMaxPending(8192))
	enginetest.PublishCreates(b, js, 1, items)
	info, err := n1.Log(engine.DomainTracker).Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	last := info.LastSeq
	for i := 0; i < 2; i++ {
		if err := c.Node(i).Replica(engine.DomainTracker).WaitApplied(ctx, last); err != nil {
			b.Fatal(err)
		}
	}
	join := func() time.Duration {
		removeDB(b, c.Config(2).DataDir)
		t0 := time.Now()
		if err := c.Start(2); err != nil {
			b.Fatal(err)
		}
		if err := c.Node(2).Replica(engine.DomainTracker).WaitApplied(ctx, last); err != nil {
			b.Fatal(err)
		}
		took := time.Since(t0)
		c.Stop(2)
		return took
	}
	var replay, adopt time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		replay += join()
		b.StopTimer()
		s, err := n1.Broker().JS.Stream(ctx, "CREWLET_TRACKER_LOG")
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Purge(ctx, jetstream.WithPurgeSequence(last)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		adopt += join()
	}
	b.ReportMetric(replay.Seconds()/float64(b.N), "replay_s")
	b.ReportMetric(adopt.Seconds()/float64(b.N), "adopt_s")
	b.ReportMetric(adopt.Seconds()/replay.Seconds(), "adopt_over_replay")
}
