//go:build integration

package fleettest_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/internal/loopback"
)

// buildNATSServer builds the nats-server binary from the module the
// project already depends on.
func buildNATSServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nats-server")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build nats-server: %v\n%s", err, out)
	}
	return bin
}

// TestExternalNATS: two nodes on stream.type nats share one external
// nats-server process; neither runs a broker of its own; a write on one
// is read linearizably on the other; stream.sync is refused.
func TestExternalNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nats-server")
	}
	bin := buildNATSServer(t)
	dir := t.TempDir()
	// Outside the ephemeral range, as every broker port of the suite.
	ln, err := loopback.Listen()
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	host, port, _ := net.SplitHostPort(addr)
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("host: %s\nport: %s\njetstream {\n  store_dir: %q\n  sync_interval: always\n}\n", host, port, filepath.Join(dir, "js"))), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := exec.Command(bin, "-c", conf)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	url := "nats://" + addr
	enginetest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	})

	if _, err := node.Open(context.Background(), node.Config{DataDir: t.TempDir(), Name: "x",
		Stream: node.StreamConfig{Type: "nats", URLs: []string{url}, Sync: "always"}}); err == nil || !strings.Contains(err.Error(), "sync_interval: always") {
		t.Fatalf("stream.sync on stream.type nats: %v, want refused naming the server's sync_interval", err)
	}

	ext := func(name string) *node.Node {
		return enginetest.OpenNode(t, node.Config{Name: name, Stream: node.StreamConfig{Type: "nats", URLs: []string{url}}})
	}
	n1, n2 := ext("e1"), ext("e2")
	if n1.Broker().Server != nil || n2.Broker().Server != nil {
		t.Fatal("a node on stream.type nats runs a broker of its own")
	}
	ctx := context.Background()
	pw, err := n1.Tracker().CreateProject(ctx, engine.WriteOptions{}, "EXT", "External")
	enginetest.Landed(t, n1, engine.DomainTracker, pw.WriteResult, err)
	iw, err := n1.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "EXT", Title: "over the wire"})
	if err != nil || iw.Outcome != engine.Applied {
		t.Fatalf("create item: %+v %v", iw, err)
	}
	got, err := n2.Tracker().GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, iw.Item.Key)
	if err != nil || got.Item.Title != "over the wire" {
		t.Fatalf("e2 reads %+v %v", got, err)
	}
	a, err := n2.Retention().Answer(ctx)
	if err != nil || len(a.Nodes) != 2 {
		t.Fatalf("retention on the external cluster: %+v %v", a, err)
	}
}
