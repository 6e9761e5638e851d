//go:build integration

package broker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/statelog"
)

// TestFullVolumeAppend: a broker whose store's volume (a real 16 MiB
// tmpfs) is filled to the last byte. The broker itself answers a publish
// it could not store with silence (nats-server logs the write error and
// sends no acknowledgement), so the log checks the volume first and
// refuses the append with ErrVolumeFull before sending it.
func TestFullVolumeAppend(t *testing.T) {
	ctx := context.Background()
	vol := enginetest.Tmpfs(t, 16<<20)
	b, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "n1", StoreDir: filepath.Join(vol, "stream"), Sync: broker.Sync{Always: true}, MaxStore: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err := b.JS.CreateStream(ctx, jetstream.StreamConfig{Name: engine.StreamTracker, Subjects: []string{"crewlet.tracker.>"},
		Storage: jetstream.FileStorage, MaxBytes: 256 << 20, Discard: jetstream.DiscardNew})
	if err != nil {
		t.Fatal(err)
	}
	l := broker.NewLog(b.JS, s, engine.DomainTracker, "n1", enginetest.Logger())
	if _, err := l.Publish(ctx, "crewlet.tracker.a", []byte("before"), "op-1", nil); err != nil {
		t.Fatal(err)
	}
	free, _ := broker.VolumeFree(vol)
	f, err := os.Create(filepath.Join(vol, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write(make([]byte, free)) // to the last byte: ENOSPC ends it
	f.Close()

	// The broker's own answer, unchecked: none.
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, raw := l.Publish(pctx, "crewlet.tracker.a", make([]byte, 64<<10), "op-2", nil)
	cancel()
	t.Logf("the broker's answer to a publish on a full volume: %v", raw)
	if raw == nil {
		t.Fatal("a 64 KiB append was stored on a volume with no free byte")
	}

	l.SetVolume(filepath.Join(vol, "stream"))
	_, err = l.Publish(ctx, "crewlet.tracker.a", []byte("after"), "op-3", nil)
	if !errors.Is(err, statelog.ErrVolumeFull) || !strings.Contains(err.Error(), "bytes free on the volume") {
		t.Fatalf("an append on a full volume: %v", err)
	}
}
