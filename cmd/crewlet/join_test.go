//go:build integration

package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/crewlet/crewlet/internal/token"
	"github.com/crewlet/crewlet/mcp"
)

// joinedCall calls a tool through a node without data until it answers
// something other than a refusal worth coming back for, and returns the
// answer and the data node that gave it.
func joinedCall(t *testing.T, c *client.Client, name string, args map[string]any) (map[string]any, string) {
	t.Helper()
	res := callRetryResult(t, c, name, args, 45*time.Second)
	var node string
	if res.Meta != nil {
		node, _ = res.Meta.GetMetaField(mcp.MetaDataNode).(string)
	}
	if node == "" {
		t.Fatalf("%s answered with no data node in _meta: %s", name, resultText(res))
	}
	return resultObject(res), node
}

// TestJoinedAssistant: `crewlet mcp --join` is a node without the data
// role: it holds no data directory, and over real stdio its calls go to
// a sound data node of three `crewlet serve` children, named in _meta.
// SIGKILL of the data node answering leaves the next calls answered by
// another, the write among them applied once. A wrong client token is
// refused before anything is served.
func TestJoinedAssistant(t *testing.T) {
	if testing.Short() {
		t.Skip("boots three processes")
	}
	f := startChildFleet(t)
	c := StdioClient(t, "mcp", "--join", strings.Join(f.clientURLs, ","), "--token-file", f.tokenFile, "--log-format", "json")

	joinedCall(t, c, "create_project", map[string]any{"key": "ENG", "name": "Engineering"})
	w, first := joinedCall(t, c, "create_work_item", map[string]any{"project": "ENG", "title": "one"})
	if w["outcome"] != "applied" && w["outcome"] != "pending" {
		t.Fatalf("create through the joined node: %v", w)
	}
	idx := int(first[1] - '1')

	f.serves[idx].Kill(t)
	got, second := joinedCall(t, c, "get_work_item", map[string]any{"key": "ENG-1"})
	if second == first {
		t.Fatalf("killed %s still answers", first)
	}
	item, _ := got["item"].(map[string]any)
	if item == nil || item["title"] != "one" {
		t.Fatalf("%s reads %v", second, got)
	}
	w, third := joinedCall(t, c, "update_work_item", map[string]any{"key": "ENG-1", "title": "two", "if_match": item["version"]})
	if third == first || (w["outcome"] != "applied" && w["outcome"] != "pending") {
		t.Fatalf("write with %s killed: %v by %s", first, w, third)
	}

	// Restarted, the killed node holds the write exactly once: read on
	// it over its own operator MCP.
	f.restart(t, idx)
	got = callRetry(t, f.serves[idx].HTTPClient(t), "get_work_item", map[string]any{"key": "ENG-1"})
	if item, _ := got["item"].(map[string]any); item == nil || item["title"] != "two" {
		t.Fatalf("restarted %s reads %v", first, got)
	}
	list := callRetry(t, f.serves[idx].HTTPClient(t), "list_work_items", map[string]any{"project": "ENG"})
	if items, _ := list["items"].([]any); len(items) != 1 {
		t.Fatalf("ENG holds %d items, want 1: %v", len(items), list)
	}

	// A wrong token: the join is refused, naming the token.
	cmd := exec.Command(f.bin, "mcp", "--join", f.clientURLs[0])
	cmd.Env = append(cmd.Environ(), token.EnvStream+"=not-the-fleet-token")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "stream.client.token") {
		t.Fatalf("a wrong token joined: %v\n%s", err, out)
	}
}
