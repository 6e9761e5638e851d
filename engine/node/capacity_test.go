package node_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/capacity"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
)

const gib = capacity.GiB

// ceilingOf reads a domain's ceiling from the broker.
func ceilingOf(t *testing.T, n *node.Node, d engine.Domain) int64 {
	t.Helper()
	info, err := n.Log(d).Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.MaxBytes
}

func near(got, want, slack int64) bool { return got <= want+slack && got >= want-slack }

// TestSizingOnVolume: on a 40 GiB volume and no stream.store_max_bytes,
// the broker's limit is three quarters of the volume, the tracker asks a
// quarter of the free space and the pages log a quarter of that, and
// both fit the logs' half unscaled.
func TestSizingOnVolume(t *testing.T) {
	vol := enginetest.Tmpfs(t, 40*gib)
	n := enginetest.OpenNode(t, node.Config{DataDir: t.TempDir(), Stream: node.StreamConfig{StoreDir: filepath.Join(vol, "stream")}})
	if limit := n.Broker().Server.JetStreamConfig().MaxStore; !near(limit, 30*gib, 16<<20) {
		t.Fatalf("the broker's limit is %d, not three quarters of the volume", limit)
	}
	trk, pgs := ceilingOf(t, n, engine.DomainTracker), ceilingOf(t, n, engine.DomainPages)
	if !near(trk, 10*gib, 16<<20) || !near(pgs, trk/4, 1) {
		t.Fatalf("created the tracker at %d and the pages at %d on a 40 GiB volume", trk, pgs)
	}
}

// TestSizingShortOfFit: a broker limited to 20 GiB holding a tracker log
// created at 12 GiB. The tracker keeps it and is reported against its
// empty-broker fit (8 GiB: the 10 GiB half split 4:1); the pages log is
// sized from what the tracker leaves of the half — nothing — so it gets
// the floor, short of its 2 GiB fit, and the node says so.
func TestSizingShortOfFit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := filepath.Join(dir, "stream")
	b, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "n1", StoreDir: store, Sync: broker.Sync{Always: true}, MaxStore: 20 * gib})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.JS.CreateStream(ctx, jetstream.StreamConfig{Name: engine.StreamTracker, Subjects: []string{"crewlet.tracker.>"},
		Storage: jetstream.FileStorage, MaxBytes: 12 * gib, Duplicates: 2 * time.Minute, Discard: jetstream.DiscardNew}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	rec := enginetest.NewRecorder()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir, Logger: rec.Logger(), Stream: node.StreamConfig{StoreMaxBytes: 20 * gib}})
	if got := ceilingOf(t, n, engine.DomainTracker); got != 12*gib {
		t.Fatalf("the existing tracker log was rewritten to %d", got)
	}
	if got := ceilingOf(t, n, engine.DomainPages); got != gib {
		t.Fatalf("the pages log was created at %d, not the floor", got)
	}
	differs := rec.Lines(engine.EvStreamCapacityDiffers)
	if len(differs) != 1 || differs[0].Attrs[engine.LogStream] != engine.StreamTracker || differs[0].Attrs["ceiling"] != int64(12*gib) ||
		!near(differs[0].Attrs["fit"].(int64), 8*gib, 4) {
		t.Fatalf("%s lines: %+v", engine.EvStreamCapacityDiffers, differs)
	}
	short := rec.Lines(engine.EvCeilingShortOfFit)
	if len(short) != 1 || short[0].Attrs[engine.LogStream] != engine.StreamPages || short[0].Attrs["created"] != int64(gib) ||
		!near(short[0].Attrs["fit"].(int64), 2*gib, 4) || short[0].Attrs[engine.LogComponent] != engine.ComponentStatelog {
		t.Fatalf("%s lines: %+v", engine.EvCeilingShortOfFit, short)
	}
	if held, _ := short[0].Attrs["held"].(map[string]int64); held[engine.StreamTracker] != 12*gib || len(held) != 1 {
		t.Fatalf("held: %+v", short[0].Attrs["held"])
	}
}

// TestBootRefusedNoRoom: a broker limited to 1.5 GiB reserves the
// tracker's 1 GiB floor and has half a GiB left for the pages log's: the
// boot is refused at once, naming the stream, the bytes, what sets the
// limit and the field, and only the remedies that apply. On a real 2 GiB
// volume with no limit set, the same refusal names the volume instead.
func TestBootRefusedNoRoom(t *testing.T) {
	_, err := node.Open(context.Background(), node.Config{Name: "n1", DataDir: t.TempDir(), Logger: enginetest.Logger(),
		Stream: node.StreamConfig{StoreMaxBytes: 3 * gib / 2}})
	var re *capacity.ReserveError
	if !errors.As(err, &re) {
		t.Fatalf("a boot with no room: %v", err)
	}
	msg := err.Error()
	for _, says := range []string{
		"engine: the broker refused to reserve the pages log's ceiling: CREWLET_PAGES_LOG needed 1073741824 bytes and the broker had 536870912 bytes left to reserve (1073741824 of its 1610612736-byte limit already reserved)",
		"that limit is stream.store_max_bytes, which you set",
		"stream.pages_log_max_bytes is unset, so the ceiling was derived and scaled",
		"goes no lower than 1073741824 bytes",
		"Give the broker more room: raise stream.store_max_bytes.",
	} {
		if !strings.Contains(msg, says) {
			t.Errorf("the refusal does not say %q:\n%s", says, msg)
		}
	}
	for _, not := range []string{"smaller ceiling", "free space on that volume", "keep the ceilings"} {
		if strings.Contains(msg, not) {
			t.Errorf("the refusal offers %q, which does not apply:\n%s", not, msg)
		}
	}

	vol := enginetest.Tmpfs(t, 2*gib)
	store := filepath.Join(vol, "stream")
	_, err = node.Open(context.Background(), node.Config{Name: "n1", DataDir: t.TempDir(), Logger: enginetest.Logger(), Stream: node.StreamConfig{StoreDir: store}})
	if !errors.As(err, &re) || re.Log.Stream != engine.StreamPages {
		t.Fatalf("a boot on a 2 GiB volume: %v", err)
	}
	msg = err.Error()
	for _, says := range []string{"the free space on the volume holding stream.store_dir (" + store + ")",
		"free space on that volume (a first boot needs at least 2863311528 bytes (2.67 GiB) free there"} {
		if !strings.Contains(msg, says) {
			t.Errorf("the refusal does not say %q:\n%s", says, msg)
		}
	}
}

// externalAccount runs a nats-server whose account a has a JetStream
// file limit of maxFile, and returns a URL that logs in as a.
func externalAccount(t *testing.T, maxFile string) string {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	body := fmt.Sprintf("listen: 127.0.0.1:-1\njetstream {store_dir: %q}\naccounts {\n  A {\n    jetstream {max_file: %s, max_mem: 64M}\n    users [{user: a, password: a}]\n  }\n}\n", filepath.Join(dir, "js"), maxFile)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	opts.NoSigs, opts.NoLog = true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(time.Minute) {
		t.Fatal("the external nats-server is not ready")
	}
	return strings.Replace(ns.ClientURL(), "nats://", "nats://a:a@", 1)
}

// TestSizingExternal: on stream.type nats what the broker can grant is
// the account's JetStream limit, read through the account info: 3 GiB
// leaves a 1.5 GiB half, the logs' asks scale into it; 1.5 GiB cannot
// reserve both floors, and the refusal says the account's limit sets it.
func TestSizingExternal(t *testing.T) {
	url := externalAccount(t, fmt.Sprint(3*gib))
	n := enginetest.OpenNode(t, node.Config{Stream: node.StreamConfig{Type: "nats", URLs: []string{url}}})
	g, src, err := n.Broker().Grant(context.Background())
	if err != nil || g.Limit != 3*gib || src.Kind != capacity.SourceAccount || g.Reserved < 2*gib {
		t.Fatalf("the account's grant: %+v %+v %v", g, src, err)
	}
	if trk, pgs := ceilingOf(t, n, engine.DomainTracker), ceilingOf(t, n, engine.DomainPages); !near(trk, 3*gib/2*4/5, 4) || pgs != gib {
		t.Fatalf("created the tracker at %d and the pages at %d under a 3 GiB account", trk, pgs)
	}

	_, err = node.Open(context.Background(), node.Config{DataDir: t.TempDir(), Name: "x", Logger: enginetest.Logger(),
		Stream: node.StreamConfig{Type: "nats", URLs: []string{externalAccount(t, fmt.Sprint(3*gib/2))}}})
	var re *capacity.ReserveError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "the NATS account's JetStream storage limit") || !strings.Contains(err.Error(), "raise the account's JetStream storage limit") {
		t.Fatalf("a boot the account cannot reserve: %v", err)
	}
}
