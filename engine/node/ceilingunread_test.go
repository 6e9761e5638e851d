//go:build integration

package node_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
)

// TestCeilingUnread: the broker's answers to the boot's ceiling reads are
// lost (a proxy drops them). Asked again two seconds on, each read is
// answered; with the bound cut to one attempt, both logs are counted as
// ones this boot creates, the node says so naming each stream, and the
// existing tracker log keeps the ceiling it holds.
func TestCeilingUnread(t *testing.T) {
	ctx := context.Background()
	for _, oneTry := range []bool{false, true} {
		dir := t.TempDir()
		b, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "n1", StoreDir: filepath.Join(dir, "stream"), Sync: broker.Sync{Always: true}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.JS.CreateStream(ctx, jetstream.StreamConfig{Name: engine.StreamTracker, Subjects: []string{"crewlet.tracker.>"},
			Storage: jetstream.FileStorage, MaxBytes: 64 << 20, Duplicates: 2 * time.Minute, Discard: jetstream.DiscardNew}); err != nil {
			t.Fatal(err)
		}
		b.Close()
		rec := enginetest.NewRecorder()
		var proxy *enginetest.AckDropper
		cfg := node.Config{DataDir: dir, Logger: rec.Logger(), Hooks: node.Hooks{ClientURL: func(u string) string {
			proxy = enginetest.NewAckDropper(t, u)
			proxy.DropAPI(2)
			return proxy.URL()
		}}}
		if oneTry {
			cfg.Hooks.CeilingRead = &broker.CeilingRead{Every: broker.DefaultCeilingRead.Every, Within: broker.DefaultCeilingRead.Every}
		}
		n := enginetest.OpenNode(t, cfg)
		if got := ceilingOf(t, n, engine.DomainTracker); got != 64<<20 {
			t.Fatalf("the tracker log's ceiling became %d", got)
		}
		unread := rec.Lines(engine.EvCeilingUnread)
		if !oneTry && (len(unread) != 0 || proxy.Dropped.Load() != 2) {
			t.Fatalf("asked again, still unread: %+v (dropped %d)", unread, proxy.Dropped.Load())
		}
		if oneTry && (len(unread) != 2 || unread[0].Attrs[engine.LogComponent] != engine.ComponentStatelog) {
			t.Fatalf("%s lines: %+v", engine.EvCeilingUnread, unread)
		}
		n.Close()
	}
}
