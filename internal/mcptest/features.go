package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// Features is what CheckFeatures expects of a surface whose tracker has
// project Project holding item Item.
type Features struct {
	Project, Item string
	// Update writes to Item (through any surface of the same node), for
	// the subscription's notification; nil: no subscription is checked.
	Update func()
	// Logging says the surface relays log lines (logging/setLevel).
	Logging bool
}

// Notes collects a client's notifications; register it before anything
// is sent (OnNotification).
type Notes struct {
	mu   sync.Mutex
	got  []mcp.JSONRPCNotification
	wake chan struct{}
}

// Listen starts collecting c's notifications.
func Listen(c *client.Client) *Notes {
	n := &Notes{wake: make(chan struct{}, 1)}
	c.OnNotification(func(m mcp.JSONRPCNotification) {
		n.mu.Lock()
		n.got = append(n.got, m)
		n.mu.Unlock()
		select {
		case n.wake <- struct{}{}:
		default:
		}
	})
	return n
}

// Await waits until a notification satisfies ok, or ctx ends.
func (n *Notes) Await(ctx context.Context, ok func(mcp.JSONRPCNotification) bool) error {
	for {
		n.mu.Lock()
		found := slices.ContainsFunc(n.got, ok)
		n.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-n.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// CheckFeatures drives resources (templates, list, read, subscribe and
// the update notification), completions, prompts and logging through c,
// an initialised client on the classic protocol (2025-11-25: sessions,
// logging/setLevel and resources/subscribe), whose notifications notes
// collects.
func CheckFeatures(ctx context.Context, t testing.TB, c *client.Client, notes *Notes, f Features) {
	t.Helper()
	itemURI := "crewlet://work-items/" + f.Item
	tpls, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatalf("resources/templates/list: %v", err)
	}
	var names []string
	for _, tp := range tpls.ResourceTemplates {
		names = append(names, tp.URITemplate.Raw())
	}
	if !slices.Contains(names, "crewlet://work-items/{key}") || !slices.Contains(names, "crewlet://projects/{key}") {
		t.Errorf("resource templates %v lack the work item's and the project's", names)
	}
	var uris []string
	var cursor mcp.Cursor
	for {
		req := mcp.ListResourcesRequest{}
		req.Params.Cursor = cursor
		page, err := c.ListResources(ctx, req)
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		for _, r := range page.Resources {
			uris = append(uris, r.URI)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if !slices.Contains(uris, itemURI) || !slices.Contains(uris, "crewlet://projects/"+f.Project) {
		t.Errorf("resources/list %v lacks %s or project %s", uris, itemURI, f.Project)
	}
	read := readJSON(ctx, t, c, itemURI)
	item, _ := read["item"].(map[string]any)
	if item["key"] != f.Item || read["level"] == nil || read["seen_through"] == nil {
		t.Errorf("read %s: %v; want the item with its level and position", itemURI, read)
	}
	checkCompletions(ctx, t, c, f)
	checkPrompts(ctx, t, c, f)
	if f.Logging {
		checkLogging(ctx, t, c, notes, f)
	}
	if f.Update != nil {
		if err := subscribe(ctx, c, itemURI); err != nil {
			t.Fatalf("resources/subscribe %s: %v", itemURI, err)
		}
		f.Update()
		if err := notes.Await(ctx, func(m mcp.JSONRPCNotification) bool {
			return m.Method == mcp.MethodNotificationResourceUpdated && m.Params.AdditionalFields["uri"] == itemURI
		}); err != nil {
			t.Errorf("no notifications/resources/updated for %s after a write to it: %v", itemURI, err)
		}
	}
}

func readJSON(ctx context.Context, t testing.TB, c *client.Client, uri string) map[string]any {
	t.Helper()
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := c.ReadResource(ctx, req)
	if err != nil {
		t.Fatalf("resources/read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("resources/read %s: %d contents, want 1", uri, len(res.Contents))
	}
	txt, ok := res.Contents[0].(mcp.TextResourceContents)
	if !ok || txt.MIMEType != "application/json" {
		t.Fatalf("resources/read %s: %#v, want JSON text", uri, res.Contents[0])
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(txt.Text), &m); err != nil {
		t.Fatalf("resources/read %s: %v: %s", uri, err, txt.Text)
	}
	return m
}

func complete(ctx context.Context, t testing.TB, c *client.Client, ref any, arg, value string) []string {
	t.Helper()
	req := mcp.CompleteRequest{}
	req.Params.Ref = ref
	req.Params.Argument = mcp.CompleteArgument{Name: arg, Value: value}
	res, err := c.Complete(ctx, req)
	if err != nil {
		t.Fatalf("completion/complete %v %s=%q: %v", ref, arg, value, err)
	}
	return res.Completion.Values
}

func checkCompletions(ctx context.Context, t testing.TB, c *client.Client, f Features) {
	t.Helper()
	tpl := mcp.ResourceReference{Type: "ref/resource", URI: "crewlet://work-items/{key}"}
	if got := complete(ctx, t, c, tpl, "key", f.Project+"-"); !slices.Contains(got, f.Item) {
		t.Errorf("completing item keys from %s-: %v, want %s among them", f.Project, got, f.Item)
	}
	if got := complete(ctx, t, c, tpl, "key", f.Project[:1]); !slices.Contains(got, f.Project+"-") {
		t.Errorf("completing item keys from %s: %v, want %s- among them", f.Project[:1], got, f.Project)
	}
	prompt := mcp.PromptReference{Type: "ref/prompt", Name: "status_report"}
	if got := complete(ctx, t, c, prompt, "project", strings.ToLower(f.Project[:1])); !slices.Contains(got, f.Project) {
		t.Errorf("completing status_report's project: %v, want %s among them", got, f.Project)
	}
}

func checkPrompts(ctx context.Context, t testing.TB, c *client.Client, f Features) {
	t.Helper()
	list, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	var names []string
	for _, p := range list.Prompts {
		names = append(names, p.Name)
	}
	for _, want := range []string{"triage_new_items", "status_report", "find_duplicates"} {
		if !slices.Contains(names, want) {
			t.Errorf("prompts/list %v lacks %s", names, want)
		}
	}
	for _, g := range []struct{ name, arg, value string }{
		{"status_report", "project", f.Project}, {"find_duplicates", "key", f.Item}, {"triage_new_items", "project", f.Project},
	} {
		req := mcp.GetPromptRequest{}
		req.Params.Name = g.name
		req.Params.Arguments = map[string]string{g.arg: g.value}
		res, err := c.GetPrompt(ctx, req)
		if err != nil {
			t.Fatalf("prompts/get %s: %v", g.name, err)
		}
		text := promptText(res)
		if !strings.Contains(text, f.Item) && g.name != "triage_new_items" || !strings.Contains(text, "Read at") {
			t.Errorf("prompts/get %s: %q; want the item and the read's level", g.name, text)
		}
	}
}

func promptText(res *mcp.GetPromptResult) string {
	var b strings.Builder
	for _, m := range res.Messages {
		if tc, ok := m.Content.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// checkLogging: after logging/setLevel warning, a subscription the server
// cannot resolve (an item that does not exist) logs a warning, and the
// client gets it as notifications/message.
func checkLogging(ctx context.Context, t testing.TB, c *client.Client, notes *Notes, f Features) {
	t.Helper()
	req := mcp.SetLevelRequest{}
	req.Params.Level = mcp.LoggingLevelWarning
	if err := c.SetLevel(ctx, req); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}
	ghost := fmt.Sprintf("crewlet://work-items/%s-999999", f.Project)
	if err := subscribe(ctx, c, ghost); err != nil {
		t.Fatalf("resources/subscribe %s: %v", ghost, err)
	}
	if err := notes.Await(ctx, func(m mcp.JSONRPCNotification) bool {
		data, _ := m.Params.AdditionalFields["data"].(map[string]any)
		return m.Method == "notifications/message" && data["msg"] == "resource_subscribe_unresolved" && data["uri"] == ghost
	}); err != nil {
		t.Errorf("no notifications/message for the unresolved subscription after logging/setLevel warning: %v", err)
	}
}

// subscribe sends resources/subscribe.
func subscribe(ctx context.Context, c *client.Client, uri string) error {
	req := mcp.SubscribeRequest{}
	req.Params.URI = uri
	//nolint:staticcheck // resources/subscribe is the classic protocol's, which this checks.
	return c.Subscribe(ctx, req)
}
