package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/internal/httpedge"
	"github.com/crewlet/crewlet/tools"
)

// seatURL serves n's seat surface (its floors, its turns) over HTTP
// behind the operator guard and returns its URL.
func seatURL(t *testing.T, n *node.Node) string {
	t.Helper()
	s := NewSeat(n.Units(), Options{Version: "test", Logger: testLogger(t), Floors: n.SeatFloors(), Node: n.Name()}, catalogueOf(n.Tracker(), n.Pages(), n))
	mux := http.NewServeMux()
	mux.Handle("/seat/mcp", httpedge.NewGuard(httpedge.GuardOptions{Token: testToken, Logger: testLogger(t)}).Operator(SeatHandler(s, testLogger(t))))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL + "/seat/mcp"
}

func seatOf(t *testing.T, url, seat, unit string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{
		"Authorization": "Bearer " + testToken, HeaderSeat: seat, HeaderUnit: unit}))
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	return c
}

// must calls a tool that must answer, and returns its object.
func must(t *testing.T, c *client.Client, name string, args map[string]any) map[string]any {
	t.Helper()
	res := callTool(t, c, name, args)
	if res.IsError {
		t.Fatalf("%s(%v): %s", name, args, textOf(res))
	}
	return object(t, res)
}

// refused calls a tool that must refuse with code, and returns its object.
func refused(t *testing.T, c *client.Client, name string, args map[string]any, code engine.Code) map[string]any {
	t.Helper()
	res := callTool(t, c, name, args)
	m := object(t, res)
	if !res.IsError || m["refused"] != string(code) {
		t.Fatalf("%s(%v): %v, want refused %s", name, args, m, code)
	}
	return m
}

func field(m map[string]any, path ...string) any {
	var v any = m
	for _, k := range path {
		o, _ := v.(map[string]any)
		v = o[k]
	}
	return v
}

// TestSeatTurnLifecycle: a turn starts from a wake's trigger with the
// knowledge block its query ranks, its seat claimed on the node; its
// writes derive their ids; it ends once. A re-run of the unit is the next
// attempt, naming the one before, and repeating its calls answers them
// from the ledger: one item, the same op id and position. The node's
// floor table holds its own last write on each log and the trigger, and
// every seat read carries it without the caller sending it.
func TestSeatTurnLifecycle(t *testing.T) {
	n, err := node.Open(ctxT(t), node.Config{DataDir: t.TempDir(), Name: "n1", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	url := seatURL(t, n)
	setup := seatOf(t, url, "seat-setup", "setup")
	must(t, setup, "create_project", map[string]any{"key": "ENG", "name": "Engineering"})
	must(t, setup, "create_space", map[string]any{"key": "DOCS", "name": "Docs"})
	page := must(t, setup, "create_page", map[string]any{"space": "DOCS", "title": "Deploy runbook", "body": "How to deploy the api safely."})
	trigger, _ := page["position"].(string)

	first := seatOf(t, url, "seat-a", "unit-1")
	st := must(t, first, "start_turn", map[string]any{"trigger_position": trigger, "query": "deploy", "knowledge_limit": 3})
	if field(st, "turn", "attempt") != 1.0 || field(st, "turn", "claimed") != true || field(st, "turn", "placement", "node") != "n1" ||
		field(st, "turn", "trigger_position") != trigger || field(st, "level") != "linearizable" {
		t.Fatalf("start_turn: %v", st)
	}
	hits, _ := field(st, "knowledge", "hits").([]any)
	if len(hits) != 1 || field(hits[0].(map[string]any), "title") != "Deploy runbook" || field(st, "knowledge", "level") != "linearizable" {
		t.Fatalf("the knowledge block: %v", field(st, "knowledge"))
	}
	if field(st, "floors", engine.StreamPages) != trigger {
		t.Fatalf("the turn's floors: %v, want the trigger %s on the pages log", field(st, "floors"), trigger)
	}
	a := must(t, first, "create_work_item", map[string]any{"project": "ENG", "title": "ship it"})
	// The floor table: this node's own last write, on its own log.
	seat := tools.Deps{Surface: tools.Seat, Floors: n.SeatFloors()}
	if got := seat.ReadOptions(context.Background(), engine.StreamTracker).MinPosition; got == nil || got.Token() != a["position"] {
		t.Fatalf("a seat read's floor on the tracker log is %v, want the node's last write %v", got, a["position"])
	}
	if got := seat.ReadOptions(context.Background(), engine.StreamPages).MinPosition; got == nil || got.Token() != trigger {
		t.Fatalf("a seat read's floor on the pages log is %v, want %s", got, trigger)
	}
	end := must(t, first, "end_turn", map[string]any{"outcome": "done", "summary": "filed it"})
	if field(end, "turn", "outcome") != "done" || field(end, "turn", "ended_at") == nil {
		t.Fatalf("end_turn: %v", end)
	}
	must(t, first, "end_turn", map[string]any{"outcome": "done", "summary": "filed it"})
	refused(t, first, "end_turn", map[string]any{"outcome": "failed"}, engine.CodeConflict)

	// The unit run again: the next attempt; its repeated call is answered
	// from the ledger.
	rerun := seatOf(t, url, "seat-a", "unit-1")
	st2 := must(t, rerun, "start_turn", map[string]any{})
	if field(st2, "turn", "attempt") != 2.0 || field(st2, "turn", "previous", "outcome") != "done" || field(st2, "turn", "claimed") != false ||
		field(st2, "turn", "unit_started_at") != field(st, "turn", "unit_started_at") {
		t.Fatalf("the re-run's start: %v", st2)
	}
	a2 := must(t, rerun, "create_work_item", map[string]any{"project": "ENG", "title": "ship it"})
	if a2["op_id"] != a["op_id"] || a2["position"] != a["position"] {
		t.Fatalf("the re-run's call: %v, want the first run's %v", a2, a)
	}
	var items int
	if err := n.DB().QueryRow(`SELECT count(*) FROM tracker_items`).Scan(&items); err != nil || items != 1 {
		t.Fatalf("%d items (%v), want 1", items, err)
	}

	other := seatOf(t, url, "seat-b", "unit-2")
	refused(t, other, "end_turn", map[string]any{"outcome": "done"}, engine.CodeNotFound)
	refused(t, other, "start_turn", map[string]any{"trigger_position": engine.StreamTracker + "@1:999999"}, engine.CodeInvalidArgument)
	refused(t, other, "start_turn", map[string]any{"trigger_position": "CREWLET_ELSEWHERE_LOG@1:1"}, engine.CodeWrongStream)
	refused(t, other, "start_turn", map[string]any{"trigger_position": engine.StreamTracker + "@2:1"}, engine.CodeWrongStream)
	refused(t, other, "start_turn", map[string]any{"query": "()"}, engine.CodeInvalidArgument)
	if turns, err := n.Units().Turns(ctxT(t), "unit-2"); err != nil || len(turns) != 0 {
		t.Fatalf("refused starts recorded turns: %v %v", turns, err)
	}

	// The turn named in _meta as well as in the headers must be the same.
	var req mcpgo.CallToolRequest
	req.Params.Name = "list_projects"
	req.Params.Arguments = map[string]any{}
	req.Params.Meta = mcpgo.NewMetaFromMap(map[string]any{tools.MetaSeat: "seat-b", tools.MetaUnit: "unit-9"})
	res, err := other.CallTool(ctxT(t), req)
	if err != nil || !res.IsError || !strings.Contains(textOf(res), "name one turn") {
		t.Fatalf("_meta naming another turn than the headers: %v %v", textOf(res), err)
	}
}

// TestSeatClaimedOnlyWhenLevel: a node whose tracker copy is behind the
// log (its applier failing, inside its retry budget) keeps the seat it
// holds and claims no new one, and crewlet retention status's answer
// shows the placement and that the node claims none; level again, it
// claims.
func TestSeatClaimedOnlyWhenLevel(t *testing.T) {
	var failing atomic.Bool
	n, err := node.Open(ctxT(t), node.Config{DataDir: t.TempDir(), Name: "n1", Logger: testLogger(t),
		ReadBudget: 300 * time.Millisecond, WriteWait: 300 * time.Millisecond, ApplyRetryBudget: time.Minute, HeartbeatInterval: 100 * time.Millisecond,
		Hooks: node.Hooks{BeforeApplyCommit: func(d engine.Domain, _ uint64) error {
			if d == engine.DomainTracker && failing.Load() {
				return errors.New("injected: the disk refuses the apply")
			}
			return nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	url := seatURL(t, n)
	a := seatOf(t, url, "seat-a", "a-1")
	must(t, a, "start_turn", map[string]any{})
	must(t, a, "create_project", map[string]any{"key": "ENG", "name": "Engineering"})

	failing.Store(true)
	if m := must(t, a, "create_work_item", map[string]any{"project": "ENG", "title": "lands, not applied"}); m["outcome"] != "pending" {
		t.Fatalf("a write the applier cannot apply: %v", m)
	}
	if st := must(t, seatOf(t, url, "seat-a", "a-2"), "start_turn", map[string]any{}); field(st, "turn", "placement", "node") != "n1" {
		t.Fatalf("a held seat on a node behind: %v", st)
	}
	m := refused(t, seatOf(t, url, "seat-b", "b-1"), "start_turn", map[string]any{}, engine.CodeBehind)
	if msg, _ := m["message"].(string); !strings.Contains(msg, "claims no new ones") {
		t.Fatalf("the refusal: %v", m)
	}
	var ans any
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := n.Retention().Answer(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		ans = got.Seats
		if s := got.Seats; s != nil && len(s.Seats) == 1 && s.Seats[0].Node == "n1" && len(s.Nodes) == 1 && !s.Nodes[0].Claims &&
			strings.HasPrefix(s.Nodes[0].Why, "behind: ") && s.Nodes[0].Holds == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the retention answer's seats: %+v", ans)
		}
		time.Sleep(100 * time.Millisecond)
	}

	failing.Store(false)
	deadline = time.Now().Add(10 * time.Second)
	for {
		res := callTool(t, seatOf(t, url, "seat-b", "b-2"), "start_turn", map[string]any{})
		if !res.IsError {
			if m := object(t, res); field(m, "turn", "claimed") != true {
				t.Fatalf("level again: %v", m)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("level again, still refused: %s", textOf(res))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
