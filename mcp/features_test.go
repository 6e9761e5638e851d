package mcp

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/internal/httpedge"
	"github.com/crewlet/crewlet/internal/mcptest"
)

// TestFeaturesOverHTTP: a real node's operator MCP over Streamable HTTP,
// driven by mcp-go's client on the classic protocol: resource templates,
// the listing, a read with its level, completions, prompts, log lines
// after logging/setLevel, and a subscription told of a write to its item
// by the node's applier.
func TestFeaturesOverHTTP(t *testing.T) {
	n := realNode(t)
	relay := NewLogRelay()
	logger := slog.New(relay.Handler(testLogger(t).Handler()))
	s := New(Options{Version: "test", Logger: logger, Applied: n, Logs: relay}, catalogueOf(n.Tracker(), n.Pages()))
	mux := http.NewServeMux()
	mux.Handle("/operator/mcp", httpedge.NewGuard(httpedge.GuardOptions{Token: testToken, Logger: logger}).Operator(OperatorHandler(s, logger)))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)

	c, err := client.NewStreamableHttpClient(ts.URL+"/operator/mcp",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testToken}),
		transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	notes := mcptest.Listen(c)
	ctx := ctxT(t)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	k := caller{t, c}
	k.applied("create_project", map[string]any{"key": "ENG", "name": "Engineering"})
	k.applied("create_work_item", map[string]any{"project": "ENG", "title": "Login page times out", "tags": []any{"auth"}})
	k.applied("create_work_item", map[string]any{"project": "ENG", "title": "Login times out on slow links"})
	mcptest.CheckFeatures(ctx, t, c, notes, mcptest.Features{
		Project: "ENG", Item: "ENG-1", Logging: true,
		Update: func() {
			k.applied("update_work_item", map[string]any{"key": "ENG-1", "status": "in_progress"})
		},
	})
}

// TestSubscriptionsListen: on the stateless protocol (2026-07-28, mcp-go's
// client's default) a subscription is a subscriptions/listen stream naming
// the resource; a write to it is told on that stream, tagged with its id.
// A request that names a log level gets the lines its handling logs (a
// URI the stream cannot follow).
func TestSubscriptionsListen(t *testing.T) {
	n := realNode(t)
	relay := NewLogRelay()
	logger := slog.New(relay.Handler(testLogger(t).Handler()))
	s := New(Options{Version: "test", Logger: logger, Applied: n, Logs: relay}, catalogueOf(n.Tracker(), n.Pages()))
	mux := http.NewServeMux()
	mux.Handle("/operator/mcp", httpedge.NewGuard(httpedge.GuardOptions{Token: testToken, Logger: testLogger(t)}).Operator(OperatorHandler(s, testLogger(t))))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	c, err := client.NewStreamableHttpClient(ts.URL+"/operator/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testToken}))
	if err != nil {
		t.Fatal(err)
	}
	notes := mcptest.Listen(c)
	start(t, c)
	ctx := ctxT(t)
	k := caller{t, c}
	k.applied("create_project", map[string]any{"key": "ENG", "name": "Engineering"})
	k.applied("create_work_item", map[string]any{"project": "ENG", "title": "One"})
	const uri, ghost = "crewlet://work-items/ENG-1", "crewlet://work-items/ENG-99"
	level := mcpgo.SetLevelRequest{}
	level.Params.Level = mcpgo.LoggingLevelWarning
	if err := c.SetLevel(ctx, level); err != nil {
		t.Fatal(err)
	}
	stop, err := c.ListenAsync(ctx, mcpgo.SubscriptionFilter{ResourceSubscriptions: []string{uri, ghost}}, func(err error) { t.Errorf("listen: %v", err) })
	if err != nil {
		t.Fatalf("subscriptions/listen: %v", err)
	}
	defer stop()
	if err := notes.Await(ctx, func(m mcpgo.JSONRPCNotification) bool {
		return m.Method == mcpgo.MethodNotificationSubscriptionsAcknowledged
	}); err != nil {
		t.Fatalf("no acknowledgement of the subscription: %v", err)
	}
	if err := notes.Await(ctx, func(m mcpgo.JSONRPCNotification) bool {
		data, _ := m.Params.AdditionalFields["data"].(map[string]any)
		return m.Method == "notifications/message" && data["msg"] == "resource_subscribe_unresolved" && data["uri"] == ghost
	}); err != nil {
		t.Errorf("no notifications/message for the URI the stream cannot follow: %v", err)
	}
	k.applied("update_work_item", map[string]any{"key": "ENG-1", "title": "One, renamed"})
	if err := notes.Await(ctx, func(m mcpgo.JSONRPCNotification) bool {
		return m.Method == mcpgo.MethodNotificationResourceUpdated && m.Params.AdditionalFields["uri"] == uri && m.Params.Meta[mcpgo.MetaKeySubscriptionID] != nil
	}); err != nil {
		t.Errorf("no notifications/resources/updated on the listen stream: %v", err)
	}
}
