package httpedge_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/internal/httpedge"
	"github.com/crewlet/crewlet/internal/httpedge/edgetest"
	"github.com/crewlet/crewlet/mcp"
)

// Budgets of these tests. None is a claim about speed: each bounds a wait
// for something that happens on its own, with room for a loaded machine.
const (
	// budget bounds any answer the test waits for.
	budget = 60 * time.Second
	// atOnce is how long an answer that must not wait for the request's
	// body may take: well inside the server's read timeout, which is when
	// a server waiting for the body would give up.
	atOnce = httpedge.DefaultReadTimeout / 2
	// short is the timeout of a server whose timeouts a test outlives.
	short = 250 * time.Millisecond
	token = "edge-test-operator-token"
)

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// edge is a real http.Server behind the edge on a loopback listener.
type edge struct {
	addr  string
	hs    *http.Server
	log   *lockedBuffer
	open  atomic.Int64 // connections open now
	peak  atomic.Int64 // the most open at once
	mcpgo *server.MCPServer
}

// startEdge serves the node's route shape behind the edge: /healthz
// without a token, and behind the operator guard the operator MCP (a bare
// mcp-go server), /echo (reads the whole body and answers its length) and
// whatever else (404).
func startEdge(t *testing.T, l httpedge.Limits) *edge {
	t.Helper()
	e := &edge{log: &lockedBuffer{}, mcpgo: server.NewMCPServer("edge-test", "1")}
	logger := slog.New(slog.NewJSONHandler(e.log, nil))
	opts := httpedge.GuardOptions{Token: token, Logger: logger}
	api := http.NewServeMux()
	api.Handle("/operator/mcp", mcp.OperatorHandler(e.mcpgo, logger))
	api.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%d", n)
	})
	api.HandleFunc("/panic", func(http.ResponseWriter, *http.Request) { panic("edge test panics on purpose") })
	root := http.NewServeMux()
	root.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	root.Handle("/", httpedge.NewGuard(opts).Operator(api))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = ln.Addr().String()
	e.hs = httpedge.Server(root, l, logger)
	counted := &countingListener{Listener: ln, e: e}
	go func() { _ = e.hs.Serve(httpedge.Listener(counted, l.MaxConnections, logger)) }()
	t.Cleanup(func() { _ = e.hs.Close() })
	return e
}

// countingListener counts the connections open under the cap: each
// counts from its accept to its close, which comes before the cap frees
// its slot.
type countingListener struct {
	net.Listener
	e *edge
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := l.e.open.Add(1)
	for p := l.e.peak.Load(); n > p && !l.e.peak.CompareAndSwap(p, n); p = l.e.peak.Load() {
	}
	return &countedConn{Conn: c, e: l.e}, nil
}

type countedConn struct {
	net.Conn
	e    *edge
	once sync.Once
}

func (c *countedConn) CloseWrite() error { return c.Conn.(*net.TCPConn).CloseWrite() }

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.e.open.Add(-1) })
	return err
}

func (e *edge) rawAnswer(t *testing.T, head string, wait time.Duration) (*http.Response, map[string]any) {
	t.Helper()
	return edgetest.RawAnswer(t, e.addr, head, wait)
}

func head(method, path, addr string, header ...string) string {
	return edgetest.Head(method, path, addr, header...)
}

// TestBodyOverTheCap: a body larger than max_body_bytes is refused 413
// too_large with a coded JSON body. A declared one is refused on its
// headers alone, before any route or the guard, with or without a token,
// on every route (the body is withheld: the answer cannot have waited
// for it). A chunked one is cut at the cap once a route reads it, and
// the refusal replaces what the route (mcp-go: a JSON-RPC parse error)
// would have answered; without a token the guard answers 401 first and
// the body is never read. A body within the cap is served.
func TestBodyOverTheCap(t *testing.T) {
	const max = 64 << 10
	e := startEdge(t, httpedge.Limits{MaxBodyBytes: max})
	over := fmt.Sprintf("Content-Length: %d", 400<<20)
	for _, path := range []string{"/operator/mcp", "/echo", "/healthz", "/nothing-here"} {
		for _, auth := range []string{"", "Authorization: Bearer " + token} {
			hdr := []string{over, "Content-Type: application/json"}
			if auth != "" {
				hdr = append(hdr, auth)
			}
			resp, body := e.rawAnswer(t, head("POST", path, e.addr, hdr...), atOnce)
			msg, _ := body["message"].(string)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || body["refused"] != httpedge.CodeTooLarge || !strings.Contains(msg, "http.max_body_bytes") || body["max_body_bytes"] != float64(max) {
				t.Errorf("POST %s (token %v) with %s: %d %v", path, auth != "", over, resp.StatusCode, body)
			}
			if resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("POST %s: Content-Type %q", path, resp.Header.Get("Content-Type"))
			}
		}
	}

	post := func(path string, body io.Reader, withToken bool) (int, map[string]any, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+e.addr+path, body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if withToken {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := (&http.Client{Timeout: budget}).Do(req)
		if err != nil {
			t.Fatalf("POST %s (token %v): %v", path, withToken, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return resp.StatusCode, m, string(raw)
	}
	for _, path := range []string{"/operator/mcp", "/echo"} {
		code, m, raw := post(path, &edgetest.Zeros{N: 400 << 20}, true)
		if code != http.StatusRequestEntityTooLarge || m["refused"] != httpedge.CodeTooLarge {
			t.Errorf("chunked 400 MiB to %s with a token: %d %s", path, code, raw)
		}
		code, m, raw = post(path, &edgetest.Zeros{N: 400 << 20}, false)
		if code != http.StatusUnauthorized || m["refused"] != "unauthorized" {
			t.Errorf("chunked 400 MiB to %s without a token: %d %s", path, code, raw)
		}
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"edge","version":"0"}}}`
	if code, m, raw := post("/operator/mcp", io.MultiReader(strings.NewReader(init)), true); code != http.StatusOK || m["result"] == nil {
		t.Errorf("an initialize within the cap, chunked: %d %s", code, raw)
	}
	if code, _, raw := post("/echo", strings.NewReader(strings.Repeat("x", max)), true); code != http.StatusOK || raw != fmt.Sprint(max) {
		t.Errorf("a body of exactly the cap: %d %s", code, raw)
	}
	if !strings.Contains(e.log.String(), `"refused":"too_large"`) {
		t.Errorf("no http_request_refused line for too_large:\n%s", e.log)
	}
}

// TestSlowBodyWithoutTokenRefusedAtOnce: a caller without a token that
// declares a body and sends none is answered 401 on its headers: the
// guard does not wait for the body.
func TestSlowBodyWithoutTokenRefusedAtOnce(t *testing.T) {
	e := startEdge(t, httpedge.Limits{})
	for _, path := range []string{"/operator/mcp", "/echo"} {
		resp, body := e.rawAnswer(t, head("POST", path, e.addr, "Content-Length: 1000", "Content-Type: application/json"), atOnce)
		if resp.StatusCode != http.StatusUnauthorized || body["refused"] != "unauthorized" {
			t.Errorf("POST %s without a token, body withheld: %d %v", path, resp.StatusCode, body)
		}
	}
}

// TestConnectionCapShedsIdleConnections: with a cap of four, connections
// that send nothing fill it and many more queue behind it; none of them
// costs the server more than the cap, the server closes the silent ones
// (read-header timeout) and the kept-alive ones (idle timeout), and
// /healthz and an authorised request queued behind them are answered.
func TestConnectionCapShedsIdleConnections(t *testing.T) {
	const max, silent = 4, 24
	e := startEdge(t, httpedge.Limits{MaxConnections: max, ReadHeaderTimeout: short, IdleTimeout: short})
	var idle []net.Conn
	for i := 0; i < silent; i++ {
		c, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	get := func(path string, keepAlive bool) int {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+e.addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		tr := &http.Transport{DisableKeepAlives: !keepAlive}
		defer func() {
			if !keepAlive {
				tr.CloseIdleConnections()
			}
		}()
		resp, err := (&http.Client{Transport: tr, Timeout: budget}).Do(req)
		if err != nil {
			t.Fatalf("GET %s behind %d idle connections: %v", path, silent, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/healthz", false); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}
	// Every silent connection was taken in turn and closed by the server.
	for i, c := range idle {
		_ = c.SetReadDeadline(time.Now().Add(budget))
		if n, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("silent connection %d: read %d, %v; want it closed by the server", i, n, err)
		}
	}
	// Kept-alive connections left idle fill the cap too, and are shed.
	for i := 0; i < max; i++ {
		if code := get("/echo", true); code != http.StatusOK {
			t.Fatalf("kept-alive request %d: %d", i, code)
		}
	}
	if code := get("/echo", false); code != http.StatusOK {
		t.Fatalf("an authorised request behind kept-alive idle connections: %d", code)
	}
	if p := e.peak.Load(); p > max {
		t.Fatalf("%d connections were open at once, past the cap of %d", p, max)
	}
	if !strings.Contains(e.log.String(), `"msg":"http_connections_at_cap"`) {
		t.Errorf("no http_connections_at_cap line:\n%s", e.log)
	}
}

// TestStreamOutlivesWriteTimeout: the operator MCP's GET stream (the
// Streamable HTTP listening stream of a 2025-11-25 session) stays open
// past the server's write and read timeouts, and a notification sent
// after both have passed still reaches the client. A write deadline
// counted from the request, as http.Server.WriteTimeout alone sets it,
// would have cut it.
func TestStreamOutlivesWriteTimeout(t *testing.T) {
	e := startEdge(t, httpedge.Limits{WriteTimeout: short, ReadTimeout: short})
	client := &http.Client{Timeout: budget}
	do := func(method, body, session string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+e.addr+"/operator/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := do("POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"edge","version":"0"}}}`, "")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, session)
	}
	resp = do("POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	stream := do("GET", "", session)
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK || !strings.HasPrefix(stream.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET stream: %d %s", stream.StatusCode, stream.Header.Get("Content-Type"))
	}
	// Outlive both timeouts, then have the server write on the stream.
	time.Sleep(4 * short)
	e.mcpgo.SendNotificationToSpecificClient(session, "notifications/message", map[string]any{"level": "info", "data": "still streaming"})
	sc := bufio.NewScanner(stream.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data:") && strings.Contains(sc.Text(), "still streaming") {
			return
		}
	}
	t.Fatalf("the stream ended before the notification: %v", sc.Err())
}

// TestErrorLogIsTheNodesLogger: what net/http itself logs (here a panic
// in a route) goes through the node's logger, one JSON line under
// component http, instead of Go's standard log on stderr.
func TestErrorLogIsTheNodesLogger(t *testing.T) {
	e := startEdge(t, httpedge.Limits{})
	req, _ := http.NewRequest("GET", "http://"+e.addr+"/panic", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if resp, err := (&http.Client{Timeout: budget}).Do(req); err == nil {
		resp.Body.Close()
	}
	deadline := time.Now().Add(budget)
	for !strings.Contains(e.log.String(), "panic serving") {
		if time.Now().After(deadline) {
			t.Fatalf("no line for the panic:\n%s", e.log)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, line := range strings.Split(strings.TrimSpace(e.log.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if strings.Contains(line, "panic serving") && m["component"] != "http" {
			t.Fatalf("net/http's line is not under component http: %s", line)
		}
	}
}
