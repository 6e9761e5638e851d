package rest_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/rest"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestBrowseRoutes: the routes the dashboard reads beside the tools'
// answers — a space's pages, both searches and an item's history — answer
// at stale by default with the level and position like every read route,
// and refuse bad input with invalid_argument.
func TestBrowseRoutes(t *testing.T) {
	ctx := context.Background()
	n := enginetest.OpenNode(t, node.Config{})
	srv := httptest.NewServer(rest.Handler(rest.Config{Routes: rest.RoutesOf(n.Services()...), Logger: enginetest.Logger()}))
	t.Cleanup(srv.Close)
	r := &rig{t: t, n: n, srv: srv}

	if _, err := n.Pages().CreateSpace(ctx, engine.WriteOptions{}, "DOCS", "Docs"); err != nil {
		t.Fatal(err)
	}
	top, err := n.Pages().CreatePage(ctx, engine.WriteOptions{}, kb.NewPage{Space: "DOCS", Title: "Runbook", Body: "Restart the broker."})
	if err != nil {
		t.Fatal(err)
	}
	child, err := n.Pages().CreatePage(ctx, engine.WriteOptions{}, kb.NewPage{Space: "DOCS", Parent: top.Page.ID, Title: "Broker", Body: "Steps."})
	if err != nil {
		t.Fatal(err)
	}
	a := r.get("/api/v1/pages", q("space", "DOCS"), "min_position="+child.Position).served(t, engine.Stale)
	if ps := a.body["pages"].([]any); len(ps) != 2 {
		t.Fatalf("pages of DOCS: %s", a.raw)
	}
	a = r.get("/api/v1/pages", q("space", "DOCS"), q("parent", top.Page.ID)).served(t, engine.Stale)
	if ps := a.body["pages"].([]any); len(ps) != 1 || ps[0].(map[string]any)["title"] != "Broker" {
		t.Fatalf("children of the runbook: %s", a.raw)
	}
	r.get("/api/v1/pages", q("space", "DOCS"), q("limit", "0")).refused(t, engine.CodeInvalidArgument).key(t, "limit")
	a = r.get("/api/v1/search/pages", q("q", "broker"), q("read_level", "linearizable")).served(t, engine.Linearizable)
	if hs := a.body["hits"].([]any); len(hs) != 2 {
		t.Fatalf("search broker: %s", a.raw)
	}

	tr := n.Tracker()
	if _, err := tr.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		t.Fatal(err)
	}
	made, err := tr.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "Rotate the keys"})
	if err != nil {
		t.Fatal(err)
	}
	status := tracker.StatusInProgress
	if _, err := tr.UpdateWorkItem(ctx, engine.WriteOptions{}, made.Item.Key, 0, tracker.ItemPatch{Status: &status}); err != nil {
		t.Fatal(err)
	}
	a = r.get("/api/v1/work-items/ENG-1/history", q("read_level", "linearizable")).served(t, engine.Linearizable)
	changes := a.body["changes"].([]any)
	last := changes[len(changes)-1].(map[string]any)
	if last["field"] != "status" || last["old"] != tracker.StatusOpen || last["new"] != tracker.StatusInProgress {
		t.Fatalf("history of ENG-1: %s", a.raw)
	}
	r.get("/api/v1/work-items/ENG-9/history", q("read_level", "linearizable")).refused(t, engine.CodeNotFound)
	a = r.get("/api/v1/search/work-items", q("q", "rotate"), q("project", "ENG"), q("read_level", "linearizable")).served(t, engine.Linearizable)
	if hs := a.body["hits"].([]any); len(hs) != 1 || hs[0].(map[string]any)["key"] != "ENG-1" {
		t.Fatalf("search rotate: %s", a.raw)
	}
	r.get("/api/v1/search/work-items", q("q", "rotate"), q("limit", "1000")).refused(t, engine.CodeInvalidArgument).key(t, "limit")
}
