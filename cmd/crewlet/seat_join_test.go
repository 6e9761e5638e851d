//go:build integration

package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/mcp"
	"github.com/crewlet/crewlet/tools"
)

// seatCall calls a tool as seat in unit through c (the turn in _meta)
// until it answers something other than a refusal worth coming back for,
// and returns the answer and the data node that gave it.
func seatCall(t *testing.T, c *client.Client, seat, unit, name string, args map[string]any) (map[string]any, string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
		req := mcpgo.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		req.Params.Meta = mcpgo.NewMetaFromMap(map[string]any{tools.MetaSeat: seat, tools.MetaUnit: unit})
		res, err := c.CallTool(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("%s(%v): %v", name, args, err)
		}
		var node string
		if res.Meta != nil {
			node, _ = res.Meta.GetMetaField(mcp.MetaDataNode).(string)
		}
		if !res.IsError {
			if node == "" {
				t.Fatalf("%s answered with no data node in _meta: %s", name, resultText(res))
			}
			return resultObject(res), node
		}
		switch resultObject(res)["refused"] {
		case "broker_unreachable", "no_quorum", "behind", "no_data_node":
		default:
			return resultObject(res), node
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s(%v) still refused after 60 s: %s", name, args, resultText(res))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestJoinedSeat: `crewlet mcp --join --seat --name runner-1` is the seat
// surface of a node without data, over real stdio: a turn started there
// places its seat on runner-1, its calls (the turn in _meta) go to a
// sound data node of three `crewlet serve` children, and killing the one
// answering moves them to another, where the unit's repeated call is
// answered from the ledger (one item). A seat started on a data node's
// /seat/mcp is held by that node. `crewlet retention status` (text and
// --json) shows where each seat is held and that every level node
// claims.
func TestJoinedSeat(t *testing.T) {
	if testing.Short() {
		t.Skip("boots three processes")
	}
	f := startChildFleet(t)
	c := StdioClient(t, "mcp", "--join", strings.Join(f.clientURLs, ","), "--token-file", f.tokenFile, "--seat", "--name", "runner-1", "--log-format", "json")

	list, err := c.ListTools(context.Background(), mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range list.Tools {
		names[tl.Name] = true
		if _, ok := tl.InputSchema.Properties["op_id"]; ok {
			t.Fatalf("the joined seat surface's %s takes op_id", tl.Name)
		}
	}
	if !names["start_turn"] || !names["end_turn"] || names["purge_work_item"] {
		t.Fatalf("the joined seat surface lists %v", names)
	}

	st, _ := seatCall(t, c, "triage", "u-1", "start_turn", map[string]any{})
	if p, _ := st["turn"].(map[string]any)["placement"].(map[string]any); p["node"] != "runner-1" {
		t.Fatalf("a turn on the joined node: %v", st)
	}
	seatCall(t, c, "triage", "u-1", "create_project", map[string]any{"key": "ENG", "name": "Engineering"})
	w, first := seatCall(t, c, "triage", "u-1", "create_work_item", map[string]any{"project": "ENG", "title": "one"})
	if w["outcome"] != "applied" && w["outcome"] != "pending" {
		t.Fatalf("create through the joined seat: %v", w)
	}
	f.serves[int(first[1]-'1')].Kill(t)
	got, second := seatCall(t, c, "triage", "u-1", "get_work_item", map[string]any{"key": "ENG-1"})
	if second == first || got["item"].(map[string]any)["title"] != "one" {
		t.Fatalf("with %s killed, %s reads %v", first, second, got)
	}
	// The unit run again elsewhere: the same call is the same operation.
	seatCall(t, c, "triage", "u-1", "start_turn", map[string]any{})
	again, _ := seatCall(t, c, "triage", "u-1", "create_work_item", map[string]any{"project": "ENG", "title": "one"})
	if again["op_id"] != w["op_id"] {
		t.Fatalf("the re-run's create: %v, want op %v", again, w["op_id"])
	}
	listed, _ := seatCall(t, c, "triage", "u-1", "list_work_items", map[string]any{"project": "ENG"})
	if items, _ := listed["items"].([]any); len(items) != 1 {
		t.Fatalf("ENG holds %v, want one item", listed)
	}
	end, _ := seatCall(t, c, "triage", "u-1", "end_turn", map[string]any{"outcome": "done"})
	if end["turn"].(map[string]any)["attempt"] != 2.0 {
		t.Fatalf("end_turn: %v", end)
	}

	// A seat on a data node's own /seat/mcp is held there.
	live := f.serves[(int(first[1]-'1')+1)%3]
	hc := streamableClient(t, live.BaseURL+"/seat/mcp", map[string]string{"Authorization": "Bearer " + live.Token, mcp.HeaderSeat: "review", mcp.HeaderUnit: "r-1"})
	held := callRetry(t, hc, "start_turn", map[string]any{})
	holder, _ := held["turn"].(map[string]any)["placement"].(map[string]any)["node"].(string)
	if holder == "" || holder == "runner-1" {
		t.Fatalf("a turn on a data node: %v", held)
	}

	var a fleet.Answer
	if err := json.Unmarshal([]byte(retentionStatus(t, f.bin, live, "--json")), &a); err != nil {
		t.Fatal(err)
	}
	if a.Seats == nil || len(a.Seats.Seats) != 2 || a.Seats.Seats[0].Seat != "review" || a.Seats.Seats[0].Node != holder ||
		a.Seats.Seats[1].Seat != "triage" || a.Seats.Seats[1].Node != "runner-1" || a.Seats.Seats[1].Turns != 2 {
		t.Fatalf("retention status --json seats: %+v", a.Seats)
	}
	text := retentionStatus(t, f.bin, live)
	for _, want := range []string{"node runner-1: holds 1 seat(s), claims new seats", "SEAT", "HELD_BY", "triage", "review"} {
		if !strings.Contains(text, want) {
			t.Errorf("retention status lacks %q:\n%s", want, text)
		}
	}
}
