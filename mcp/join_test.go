//go:build integration

package mcp

import (
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/nats-io/nats.go"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/estate"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/node"
)

func indexOf(name string) int { return int(name[1] - '1') }

// TestJoinedNodeMovesOffAnOutOfServiceCopy: three data nodes serve the
// estate; a node without data (the joined MCP server, over an in-process
// MCP client) writes through the first to answer. That node's tracker
// applier is then made to fail past its retry budget: its copy is
// stalled, it stops answering, and the next read is answered by another
// node with the row the stalled one cannot apply. It recovers and serves
// again; the node answering next is stopped, and calls move again.
func TestJoinedNodeMovesOffAnOutOfServiceCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a three-node cluster")
	}
	var failing [3]atomic.Bool
	logger := testLogger(t)
	c := fleettest.StartCluster(t, fleettest.Options{
		Configure: func(i int, cfg *node.Config) {
			cfg.Logger = logger.With("node", cfg.Name)
			cfg.ApplyRetryBudget = 500 * time.Millisecond
			cfg.WriteWait = time.Second
			cfg.Hooks.BeforeApplyCommit = func(d engine.Domain, _ uint64) error {
				if d == engine.DomainTracker && failing[i].Load() {
					return errors.New("injected: the disk refuses the apply")
				}
				return nil
			}
		},
		Opened: func(i int, n *node.Node) error {
			return n.ServeEstate(EstateHandler(NewServer("test", logger, catalogueOf(n.Tracker(), n.Pages(), n.NodeGates()))))
		},
	})
	cl := joinedClient(t, c, logger)
	first, version := createThroughJoined(t, cl)
	a := indexOf(first)

	// Stall the answering node's tracker copy: its own next write lands
	// on the log (pending: it cannot apply it) and its applier faults.
	failing[a].Store(true)
	res := callTool(t, cl, "update_work_item", map[string]any{"key": "ENG-1", "title": "two", "if_match": version})
	if m := object(t, res); res.IsError || m["outcome"] != "pending" || dataNodeOf(t, res) != first {
		t.Fatalf("write on the failing copy: %v by %s", m, dataNodeOf(t, res))
	}
	waitFor(t, 10*time.Second, func() bool { return c.Node(a).OutOfService() != nil })

	res = callTool(t, cl, "get_work_item", map[string]any{"key": "ENG-1"})
	m := object(t, res)
	second := dataNodeOf(t, res)
	if res.IsError || second == first {
		t.Fatalf("read with %s stalled answered by %s: %v", first, second, m)
	}
	if item, _ := m["item"].(map[string]any); item["title"] != "two" {
		t.Fatalf("%s reads %v, want the write the stalled node holds pending", second, m)
	}

	// Recovered, the first node serves again; the one answering now is
	// stopped and the next call moves off it.
	failing[a].Store(false)
	waitFor(t, 15*time.Second, func() bool { return c.Node(a).OutOfService() == nil })
	c.Stop(indexOf(second))
	res = callTool(t, cl, "get_work_item", map[string]any{"key": "ENG-1"})
	m = object(t, res)
	third := dataNodeOf(t, res)
	if res.IsError || third == second {
		t.Fatalf("read with %s stopped answered by %s: %v", second, third, m)
	}
}

// joinedClient is an in-process MCP client of a node without data
// (NewJoinedServer) whose estate client reaches c's brokers.
func joinedClient(t *testing.T, c *fleettest.Cluster, logger *slog.Logger) *client.Client {
	t.Helper()
	var urls []string
	for i := 0; i < 3; i++ {
		urls = append(urls, c.Node(i).Broker().Server.ClientURL())
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	es := estate.NewClient(nc, logger)
	es.SetAttemptTimeout(10 * time.Second)
	return inProcess(t, NewJoinedServer(es, definitions(), "test", logger))
}

// createThroughJoined files ENG and ENG-1 through the joined node: the
// data node that answered and the item's version.
func createThroughJoined(t *testing.T, cl *client.Client) (string, any) {
	t.Helper()
	if res := callTool(t, cl, "create_project", map[string]any{"key": "ENG", "name": "Engineering"}); res.IsError {
		t.Fatal(textOf(res))
	}
	res := callTool(t, cl, "create_work_item", map[string]any{"project": "ENG", "title": "one"})
	m := object(t, res)
	if res.IsError || m["outcome"] != "applied" && m["outcome"] != "pending" {
		t.Fatalf("create through the joined node: %v", m)
	}
	if op, _ := m["op_id"].(string); op == "" {
		t.Fatalf("the write answers no op_id: %v", m)
	}
	first := dataNodeOf(t, res)
	item, _ := m["item"].(map[string]any)
	if item == nil {
		// Pending (a loaded machine outran the 1 s write wait): the answer
		// carries no row, so the version comes from a linearizable read.
		gr := callTool(t, cl, "get_work_item", map[string]any{"key": "ENG-1"})
		g := object(t, gr)
		if item, _ = g["item"].(map[string]any); item == nil {
			t.Fatalf("read back the pending create: %v", g)
		}
		// The read may have moved off a node that was behind (behind
		// proves nothing ran there): the node answering now is the one
		// the next call goes to.
		first = dataNodeOf(t, gr)
	}
	return first, item["version"]
}

// TestJoinedNodeWithNoDataNode: with no data node serving the estate, a
// call through a node without data is refused no_data_node, with a
// retry hint, having run nowhere.
func TestJoinedNodeWithNoDataNode(t *testing.T) {
	n, err := node.Open(ctxT(t), node.Config{DataDir: t.TempDir(), Name: "n1", Logger: testLogger(t),
		Stream: node.StreamConfig{Client: node.ClientConfig{Listen: "127.0.0.1:0", Token: "a-token-of-16-chars"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	es, err := estate.Dial(estate.DialOptions{URLs: []string{n.ClientURL()}, Token: "a-token-of-16-chars", Name: "joined"})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	cl := inProcess(t, NewJoinedServer(es, definitions(), "test", testLogger(t)))
	res := callTool(t, cl, "list_projects", map[string]any{})
	if m := object(t, res); !res.IsError || m["refused"] != string(engine.CodeNoDataNode) || m["retry_after_seconds"] == nil {
		t.Fatalf("no data node serving: %v", m)
	}

	// Serving, the same node answers; a wrong token is refused at once.
	if err := n.ServeEstate(EstateHandler(NewServer("test", testLogger(t), catalogueOf(n.Tracker(), n.Pages())))); err != nil {
		t.Fatal(err)
	}
	res = callTool(t, cl, "list_projects", map[string]any{})
	if res.IsError || dataNodeOf(t, res) != "n1" {
		t.Fatalf("serving: %s", textOf(res))
	}
	if _, err := estate.Dial(estate.DialOptions{URLs: []string{n.ClientURL()}, Token: "not-the-token-at-all"}); err == nil {
		t.Fatal("a wrong client token was accepted")
	}
}

func waitFor(t *testing.T, within time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not so after %v", within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
