//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
)

// readyz answers GET /readyz of s: its status and body.
func readyz(t *testing.T, s *Serve) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(s.BaseURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

// TestServeVolumeFull: `crewlet serve` whose broker store sits on a real
// 64 MiB volume, filled to under the headroom an append keeps. A write is
// refused volume_full, /readyz says so; the process is killed while the
// disk is full, room is made, and it boots and writes again.
func TestServeVolumeFull(t *testing.T) {
	vol := enginetest.Tmpfs(t, 64<<20)
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "crewlet.yaml")
	// A reservation is not disk: the limit is set so the logs' floors
	// reserve on a volume smaller than them (the four logs' 1 GiB floors and
	// room beside them for the coordination buckets).
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("stream: {store_dir: %q, store_max_bytes: 6GiB}\n", filepath.Join(vol, "stream"))), 0o600); err != nil {
		t.Fatal(err)
	}
	s := StartServe(t, dir, "--config", cfg)
	c := s.HTTPClient(t)
	Call(t, c, "create_project", map[string]any{"key": "ENG", "name": "Engineering"})
	free, err := broker.VolumeFree(vol)
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(vol, "filler")
	if err := os.WriteFile(filler, make([]byte, free-broker.VolumeHeadroom/2), 0o600); err != nil {
		t.Fatal(err)
	}
	if o := callRefused(t, c, "create_work_item", map[string]any{"project": "ENG", "title": "on a full disk"}); o["refused"] != "volume_full" {
		t.Fatalf("a write on a full volume: %v", o)
	}
	if status, body := readyz(t, s); status != http.StatusServiceUnavailable || body["refused"] != "volume_full" {
		t.Fatalf("/readyz on a full volume: %d %v", status, body)
	}
	s.Kill(t)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	s = StartServe(t, dir, "--config", cfg)
	c = s.HTTPClient(t)
	Call(t, c, "create_work_item", map[string]any{"project": "ENG", "title": "room made"})
	if status, body := readyz(t, s); status != http.StatusOK {
		t.Fatalf("/readyz once room is made: %d %v", status, body)
	}
}

// callRefused calls a tool that must answer a refusal and returns its
// object.
func callRefused(t *testing.T, c *client.Client, name string, args map[string]any) map[string]any {
	t.Helper()
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Fatalf("%s(%v) was not refused: %s", name, args, resultText(res))
	}
	return resultObject(res)
}
