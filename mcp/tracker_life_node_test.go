package mcp

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/internal/httpedge"
	"github.com/crewlet/crewlet/internal/mcptest"
	"github.com/crewlet/crewlet/ledger"
	"github.com/crewlet/crewlet/tools"
	"github.com/crewlet/crewlet/tools/trackertools"
)

// TestBulkToolsNotifyProgress: bulk_create_work_items and
// bulk_update_work_items over Streamable HTTP against a real node, called
// by mcp-go's client with a progress token: the client receives
// notifications/progress for its token up to the whole, the node logs
// tool_progress, and each call brought back with its op_id answers the
// same steps and files nothing twice.
func TestBulkToolsNotifyProgress(t *testing.T) {
	n := realNode(t)
	rec := enginetest.NewRecorder()
	c := unstartedClient(t, NewServer("test", rec.Logger(), catalogueOf(n.Tracker())))
	notes := mcptest.Listen(c)
	start(t, c)
	k := caller{t, c}
	k.applied(trackertools.NameCreateProject, map[string]any{"key": "ENG", "name": "Engineering"})

	var items []any
	for i := 1; i <= 6; i++ {
		items = append(items, map[string]any{"title": fmt.Sprintf("Plan step %d", i), "tags": []any{"plan"}})
	}
	createArgs := map[string]any{"project": "ENG", "items": items, "op_id": newOpID(t)}
	first := withProgress(t, c, trackertools.NameBulkCreateWorkItems, createArgs, "create-1")
	awaitProgress(t, notes, "create-1", 6)
	again := withProgress(t, c, trackertools.NameBulkCreateWorkItems, createArgs, "create-2")
	same(t, "bulk create brought back", steps(t, again), steps(t, first))
	if got := keys(k.applied(trackertools.NameListWorkItems, map[string]any{"project": "ENG"}), "items"); len(got) != 6 {
		t.Fatalf("%d items after a bulk create and its retry, want 6: %v", len(got), got)
	}

	updateArgs := map[string]any{"project": "ENG", "tag": "plan", "set": map[string]any{"assignee": "bob", "add_tags": []any{"triaged"}}, "op_id": newOpID(t)}
	upd := withProgress(t, c, trackertools.NameBulkUpdateWorkItems, updateArgs, "update-1")
	awaitProgress(t, notes, "update-1", 6)
	again = withProgress(t, c, trackertools.NameBulkUpdateWorkItems, updateArgs, "update-2")
	if upd["position"] == nil || again["position"] != upd["position"] {
		t.Fatalf("bulk update brought back answered %v, first %v", again["position"], upd["position"])
	}
	hist := k.applied(trackertools.NameListWorkItemHistory, map[string]any{"key": "ENG-3"})
	if ch, _ := hist["changes"].([]any); len(ch) != 4 { // created, tag plan, assignee, tag triaged
		t.Fatalf("ENG-3's history after a bulk update and its retry: %v", hist["changes"])
	}
	if lines := rec.Lines(tools.EvToolProgress); len(lines) == 0 || lines[len(lines)-1].Attrs["component"] != "mcp" {
		t.Fatalf("tool_progress lines: %v", lines)
	}
}

// unstartedClient serves s's operator MCP over HTTP and returns a client
// not yet started, so a listener can be attached first.
func unstartedClient(t *testing.T, s *server.MCPServer) *client.Client {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/operator/mcp", httpedge.NewGuard(httpedge.GuardOptions{Token: testToken, Logger: testLogger(t)}).Operator(OperatorHandler(s, testLogger(t))))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	c, err := client.NewStreamableHttpClient(ts.URL+"/operator/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testToken}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newOpID(t *testing.T) string {
	t.Helper()
	u, err := ledger.NewV7At(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return u.String()
}

// withProgress calls a tool with a progress token in its _meta; the call
// must be applied.
func withProgress(t *testing.T, c *client.Client, name string, args map[string]any, token string) map[string]any {
	t.Helper()
	var req mcpgo.CallToolRequest
	req.Params.Name, req.Params.Arguments = name, args
	req.Params.Meta = &mcpgo.Meta{ProgressToken: token}
	res, err := c.CallTool(ctxT(t), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	m := object(t, res)
	if res.IsError || m["outcome"] != "applied" {
		t.Fatalf("%s: %v", name, m)
	}
	return m
}

// awaitProgress waits for notifications/progress to token out of total.
// It asks for one, not for the last: mcp-go v1.2.1 drops a notification
// its forwarder took off the session's queue while the response was being
// finished (the last one, sent just before the handler returns, can be
// lost); the first (0 of total) is sent before the work starts.
func awaitProgress(t *testing.T, notes *mcptest.Notes, token string, total float64) {
	t.Helper()
	err := notes.Await(ctxT(t), func(m mcpgo.JSONRPCNotification) bool {
		f := m.Params.AdditionalFields
		p, _ := f["progress"].(float64)
		return m.Method == string(mcpgo.MethodNotificationProgress) && f["progressToken"] == token && f["total"] == total && p >= 0 && p <= total
	})
	if err != nil {
		t.Fatalf("no notifications/progress for %s out of %v: %v", token, total, err)
	}
}

// TestLifecycleToolsOverHTTP: comments edited and deleted by their author
// only, an item's history, a project archived (it refuses new items and
// leaves list_projects) and the trash emptied, through an mcp-go client
// against a real node.
func TestLifecycleToolsOverHTTP(t *testing.T) {
	n := realNode(t)
	k := caller{t, operatorOverHTTP(t, NewServer("test", testLogger(t), catalogueOf(n.Tracker())))}
	k.applied(trackertools.NameCreateProject, map[string]any{"key": "ENG", "name": "Engineering"})
	item := k.applied(trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "Login"})["item"].(map[string]any)
	c := k.applied(trackertools.NameCommentOnWorkItem, map[string]any{"key": "ENG-1", "body": "first", "author": "ana"})["comment"].(map[string]any)
	id := c["id"]
	k.refused(trackertools.NameCommentOnWorkItem, map[string]any{"key": "ENG-1", "body": "not mine", "author": "bo", "comment_id": id}, "invalid_argument")
	k.applied(trackertools.NameCommentOnWorkItem, map[string]any{"key": "ENG-1", "body": "edited", "author": "ana", "comment_id": id})
	got := k.applied(trackertools.NameGetWorkItem, map[string]any{"key": "ENG-1"})
	if got["item"].(map[string]any)["version"] != item["version"] {
		t.Fatalf("comments moved the version: %v, was %v", got["item"], item["version"])
	}
	k.applied(trackertools.NameCommentOnWorkItem, map[string]any{"key": "ENG-1", "author": "ana", "comment_id": id, "delete": true})
	hist := k.applied(trackertools.NameListWorkItemHistory, map[string]any{"key": "ENG-1", "limit": 1})
	ch := hist["changes"].([]any)[0].(map[string]any)
	if ch["field"] != "comment_deleted" || ch["by"] != "operator" || ch["position"] == "" || hist["next_cursor"] == nil {
		t.Fatalf("history: %v", hist)
	}

	k.applied(trackertools.NameTrashWorkItem, map[string]any{"key": "ENG-1"})
	emptied := k.applied(trackertools.NameEmptyTrash, map[string]any{"project": "ENG"})
	same(t, "empty_trash", steps(t, emptied), []string{"empty ENG", "purge ENG-1"})
	k.refused(trackertools.NameGetWorkItem, map[string]any{"key": "ENG-1"}, "deleted")

	k.applied(trackertools.NameUpdateProject, map[string]any{"key": "ENG", "archived": true})
	refusal := k.refused(trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "x"}, "invalid_argument")
	if msg, _ := refusal["message"].(string); !strings.Contains(msg, "archived false") {
		t.Fatalf("the refusal does not say what to do: %q", msg)
	}
	if ps := keys(k.applied(trackertools.NameListProjects, map[string]any{}), "projects"); len(ps) != 0 {
		t.Fatalf("list_projects lists the archived: %v", ps)
	}
	if ps := keys(k.applied(trackertools.NameListProjects, map[string]any{"include_archived": true}), "projects"); len(ps) != 1 {
		t.Fatalf("include_archived lists %v", ps)
	}
	p := k.applied(trackertools.NameGetProject, map[string]any{"key": "ENG"})
	if p["project"].(map[string]any)["archived"] != true {
		t.Fatalf("get_project: %v", p)
	}
}

// The lifecycle tools join the operator catalogue checkToolList expects;
// empty_trash says it is destructive.
func init() {
	allTools = append(allTools, trackertools.NameListWorkItemHistory, trackertools.NameGetProject, trackertools.NameUpdateProject,
		trackertools.NameEmptyTrash, trackertools.NameBulkUpdateWorkItems, trackertools.NameBulkCreateWorkItems, trackertools.NameListComments)
	destructiveTools[trackertools.NameEmptyTrash] = true
}
