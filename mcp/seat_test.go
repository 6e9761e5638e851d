package mcp

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/internal/httpedge"
	"github.com/crewlet/crewlet/tools/trackertools"
)

func seatClient(t *testing.T, url, unit string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{
		"Authorization": "Bearer " + testToken, HeaderSeat: "seat-1", HeaderUnit: unit}))
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	return c
}

// TestSeatTurnRerun: a turn killed mid-way and run again under the same
// unit repeats the same calls and writes nothing twice; a call the re-run
// words differently is a new write (the documented limit).
func TestSeatTurnRerun(t *testing.T) {
	n, err := node.Open(ctxT(t), node.Config{DataDir: t.TempDir(), Name: "n1", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	mux := http.NewServeMux()
	mux.Handle("/seat/mcp", httpedge.NewGuard(httpedge.GuardOptions{Token: testToken, Logger: testLogger(t)}).Operator(SeatHandler(NewSeatServer(n.Units(), "test", testLogger(t), catalogueOf(n.Tracker())), testLogger(t))))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	url := ts.URL + "/seat/mcp"

	// The seat toolset takes no op_id.
	first := seatClient(t, url, "unit-42")
	list, err := first.ListTools(ctxT(t), mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		if _, ok := tl.InputSchema.Properties["op_id"]; ok {
			t.Fatalf("seat tool %s takes op_id", tl.Name)
		}
	}
	call := func(c *client.Client, name string, args map[string]any) map[string]any {
		t.Helper()
		res := callTool(t, c, name, args)
		if res.IsError {
			t.Fatalf("%s: %s", name, textOf(res))
		}
		return object(t, res)
	}
	p := call(first, trackertools.NameCreateProject, map[string]any{"key": "ENG", "name": "Engineering"})
	a := call(first, trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "first thing"})
	// The turn dies here. A re-run of the same unit, on a new connection,
	// repeats the same calls and goes on.
	rerun := seatClient(t, url, "unit-42")
	p2 := call(rerun, trackertools.NameCreateProject, map[string]any{"key": "ENG", "name": "Engineering"})
	a2 := call(rerun, trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "first thing"})
	if p2["op_id"] != p["op_id"] || a2["op_id"] != a["op_id"] || a2["position"] != a["position"] {
		t.Fatalf("re-run derived other ids: %v/%v %v/%v", p["op_id"], p2["op_id"], a["op_id"], a2["op_id"])
	}
	b := call(rerun, trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "second thing"})
	if b["op_id"] == a["op_id"] {
		t.Fatal("a different call got the same id")
	}
	// Reworded: a new operation, a second item.
	call(rerun, trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "First thing"})
	var items int
	n.DB().QueryRow(`SELECT count(*) FROM tracker_items`).Scan(&items)
	if items != 3 {
		t.Fatalf("%d items, want 3 (first, second, reworded first)", items)
	}
	// Another unit making the same call is another operation.
	other := seatClient(t, url, "unit-43")
	c := call(other, trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "first thing"})
	if c["op_id"] == a["op_id"] {
		t.Fatal("two units derived one id")
	}

	// A request without its unit is refused before any tool runs.
	req, _ := http.NewRequest(http.MethodPost, url, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("no unit: %d", resp.StatusCode)
	}
}

// TestSeatTriggerFloor: a seat's reads carry the trigger position as a
// floor on their own domain's log only: a trigger past what the node holds
// refuses behind; one on another log holds nothing up.
func TestSeatTriggerFloor(t *testing.T) {
	n, err := node.Open(ctxT(t), node.Config{DataDir: t.TempDir(), Name: "n1", Logger: testLogger(t), ReadBudget: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	mux := http.NewServeMux()
	mux.Handle("/seat/mcp", httpedge.NewGuard(httpedge.GuardOptions{Token: testToken, Logger: testLogger(t)}).Operator(SeatHandler(NewSeatServer(n.Units(), "test", testLogger(t), catalogueOf(n.Tracker())), testLogger(t))))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	withTrigger := func(trigger string) *client.Client {
		c, err := client.NewStreamableHttpClient(ts.URL+"/seat/mcp", transport.WithHTTPHeaders(map[string]string{
			"Authorization": "Bearer " + testToken, HeaderSeat: "s", HeaderUnit: "u-" + trigger, HeaderTriggerPosition: trigger}))
		if err != nil {
			t.Fatal(err)
		}
		start(t, c)
		return c
	}
	ahead := withTrigger("CREWLET_TRACKER_LOG@1:999999")
	res := callTool(t, ahead, trackertools.NameListProjects, map[string]any{})
	if !res.IsError || object(t, res)["refused"] != "behind" {
		t.Fatalf("trigger ahead of the node: %v", object(t, res))
	}
	other := withTrigger("CREWLET_PAGES_LOG@1:999999")
	res = callTool(t, other, trackertools.NameListProjects, map[string]any{})
	if res.IsError {
		t.Fatalf("a pages trigger held up a tracker read: %v", object(t, res))
	}
}
