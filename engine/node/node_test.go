package node_test

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("CREWLET_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

func open(t *testing.T, dir string) *node.Node {
	t.Helper()
	n, err := node.Open(context.Background(), node.Config{Name: "n1", DataDir: dir, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func lin() engine.ReadOptions { return engine.ReadOptions{Level: engine.Linearizable} }

func TestBootCreateRestartGet(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n := open(t, dir)
	svc := n.Tracker()
	pw, err := svc.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering")
	if err != nil || pw.Outcome != engine.Applied {
		t.Fatalf("create project: %+v %v", pw, err)
	}
	iw, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "first"})
	if err != nil || iw.Outcome != engine.Applied || iw.Item == nil || iw.Item.Key != "ENG-1" {
		t.Fatalf("create item: %+v %v", iw, err)
	}
	n.Close()
	n = open(t, dir)
	defer n.Close()
	got, err := n.Tracker().GetWorkItem(ctx, lin(), "ENG-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Item.Title != "first" || got.Level != engine.Linearizable {
		t.Fatalf("got %+v", got)
	}
	var items, ledger int
	n.DB().QueryRow(`SELECT count(*) FROM tracker_items`).Scan(&items)
	n.DB().QueryRow(`SELECT count(*) FROM statelog_ledger`).Scan(&ledger)
	if items != 1 || ledger != 2 {
		t.Fatalf("items=%d ledger=%d", items, ledger)
	}
}
