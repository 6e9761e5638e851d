package node_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/internal/httpedge"
)

// fillVolume writes a file on dir's volume until less than leave bytes
// are free, and returns its path.
func fillVolume(t *testing.T, dir string, leave int64) string {
	t.Helper()
	free, err := broker.VolumeFree(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "filler")
	if err := os.WriteFile(path, make([]byte, max(free-leave, 0)), 0o600); err != nil {
		t.Fatalf("filling the volume: %v", err)
	}
	return path
}

// TestVolumeFull: the broker's store sits on a real 64 MiB volume, which
// is filled (not the log's ceiling). A write is refused volume_full with
// a sentence, not answered unknown; a linearizable read refuses it too;
// /readyz says so. The node, closed while the disk is full, boots once
// room is made and writes again.
func TestVolumeFull(t *testing.T) {
	ctx := context.Background()
	vol := enginetest.Tmpfs(t, 64<<20)
	dir := t.TempDir()
	// The limit is set: three quarters of 64 MiB would not reserve the
	// logs' 1 GiB floors, and a reservation is not disk.
	cfg := node.Config{DataDir: dir, Stream: node.StreamConfig{StoreDir: filepath.Join(vol, "stream"), StoreMaxBytes: 4 << 30}}
	n := enginetest.OpenNode(t, cfg)
	mustProject(t, n.Tracker(), "ENG")
	filler := fillVolume(t, vol, 64<<10)

	_, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "on a full disk"})
	if engine.CodeOf(err) != engine.CodeVolumeFull {
		t.Fatalf("a write on a full volume: %v", err)
	}
	ready := httptest.NewServer(httpedge.Ready(n.Unready))
	defer ready.Close()
	resp, err := http.Get(ready.URL)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || body["refused"] != string(engine.CodeVolumeFull) || body["ready"] != false {
		t.Fatalf("/readyz on a full volume: %d %v", resp.StatusCode, body)
	}

	n.Close()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	n = enginetest.OpenNode(t, cfg)
	w, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "room made"})
	if err != nil || w.Outcome != engine.Applied {
		t.Fatalf("a write once room is made: %+v %v", w, err)
	}
	if ref := n.Unready(); ref != nil {
		t.Fatalf("still unready: %v", ref)
	}
}
