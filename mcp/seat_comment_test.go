package mcp

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/crewlet/crewlet/internal/httpedge"
	"github.com/crewlet/crewlet/tools/trackertools"
)

// TestSeatEditsOnlyItsOwnComments: on the seat surface a comment's author
// is the seat calling; another seat's edit or delete of it is refused with
// a sentence, its own lands, and the history names the seat.
func TestSeatEditsOnlyItsOwnComments(t *testing.T) {
	n := realNode(t)
	mux := http.NewServeMux()
	mux.Handle("/seat/mcp", httpedge.NewGuard(httpedge.GuardOptions{Token: testToken, Logger: testLogger(t)}).Operator(SeatHandler(NewSeatServer(n.Units(), "test", testLogger(t), catalogueOf(n.Tracker())), testLogger(t))))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	seat := func(name string) caller {
		c, err := client.NewStreamableHttpClient(ts.URL+"/seat/mcp", transport.WithHTTPHeaders(map[string]string{
			"Authorization": "Bearer " + testToken, HeaderSeat: name, HeaderUnit: "unit-" + name}))
		if err != nil {
			t.Fatal(err)
		}
		start(t, c)
		return caller{t, c}
	}
	ana, bo := seat("ana"), seat("bo")
	ana.applied(trackertools.NameCreateProject, map[string]any{"key": "ENG", "name": "Engineering"})
	ana.applied(trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "Login"})
	c := ana.applied(trackertools.NameCommentOnWorkItem, map[string]any{"key": "ENG-1", "body": "mine"})["comment"].(map[string]any)
	if c["author"] != "ana" {
		t.Fatalf("the seat's comment is by %v", c["author"])
	}
	bo.refused(trackertools.NameCommentOnWorkItem, map[string]any{"key": "ENG-1", "body": "now mine", "comment_id": c["id"]}, "invalid_argument")
	bo.refused(trackertools.NameCommentOnWorkItem, map[string]any{"key": "ENG-1", "comment_id": c["id"], "delete": true}, "invalid_argument")
	ana.applied(trackertools.NameCommentOnWorkItem, map[string]any{"key": "ENG-1", "body": "mine, edited", "comment_id": c["id"]})
	h := ana.applied(trackertools.NameListWorkItemHistory, map[string]any{"key": "ENG-1", "limit": 1})
	if ch := h["changes"].([]any)[0].(map[string]any); ch["field"] != "comment_edited" || ch["by"] != "seat:ana" {
		t.Fatalf("history: %v", ch)
	}
}
