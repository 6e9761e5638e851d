package peerbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// Crewlet is a Crewlet node, or a fleet, reached like any user reaches it:
// writes are create_work_item calls over the operator MCP (Streamable
// HTTP), reads are GETs of the REST read path, both with the operator
// token. With several base URLs, workers spread over the nodes from
// First (NodeOf).
type Crewlet struct {
	BaseURLs []string
	// First is the index in BaseURLs of the first worker's node.
	First int
	Token string
	// Project is the key the workloads write under (default BENCH).
	Project string
	// PIDs are the nodes' processes, where the bench started them.
	PIDs []int

	http    *http.Client
	mu      sync.Mutex
	clients map[int]*client.Client // one MCP session per worker

	plan Plan
	// versions is what each update worker's item is at, as its last
	// write answered.
	versions [Workers]uint64
	// bulkMu and flips: which way the next bulk update goes.
	bulkMu sync.Mutex
	flips  int
}

// Name is "crewlet".
func (c *Crewlet) Name() string { return "crewlet" }

func (c *Crewlet) project() string {
	if c.Project == "" {
		return "BENCH"
	}
	return c.Project
}

// client is worker's MCP session, started on first use against the
// worker's node.
func (c *Crewlet) client(ctx context.Context, worker int) (*client.Client, error) {
	c.mu.Lock()
	cl := c.clients[worker]
	c.mu.Unlock()
	if cl != nil {
		return cl, nil
	}
	url := NodeOf(c.BaseURLs, c.First, worker) + "/operator/mcp"
	// The MCP sessions share the benchmark's HTTP client, which keeps
	// a connection per worker alive as rqlite's does: mcp-go's own default
	// keeps two idle connections per host, so 64 workers would open and
	// close a TCP connection for most calls.
	cl, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + c.Token}),
		transport.WithHTTPBasicClient(c.http))
	if err != nil {
		return nil, err
	}
	if err := cl.Start(ctx); err != nil {
		return nil, err
	}
	if _, err := cl.Initialize(ctx, mcpgo.InitializeRequest{}); err != nil {
		cl.Close()
		return nil, fmt.Errorf("initialize %s: %w", url, err)
	}
	c.mu.Lock()
	c.clients[worker] = cl
	c.mu.Unlock()
	return cl, nil
}

// Supports: every kind.
func (c *Crewlet) Supports(Kind) bool { return true }

// Do runs one operation: a write must answer applied; a read must answer
// 200 at the level it asked.
func (c *Crewlet) Do(ctx context.Context, w Workload, worker, i int) error {
	switch w.Kind {
	case HTTPFloor:
		_, err := c.get(ctx, worker, "/healthz")
		return err
	case MCPFloor:
		return c.mcpFloor(ctx, worker)
	case Create:
		title, desc := corpusText(worker*1_000_003 + i)
		_, err := c.write(ctx, worker, "create_work_item", map[string]any{"project": "CR", "title": title, "description": desc, "assignee": assignee(i)})
		return err
	case Update:
		return c.update(ctx, worker, i)
	case Get, Linearizable:
		return c.getItem(ctx, worker, map[Kind]string{Get: "stale", Linearizable: "linearizable"}[w.Kind])
	case GetMCP:
		return c.getItemMCP(ctx, worker)
	case Search:
		_, err := c.get(ctx, worker, "/api/v1/search/work-items?limit=10&q="+url.QueryEscape(searchTerms(worker*1_000_003+i)))
		return err
	case Bulk:
		return c.bulk(ctx, worker)
	case ToyWrite:
		_, err := c.write(ctx, worker, "create_work_item", map[string]any{"project": c.project(), "title": fmt.Sprintf("w%d-%d", worker, i)})
		return err
	case ToyLinear, ToyStale:
		_, err := c.get(ctx, worker, "/api/v1/work-items/"+c.project()+"-1?read_level="+map[Kind]string{ToyLinear: "linearizable", ToyStale: "stale"}[w.Kind])
		return err
	}
	return fmt.Errorf("crewlet has no workload %s", w.Kind)
}

// noSuchTool is the tool the MCP floor calls: none is named so.
const noSuchTool = "bench_mcp_floor"

// mcpFloor is the bare MCP round trip on the worker's session: a
// tools/call of a tool that is not there, answered by mcp-go's dispatch
// with a JSON-RPC error before any handler runs. (A ping would do on an
// older protocol; on 2026-07-28, which the Go client negotiates, ping is
// a no-op that sends nothing.)
func (c *Crewlet) mcpFloor(ctx context.Context, worker int) error {
	cl, err := c.client(ctx, worker)
	if err != nil {
		return err
	}
	req := mcpgo.CallToolRequest{}
	req.Params.Name = noSuchTool
	_, err = cl.CallTool(ctx, req)
	if err == nil || !strings.Contains(err.Error(), "not found") {
		return fmt.Errorf("a call of a tool that is not there answered %v, not its JSON-RPC error", err)
	}
	return nil
}

// write calls a writing tool on the worker's session; it must answer
// applied.
func (c *Crewlet) write(ctx context.Context, worker int, tool string, args map[string]any) (map[string]any, error) {
	cl, err := c.client(ctx, worker)
	if err != nil {
		return nil, err
	}
	ans, err := call(ctx, cl, tool, args)
	if err != nil {
		return nil, err
	}
	if ans["outcome"] != "applied" {
		return nil, fmt.Errorf("%s: outcome %v", tool, ans["outcome"])
	}
	return ans, nil
}

// update retitles the worker's own item under if_match: the version its
// last write answered, which no other worker changes.
func (c *Crewlet) update(ctx context.Context, worker, i int) error {
	w := worker % Workers
	title, _ := corpusText(worker*1_000_003 + i)
	ans, err := c.write(ctx, worker, "update_work_item", map[string]any{"key": fmt.Sprintf("UP-%d", w+1), "if_match": c.versions[w], "title": title})
	if err != nil {
		return err
	}
	v, err := itemVersion(ans)
	c.versions[w] = v
	return err
}

// itemVersion is the version of the item an answer carries.
func itemVersion(ans map[string]any) (uint64, error) {
	it, _ := ans["item"].(map[string]any)
	v, ok := it["version"].(float64)
	if !ok || v < 1 {
		return 0, fmt.Errorf("the answer carries no item version: %.200v", ans)
	}
	return uint64(v), nil
}

// getItem reads the worker's item over the REST path at level; the
// answer must carry its tags and watchers.
func (c *Crewlet) getItem(ctx context.Context, worker int, level string) error {
	key := fmt.Sprintf("GT-%d", worker%Workers+1)
	body, err := c.get(ctx, worker, "/api/v1/work-items/"+key+"?read_level="+level)
	if err != nil {
		return err
	}
	return dressed(key, string(body))
}

// getItemMCP reads the worker's item with get_work_item, at the tools'
// level (linearizable).
func (c *Crewlet) getItemMCP(ctx context.Context, worker int) error {
	cl, err := c.client(ctx, worker)
	if err != nil {
		return err
	}
	key := fmt.Sprintf("GT-%d", worker%Workers+1)
	ans, err := call(ctx, cl, "get_work_item", map[string]any{"key": key})
	if err != nil {
		return err
	}
	b, _ := json.Marshal(ans)
	return dressed(key, string(b))
}

// dressed checks that an answer about key carries its tags and watchers.
func dressed(key, body string) error {
	for _, want := range []string{`"perf"`, `"bob"`, `"high"`} {
		if !strings.Contains(body, want) {
			return fmt.Errorf("get %s: the answer lacks %s: %.300s", key, want, body)
		}
	}
	return nil
}

// bulk sets every item of the bulk project to the other status, with one
// bulk_update_work_items call.
func (c *Crewlet) bulk(ctx context.Context, worker int) error {
	c.bulkMu.Lock()
	defer c.bulkMu.Unlock()
	from, to := bulkStatuses(c.flips)
	if _, err := c.write(ctx, worker, "bulk_update_work_items", map[string]any{"project": corpusProject(0), "status": from, "set": map[string]any{"status": to}}); err != nil {
		return err
	}
	c.flips++
	return nil
}

func (c *Crewlet) get(ctx context.Context, worker int, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, NodeOf(c.BaseURLs, c.First, worker)+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{code: resp.StatusCode, msg: fmt.Sprintf("GET %s: %s: %.200s", path, resp.Status, body)}
	}
	return body, nil
}

// statusError is an answer other than 200.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

// passing says err may pass by itself: the node could not be reached, or
// answered 5xx (a refusal such as no_quorum or behind while a fleet that
// has just started elects its leaders), not a 4xx such as a wrong token.
func passing(err error) bool {
	var se *statusError
	return !errors.As(err, &se) || se.code >= 500
}

// untilSettled runs f until it succeeds, asking again while its error may
// pass by itself (passing), for up to the two minutes a boot waits for
// its broker: a fleet or cluster that has just started refuses for a
// moment while it elects its leaders or catches a member up.
func untilSettled(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := f()
		if err == nil || !passing(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Close ends every MCP session.
func (c *Crewlet) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.clients {
		cl.Close()
	}
}

// call calls a tool and returns its answer object; a refusal is an error
// carrying the refusal's JSON.
func call(ctx context.Context, cl *client.Client, name string, args map[string]any) (map[string]any, error) {
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := cl.CallTool(ctx, req)
	if err != nil {
		return nil, err
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(mcpgo.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError {
		return nil, fmt.Errorf("%s refused: %.300s", name, text)
	}
	var ans map[string]any
	if err := json.Unmarshal([]byte(text), &ans); err != nil {
		return nil, fmt.Errorf("%s: answer is not JSON: %.200s", name, text)
	}
	return ans, nil
}

// ProfileRequests ask every node for its CPU profile with the operator
// token (Profiler); a node answers only when started with --pprof.
func (c *Crewlet) ProfileRequests(ctx context.Context, seconds int) ([]*http.Request, error) {
	return profileRequests(ctx, c.BaseURLs, seconds, http.Header{"Authorization": {"Bearer " + c.Token}})
}
