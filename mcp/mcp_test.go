package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/internal/httpedge"
	"github.com/crewlet/crewlet/tools"
	"github.com/crewlet/crewlet/tools/trackertools"
)

const testToken = "s3cret-token"

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func inProcess(t *testing.T, s *server.MCPServer) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(s)
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	return c
}

func start(t *testing.T, c *client.Client) {
	t.Helper()
	ctx := ctxT(t)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
}

// httpNode serves the operator MCP at /operator/mcp on an httptest server.
func httpNode(t *testing.T, tr trackertools.Tracker) (*httptest.Server, string) {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/operator/mcp", httpedge.NewGuard(httpedge.GuardOptions{Token: testToken, AllowedHosts: []string{"crewlet.example"}, Logger: testLogger(t)}).Operator(OperatorHandler(NewServer("test", testLogger(t), catalogueOf(tr)), testLogger(t))))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts, ts.URL + "/operator/mcp"
}

func httpClient(t *testing.T, url, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	return c
}

func callTool(t *testing.T, c *client.Client, name string, args map[string]any) *mcpgo.CallToolResult {
	t.Helper()
	var req mcpgo.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctxT(t), req)
	if err != nil {
		t.Fatalf("%s: protocol error %v (refusals must be results)", name, err)
	}
	return res
}

// object is a result's JSON object: a refusal's, read with
// tools.RefusalOf (an error result carries no structured content), or a
// success's structured content, which its text repeats as JSON.
func object(t *testing.T, res *mcpgo.CallToolResult) map[string]any {
	t.Helper()
	if res.IsError {
		if res.StructuredContent != nil {
			t.Fatalf("an error result carries structured content: %v", res.StructuredContent)
		}
		m, ok := tools.RefusalOf(res)
		if !ok {
			t.Fatalf("an error result whose text is no refusal object: %q", textOf(res))
		}
		return m
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m, fromText map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content %s is not an object: %v", b, err)
	}
	if err := json.Unmarshal([]byte(textOf(res)), &fromText); err != nil || !reflect.DeepEqual(m, fromText) {
		t.Fatalf("the text of a success is not its structured content (%v):\n text %s\n structured %s", err, textOf(res), b)
	}
	return m
}

func textOf(res *mcpgo.CallToolResult) string {
	if len(res.Content) > 0 {
		if tc, ok := mcpgo.AsTextContent(res.Content[0]); ok {
			return tc.Text
		}
	}
	return ""
}

var allTools = []string{trackertools.NameCreateProject, trackertools.NameListProjects, trackertools.NameCreateWorkItem, trackertools.NameGetWorkItem, trackertools.NameListWorkItems, trackertools.NameUpdateWorkItem,
	trackertools.NameSearchWorkItems, trackertools.NameCommentOnWorkItem, trackertools.NameMoveWorkItem, trackertools.NameMergeWorkItems, trackertools.NameTrashWorkItem, trackertools.NameRestoreWorkItem, trackertools.NamePurgeWorkItem, trackertools.NameListTags,
	trackertools.NameSimilarWorkItems}

// destructiveTools are the tools that say so in their annotations.
var destructiveTools = map[string]bool{trackertools.NameTrashWorkItem: true, trackertools.NamePurgeWorkItem: true}

func checkToolList(t *testing.T, c *client.Client) []mcpgo.Tool {
	t.Helper()
	list, err := c.ListTools(ctxT(t), mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]mcpgo.Tool{}
	for _, tool := range list.Tools {
		got[tool.Name] = tool
	}
	for _, name := range allTools {
		tool, ok := got[name]
		if !ok {
			t.Fatalf("tool %s missing from %d tools", name, len(list.Tools))
		}
		a := tool.Annotations
		if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s: annotations not all set: %+v", name, a)
			continue
		}
		if *a.DestructiveHint != destructiveTools[name] || *a.OpenWorldHint {
			t.Errorf("%s: destructive=%v (want %v) or open-world", name, *a.DestructiveHint, destructiveTools[name])
		}
		if tool.OutputSchema.Type != "object" {
			t.Errorf("%s: output schema %+v, want an object's", name, tool.OutputSchema)
		}
	}
	if len(list.Tools) != len(allTools) {
		t.Errorf("got %d tools, want %d", len(list.Tools), len(allTools))
	}
	return list.Tools
}

func TestInProcessToolList(t *testing.T) {
	checkToolList(t, inProcess(t, NewServer("test", testLogger(t), catalogueOf(newFake()))))
}

// badInput is the battery every surface must answer with invalid_argument
// results, before the service is called.
var badInput = []struct {
	name string
	tool string
	args map[string]any
}{
	{"empty title", trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": ""}},
	{"10 KB title", trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": strings.Repeat("t", 10<<10)}},
	{"title a number", trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": 5}},
	{"unknown argument", trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "x", "severity": "high"}},
	{"missing title", trackertools.NameCreateWorkItem, map[string]any{"project": "ENG"}},
	{"malformed key", trackertools.NameGetWorkItem, map[string]any{"key": "eng-x"}},
	{"level argument", trackertools.NameGetWorkItem, map[string]any{"key": "ENG-1", "level": "stale"}},
	{"if_match a string", trackertools.NameUpdateWorkItem, map[string]any{"key": "ENG-1", "if_match": "3", "title": "x"}},
	{"NUL in a query", trackertools.NameSearchWorkItems, map[string]any{"query": "login\x00page"}},
	{"line break in a title", trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "two\nlines"}},
}

func checkBadInput(t *testing.T, c *client.Client, f *fakeTracker) {
	for _, bc := range badInput {
		t.Run(bc.name, func(t *testing.T) {
			f.mu.Lock()
			before := f.calls
			f.mu.Unlock()
			res := callTool(t, c, bc.tool, bc.args)
			m := object(t, res)
			if !res.IsError || m["refused"] != "invalid_argument" {
				t.Fatalf("isError=%v structured=%v", res.IsError, m)
			}
			if msg, _ := m["message"].(string); msg == "" {
				t.Errorf("no message: %q", textOf(res))
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.calls != before {
				t.Errorf("the service was called")
			}
		})
	}
	t.Run("unknown project", func(t *testing.T) {
		res := callTool(t, c, trackertools.NameCreateWorkItem, map[string]any{"project": "NOPE", "title": "x"})
		if m := object(t, res); !res.IsError || m["refused"] != "not_found" {
			t.Fatalf("got %v", m)
		}
	})
}

func TestInProcessBadInput(t *testing.T) {
	f := newFake()
	checkBadInput(t, inProcess(t, NewServer("test", testLogger(t), catalogueOf(f))), f)
}

func TestPanicBecomesInternalRefusal(t *testing.T) {
	f := newFake()
	f.panics = true
	var logs bytes.Buffer
	c := inProcess(t, NewServer("test", slog.New(slog.NewJSONHandler(&logs, nil)), catalogueOf(f)))
	res := callTool(t, c, trackertools.NameListProjects, nil)
	if m := object(t, res); !res.IsError || m["refused"] != "internal" {
		t.Fatalf("got %v", m)
	}
	if strings.Contains(textOf(res), "boom") {
		t.Errorf("panic text leaked: %q", textOf(res))
	}
	if !strings.Contains(logs.String(), "tool_panic") || !strings.Contains(logs.String(), "boom") {
		t.Errorf("panic not logged: %s", logs.String())
	}
	// The server keeps serving.
	f.mu.Lock()
	f.panics = false
	f.mu.Unlock()
	if res := callTool(t, c, trackertools.NameListProjects, nil); res.IsError {
		t.Fatalf("after a panic: %s", textOf(res))
	}
}

func TestHTTPWithToken(t *testing.T) {
	f := newFake()
	_, url := httpNode(t, f)
	c := httpClient(t, url, testToken)
	checkToolList(t, c)
	checkBadInput(t, c, f)

	res := callTool(t, c, trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "over http"})
	m := object(t, res)
	if res.IsError || m["outcome"] != "applied" || m["op_id"] == "" || m["position"] == nil {
		t.Fatalf("create: %v", m)
	}
	item := m["item"].(map[string]any)
	res = callTool(t, c, trackertools.NameUpdateWorkItem, map[string]any{"key": "ENG-1", "if_match": item["version"].(float64) + 100, "title": "stale"})
	if m := object(t, res); !res.IsError || m["refused"] != "stale" || m["current_version"] == nil {
		t.Fatalf("stale update: %v", m)
	}
}

func TestHTTPClientWithoutOrWithWrongToken(t *testing.T) {
	_, url := httpNode(t, newFake())
	for _, tok := range []string{"", "wrong"} {
		var opts []transport.StreamableHTTPCOption
		if tok != "" {
			opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + tok}))
		}
		c, err := client.NewStreamableHttpClient(url, opts...)
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t)
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		_, err = c.Initialize(ctx, mcpgo.InitializeRequest{})
		if !errors.Is(err, transport.ErrAuthorizationRequired) {
			t.Errorf("token %q: initialize error %v, want authorization required", tok, err)
		}
		_ = c.Close()
	}
}

// rawRequest sends one HTTP request to the guarded endpoint.
func rawRequest(t *testing.T, method, url string, mod func(*http.Request)) (*http.Response, map[string]any) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	mod(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 401 && resp.StatusCode != 403 {
		// Admitted: a GET may be a long-lived event stream; do not wait on it.
		return resp, nil
	}
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp, m
}

func TestHTTPGuard(t *testing.T) {
	ts, url := httpNode(t, newFake())
	port := ts.Listener.Addr().String()[strings.LastIndexByte(ts.Listener.Addr().String(), ':')+1:]
	auth := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testToken) }
	cases := []struct {
		name   string
		mod    func(*http.Request)
		status int
		code   string
	}{
		{"no token", func(r *http.Request) {}, 401, "unauthorized"},
		{"wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }, 401, "unauthorized"},
		{"basic scheme", func(r *http.Request) { r.Header.Set("Authorization", "Basic "+testToken) }, 401, "unauthorized"},
		{"token prefix", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testToken[:4]) }, 401, "unauthorized"},
		{"foreign origin", func(r *http.Request) { auth(r); r.Header.Set("Origin", "http://evil.example") }, 403, "forbidden"},
		{"null origin", func(r *http.Request) { auth(r); r.Header.Set("Origin", "null") }, 403, "forbidden"},
		{"origin on another port", func(r *http.Request) { auth(r); r.Header.Set("Origin", "http://localhost:1") }, 403, "forbidden"},
		{"foreign host", func(r *http.Request) { auth(r); r.Host = "evil.example" }, 403, "forbidden"},
		{"loopback host on another port", func(r *http.Request) { auth(r); r.Host = "127.0.0.1:1" }, 403, "forbidden"},
		{"foreign host without token", func(r *http.Request) { r.Host = "evil.example:" + port }, 403, "forbidden"},
		{"own origin", func(r *http.Request) { auth(r); r.Header.Set("Origin", "http://127.0.0.1:"+port) }, 0, ""},
		{"localhost host", func(r *http.Request) { auth(r); r.Host = "localhost:" + port }, 0, ""},
		{"allowed host", func(r *http.Request) {
			auth(r)
			r.Host = "Crewlet.Example:8443"
			r.Header.Set("Origin", "https://crewlet.example")
		}, 0, ""},
	}
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		for _, c := range cases {
			t.Run(method+" "+c.name, func(t *testing.T) {
				resp, m := rawRequest(t, method, url, c.mod)
				if c.status == 0 {
					if resp.StatusCode == 401 || resp.StatusCode == 403 {
						t.Fatalf("refused %d: %v", resp.StatusCode, m)
					}
					return
				}
				if resp.StatusCode != c.status {
					t.Fatalf("status %d, want %d (%v)", resp.StatusCode, c.status, m)
				}
				if m["refused"] != c.code || m["message"] == "" {
					t.Errorf("body %v", m)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("content type %q", ct)
				}
				if c.status == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
				}
			})
		}
	}
}

func TestRemoteServerForwardsUnchanged(t *testing.T) {
	f := newFake()
	_, url := httpNode(t, f)
	ctx := ctxT(t)

	if _, _, err := NewRemoteServer(ctx, url, "wrong", "test", testLogger(t)); err == nil || !strings.Contains(err.Error(), "refused the token") {
		t.Fatalf("wrong token: %v", err)
	}

	proxy, closeFn, err := NewRemoteServer(ctx, url, testToken, "test", testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := closeFn(); err != nil {
			t.Error(err)
		}
	}()
	local := inProcess(t, proxy)
	direct := httpClient(t, url, testToken)

	localTools := checkToolList(t, local)
	directTools := checkToolList(t, direct)
	lj, _ := json.Marshal(localTools)
	dj, _ := json.Marshal(directTools)
	if !bytes.Equal(normalizeJSON(lj), normalizeJSON(dj)) {
		t.Errorf("proxied tool list differs:\n%s\n%s", lj, dj)
	}

	res := callTool(t, local, trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "via proxy", "op_id": "01938c2e-5f1a-7b3c-9d4e-0a1b2c3d4e5f.create-ENG"})
	m := object(t, res)
	if res.IsError || m["op_id"] != "01938c2e-5f1a-7b3c-9d4e-0a1b2c3d4e5f.create-ENG" || m["outcome"] != "applied" {
		t.Fatalf("create via proxy: %v", m)
	}
	if item, _ := m["item"].(map[string]any); item["key"] != "ENG-1" {
		t.Errorf("item %v", m["item"])
	}

	// A refusal comes back as the same result: isError, structured, text.
	args := map[string]any{"key": "ENG-1", "if_match": 99999, "title": "x"}
	viaProxy := callTool(t, local, trackertools.NameUpdateWorkItem, args)
	viaNode := callTool(t, direct, trackertools.NameUpdateWorkItem, args)
	if !viaProxy.IsError || !viaNode.IsError {
		t.Fatalf("not refused: proxy %v node %v", viaProxy.IsError, viaNode.IsError)
	}
	if textOf(viaProxy) != textOf(viaNode) || viaProxy.StructuredContent != nil {
		t.Errorf("proxy answered %q (structured %v), node %q", textOf(viaProxy), viaProxy.StructuredContent, textOf(viaNode))
	}
	if object(t, viaProxy)["refused"] != "stale" {
		t.Errorf("got %s", textOf(viaProxy))
	}

	// Argument refusals come from the node too, unchanged.
	res = callTool(t, local, trackertools.NameGetWorkItem, map[string]any{"key": "eng-x"})
	if m := object(t, res); !res.IsError || m["refused"] != "invalid_argument" {
		t.Fatalf("bad key via proxy: %v", m)
	}
}

func normalizeJSON(b []byte) []byte {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return b
	}
	out, _ := json.Marshal(v)
	return out
}

func TestRemoteServerNodeGone(t *testing.T) {
	ts, url := httpNode(t, newFake())
	proxy, closeFn, err := NewRemoteServer(ctxT(t), url, testToken, "test", testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	local := inProcess(t, proxy)
	ts.Close()
	res := callTool(t, local, trackertools.NameListProjects, nil)
	if m := object(t, res); !res.IsError || m["refused"] != "internal" || !strings.Contains(m["message"].(string), "did not answer") {
		t.Fatalf("got %v", m)
	}
}

func TestServeStdio(t *testing.T) {
	f := newFake()
	s := NewServer("test", testLogger(t), catalogueOf(f))
	clientToServer, serverIn := io.Pipe()
	serverOut, serverToClient := io.Pipe()
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() { done <- ServeStdio(ctx, s, clientToServer, serverToClient, testLogger(t)) }()

	c := client.NewClient(transport.NewIO(serverOut, serverIn, io.NopCloser(strings.NewReader(""))))
	start(t, c)
	checkToolList(t, c)
	res := callTool(t, c, trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": ""})
	if m := object(t, res); !res.IsError || m["refused"] != "invalid_argument" {
		t.Fatalf("got %v", m)
	}
	res = callTool(t, c, trackertools.NameCreateProject, map[string]any{"key": "ENG", "name": "Engineering"})
	if m := object(t, res); res.IsError || m["outcome"] != "applied" {
		t.Fatalf("got %v", m)
	}

	cancel()
	_ = serverIn.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeStdio did not return after cancel")
	}
	_ = serverToClient.Close()
}

// TestHTTPLegacyProtocol drives the classic initialize handshake (what the
// JS SDK speaks): Mcp-Session-Id flows through Guard on every request.
func TestHTTPLegacyProtocol(t *testing.T) {
	_, url := httpNode(t, newFake())
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testToken}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
	ir, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	if ir.ProtocolVersion != mcpgo.LATEST_LEGACY_PROTOCOL_VERSION || c.GetSessionId() == "" {
		t.Fatalf("protocol %q session %q", ir.ProtocolVersion, c.GetSessionId())
	}
	checkToolList(t, c)
	res := callTool(t, c, trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": 5})
	if m := object(t, res); !res.IsError || m["refused"] != "invalid_argument" {
		t.Fatalf("got %v", m)
	}
}
