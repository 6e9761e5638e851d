package node_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestLostDatabaseRebuildsReader: the replicated database is deleted while
// the broker keeps the estate; the reader acknowledged past the (now zero)
// checkpoint is rebuilt and the rows replay from the log.
func TestLostDatabaseRebuildsReader(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir})
	mustProject(t, n.Tracker(), "ENG")
	if _, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "survives"}); err != nil {
		t.Fatal(err)
	}
	n.Close()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(dir, "crewlet-replicated.db"+suffix))
	}
	rec := enginetest.NewRecorder()
	n = enginetest.OpenNode(t, node.Config{DataDir: dir, Logger: rec.Logger()})
	lines := rec.Lines(engine.EvConsumerRebuilt)
	if len(lines) != 1 || lines[0].Attrs["drift"] != "acknowledged_past_checkpoint" || lines[0].Level.String() != "WARN" {
		t.Fatalf("rebuild lines: %+v", lines)
	}
	got, err := n.Tracker().GetWorkItem(ctx, lin(), "ENG-1")
	if err != nil || got.Item.Title != "survives" {
		t.Fatalf("%+v %v", got, err)
	}
	// A clean restart logs no rebuild.
	n.Close()
	rec2 := enginetest.NewRecorder()
	n = enginetest.OpenNode(t, node.Config{DataDir: dir, Logger: rec2.Logger()})
	if l := rec2.Lines(engine.EvConsumerRebuilt); len(l) != 0 {
		t.Fatalf("clean restart rebuilt: %+v", l)
	}
}

// TestCleanRestartAfterABurst: the appliers space their acknowledgements
// (Config.AckEvery), so at the end of a burst of writes the newest is
// still held; closing the node sends it, and the restart finds everything
// it was handed acknowledged: no reader rebuilt (the seeds' clean
// restart).
func TestCleanRestartAfterABurst(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir, AckEvery: time.Hour})
	mustProject(t, n.Tracker(), "ENG")
	for i := 0; i < 20; i++ {
		if _, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "burst"}); err != nil {
			t.Fatal(err)
		}
	}
	n.Close()
	rec := enginetest.NewRecorder()
	n = enginetest.OpenNode(t, node.Config{DataDir: dir, Logger: rec.Logger()})
	if l := rec.Lines(engine.EvConsumerRebuilt); len(l) != 0 {
		t.Fatalf("clean restart after a burst rebuilt its reader: %+v", l)
	}
	got, err := n.Tracker().GetWorkItem(ctx, lin(), "ENG-20")
	if err != nil || got.Item.Title != "burst" {
		t.Fatalf("%+v %v", got, err)
	}
}

// TestSecondProcessRefused: a data directory held by one node refuses a
// second, naming the holder and --node.
func TestSecondProcessRefused(t *testing.T) {
	dir := t.TempDir()
	enginetest.OpenNode(t, node.Config{DataDir: dir, Holder: "crewlet serve at http://127.0.0.1:7420"})
	_, err := node.Open(context.Background(), node.Config{DataDir: dir, Logger: enginetest.Logger()})
	if err == nil || !strings.Contains(err.Error(), "--node URL") || !strings.Contains(err.Error(), "crewlet serve at") {
		t.Fatalf("second open: %v", err)
	}
}

// TestExistingStreamNeverRewritten: a stream created with another ceiling
// keeps it, and the boot says so; one set to async persistence is refused.
func TestExistingStreamNeverRewritten(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := filepath.Join(dir, "stream")
	b, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "n1", StoreDir: store, Sync: broker.Sync{Always: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.JS.CreateStream(ctx, jetstream.StreamConfig{Name: engine.StreamTracker, Subjects: []string{"crewlet.tracker.>"},
		Storage: jetstream.FileStorage, MaxBytes: 64 << 20, Duplicates: 2 * time.Minute, Discard: jetstream.DiscardNew}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.JS.CreateStream(ctx, jetstream.StreamConfig{Name: engine.StreamPages, Subjects: []string{"crewlet.pages.>"},
		Storage: jetstream.FileStorage, PersistMode: jetstream.AsyncPersistMode}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	_, err = node.Open(ctx, node.Config{Name: "n1", DataDir: dir, Logger: enginetest.Logger()})
	if err == nil || !strings.Contains(err.Error(), "persist") {
		t.Fatalf("async stream accepted: %v", err)
	}
	b, _ = broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "n1", StoreDir: store, Sync: broker.Sync{Always: true}})
	if err := b.JS.DeleteStream(ctx, engine.StreamPages); err != nil {
		t.Fatal(err)
	}
	b.Close()
	rec := enginetest.NewRecorder()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir, Logger: rec.Logger()})
	info, err := n.Log(engine.DomainTracker).Info(ctx)
	if err != nil || info.MaxBytes != 64<<20 {
		t.Fatalf("ceiling rewritten: %+v %v", info, err)
	}
	if l := rec.Lines(engine.EvStreamCapacityDiffers); len(l) != 1 {
		t.Fatalf("capacity lines: %+v", l)
	}
}

// TestSyncReadBack: the running broker's sync is read back and a
// difference refuses the boot.
func TestSyncReadBack(t *testing.T) {
	b, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "x", StoreDir: t.TempDir(), Sync: broker.Sync{Interval: 30 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if cfg := b.Server.JetStreamConfig(); cfg.SyncAlways || cfg.SyncInterval != 30*time.Second {
		t.Fatalf("broker syncs %+v", cfg)
	}
	if err := broker.CheckSync(b.Server, broker.Sync{Always: true}); err == nil {
		t.Fatal("a broker syncing every 30s passed as always")
	}
	if _, err := broker.ParseSync("sometimes"); err == nil {
		t.Fatal("bad stream.sync parsed")
	}
	n := enginetest.OpenNode(t, node.Config{})
	if !n.Broker().Server.JetStreamConfig().SyncAlways {
		t.Fatal("default node does not sync always")
	}
}
