package peerbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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
// token. With several base URLs, workers spread over the nodes.
type Crewlet struct {
	BaseURLs []string
	Token    string
	// Project is the key the workloads write under (default BENCH).
	Project string
	// PIDs are the nodes' processes, where the bench started them.
	PIDs []int

	http    *http.Client
	mu      sync.Mutex
	clients map[int]*client.Client // one MCP session per worker
}

// Name is "crewlet".
func (c *Crewlet) Name() string { return "crewlet" }

func (c *Crewlet) project() string {
	if c.Project == "" {
		return "BENCH"
	}
	return c.Project
}

// Setup creates the project and its first item, the row the reads read.
func (c *Crewlet) Setup(ctx context.Context) error {
	c.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	c.clients = map[int]*client.Client{}
	cl, err := c.client(ctx, 0)
	if err != nil {
		return err
	}
	if _, err := call(ctx, cl, "create_project", map[string]any{"key": c.project(), "name": "Benchmark"}); err != nil && !strings.Contains(err.Error(), "already_exists") {
		return err
	}
	row := "/api/v1/work-items/" + c.project() + "-1?read_level=linearizable"
	_, err = c.get(ctx, 0, row)
	var se *statusError
	if errors.As(err, &se) && se.code == http.StatusNotFound { // else a run before this one filed it
		if _, err = call(ctx, cl, "create_work_item", map[string]any{"project": c.project(), "title": "the row the reads read"}); err != nil {
			return err
		}
	}
	// A linearizable read on every node waits for the item's apply there,
	// so the stale reads that follow find it whichever node they ask
	// (worker i asks node i modulo the fleet's size).
	for i := range c.BaseURLs {
		if err := untilSettled(ctx, func() error { _, err := c.get(ctx, i, row); return err }); err != nil {
			return err
		}
	}
	return nil
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
	url := strings.TrimSuffix(c.BaseURLs[worker%len(c.BaseURLs)], "/") + "/operator/mcp"
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

// Do runs one operation: a write must answer applied; a read must answer
// 200 at the level it asked.
func (c *Crewlet) Do(ctx context.Context, w Workload, worker, i int) error {
	switch w.Kind {
	case Floor:
		_, err := c.get(ctx, worker, "/healthz")
		return err
	case Write:
		cl, err := c.client(ctx, worker)
		if err != nil {
			return err
		}
		ans, err := call(ctx, cl, "create_work_item", map[string]any{"project": c.project(), "title": fmt.Sprintf("w%d-%d", worker, i)})
		if err != nil {
			return err
		}
		if ans["outcome"] != "applied" {
			return fmt.Errorf("outcome %v", ans["outcome"])
		}
		return nil
	case Linearizable, Stale:
		_, err := c.get(ctx, worker, "/api/v1/work-items/"+c.project()+"-1?read_level="+map[Kind]string{Linearizable: "linearizable", Stale: "stale"}[w.Kind])
		return err
	}
	return fmt.Errorf("crewlet has no workload %s", w.Kind)
}

func (c *Crewlet) get(ctx context.Context, worker int, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(c.BaseURLs[worker%len(c.BaseURLs)], "/")+path, nil)
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
