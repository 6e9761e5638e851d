package mcp

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/internal/httpedge"
)

// The helpers of the tests that drive a real node (embedded broker,
// SQLite) through the MCP surfaces.

// realNode opens node n1 in a temporary directory; a close that fails
// fails the test.
func realNode(t *testing.T) *node.Node {
	t.Helper()
	n, err := node.Open(ctxT(t), node.Config{DataDir: t.TempDir(), Name: "n1", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	return n
}

// operatorOverHTTP serves s as the operator MCP at /operator/mcp on an
// httptest server and returns an mcp-go client of it over Streamable
// HTTP, with the operator's token.
func operatorOverHTTP(t *testing.T, s *server.MCPServer) *client.Client {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/operator/mcp", httpedge.NewGuard(httpedge.GuardOptions{Token: testToken, Logger: testLogger(t)}).Operator(OperatorHandler(s, testLogger(t))))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return httpClient(t, ts.URL+"/operator/mcp", testToken)
}

// caller calls tools through c and holds their answers to what the test
// expects of them.
type caller struct {
	t *testing.T
	c *client.Client
}

// ok calls a tool that must answer a result, not a refusal.
func (k caller) ok(name string, args map[string]any) map[string]any {
	k.t.Helper()
	res := callTool(k.t, k.c, name, args)
	if res.IsError {
		k.t.Fatalf("%s: %s", name, textOf(res))
	}
	return object(k.t, res)
}

// applied calls a tool that must answer a result and, where the result
// is a write's, one applied.
func (k caller) applied(name string, args map[string]any) map[string]any {
	k.t.Helper()
	res := callTool(k.t, k.c, name, args)
	if res.IsError {
		k.t.Fatalf("%s %v: %s", name, args, textOf(res))
	}
	m := object(k.t, res)
	if o, has := m["outcome"]; has && o != "applied" {
		k.t.Fatalf("%s: outcome %v: %s", name, o, textOf(res))
	}
	return m
}

// refused calls a tool that must refuse with code and a message.
func (k caller) refused(name string, args map[string]any, code engine.Code) map[string]any {
	k.t.Helper()
	res := callTool(k.t, k.c, name, args)
	m := object(k.t, res)
	if !res.IsError || m["refused"] != string(code) || m["message"] == "" {
		k.t.Fatalf("%s %v: want %s, got %v", name, args, code, m)
	}
	return m
}
