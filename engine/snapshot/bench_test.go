package snapshot_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/snapshot"
)

// BenchmarkSnapshot: a snapshot of a 100 000-item database (the online
// backup inside one read transaction and the artefact's sha256, as a
// donation takes it; and with the table hashes a backup's manifest
// carries) beside a bare `VACUUM INTO` of the same database in the same
// run: time and size of each.
//
//	go test -run '^$' -bench Snapshot -benchtime 3x ./engine/snapshot/
func BenchmarkSnapshot(b *testing.B) {
	const items = 100000
	ctx := context.Background()
	n := enginetest.OpenNode(b, node.Config{Retention: node.RetentionConfig{BackupOff: true}})
	if _, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		b.Fatal(err)
	}
	js, _ := jetstream.New(n.Broker().Conn, jetstream.WithPublishAsyncMaxPending(8192))
	enginetest.PublishCreates(b, js, 1, items)
	if err := n.Replica(engine.DomainTracker).WaitApplied(ctx, items+1); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	var snapTook, hashedTook, bareTook time.Duration
	var snapSize, bareSize int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		path, m, err := snapshot.Take(ctx, n.DB(), dir, snapshot.TakeOptions{Donor: "n1", Now: time.Now()})
		if err != nil {
			b.Fatal(err)
		}
		snapTook += time.Since(t0)
		snapSize = m.Size
		os.Remove(path)
		b.StopTimer()
		t0 = time.Now()
		path, _, err = snapshot.Take(ctx, n.DB(), dir, snapshot.TakeOptions{Donor: "n1", Now: time.Now(), Hashes: true})
		if err != nil {
			b.Fatal(err)
		}
		hashedTook += time.Since(t0)
		os.Remove(path)
		bare := filepath.Join(dir, fmt.Sprintf("bare-%d.db", i))
		t0 = time.Now()
		if _, err := n.DB().ExecContext(ctx, `VACUUM INTO ?`, bare); err != nil {
			b.Fatal(err)
		}
		bareTook += time.Since(t0)
		fi, err := os.Stat(bare)
		if err != nil {
			b.Fatal(err)
		}
		bareSize = fi.Size()
		os.Remove(bare)
		b.StartTimer()
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
	b.ReportMetric(per(snapTook), "snapshot_ms")
	b.ReportMetric(per(bareTook), "vacuum_into_ms")
	b.ReportMetric(snapTook.Seconds()/bareTook.Seconds(), "time_ratio")
	b.ReportMetric(per(hashedTook), "backup_with_hashes_ms")
	b.ReportMetric(hashedTook.Seconds()/bareTook.Seconds(), "backup_time_ratio")
	b.ReportMetric(float64(snapSize)/(1<<20), "snapshot_MiB")
	b.ReportMetric(float64(bareSize)/(1<<20), "vacuum_into_MiB")
	b.ReportMetric(float64(snapSize)/float64(bareSize), "size_ratio")
}
