package rest_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/rest"
)

// TestKBRoutes: GET /api/v1/spaces and /api/v1/pages/{id} over a real
// node answer list_spaces' and get_page's JSON at stale by default, honour
// min_position, and refuse a purged page deleted.
func TestKBRoutes(t *testing.T) {
	ctx := context.Background()
	n := enginetest.OpenNode(t, node.Config{})
	srv := httptest.NewServer(rest.Handler(rest.Config{Routes: rest.RoutesOf(n.Services()...), Logger: enginetest.Logger()}))
	t.Cleanup(srv.Close)
	r := &rig{t: t, n: n, srv: srv}
	svc := n.Pages()
	if _, err := svc.CreateSpace(ctx, engine.WriteOptions{}, "DOCS", "Docs"); err != nil {
		t.Fatal(err)
	}
	w, err := svc.CreatePage(ctx, engine.WriteOptions{}, kb.NewPage{Space: "DOCS", Title: "Runbook", Body: "Steps."})
	if err != nil || w.Page == nil {
		t.Fatalf("%+v %v", w, err)
	}
	a := r.get("/api/v1/spaces").served(t, engine.Stale)
	if sp := a.body["spaces"].([]any); len(sp) != 1 || sp[0].(map[string]any)["key"] != "DOCS" {
		t.Fatalf("spaces %s", a.raw)
	}
	a = r.get("/api/v1/pages/"+w.Page.ID, "min_position="+w.Position).served(t, engine.Stale)
	if p := a.body["page"].(map[string]any); p["title"] != "Runbook" || p["body"] != "Steps." {
		t.Fatalf("page %s", a.raw)
	}
	// A tracker position is another stream: refused, not waited for.
	if a := r.get("/api/v1/pages/"+w.Page.ID, "min_position=CREWLET_TRACKER_LOG@1:1"); a.body["refused"] != string(engine.CodeWrongStream) {
		t.Fatalf("wrong stream: %s", a.raw)
	}
	if a := r.get("/api/v1/pages/nope"); a.status != http.StatusBadRequest || a.body["refused"] != string(engine.CodeInvalidArgument) {
		t.Fatalf("bad id: %d %s", a.status, a.raw)
	}
	if _, err := svc.PurgePage(ctx, engine.WriteOptions{}, w.Page.ID); err != nil {
		t.Fatal(err)
	}
	if a := r.get("/api/v1/pages/"+w.Page.ID, "read_level=linearizable"); a.status != http.StatusGone || a.body["refused"] != string(engine.CodeDeleted) {
		t.Fatalf("purged: %d %s", a.status, a.raw)
	}
	// Without a knowledge base the routes answer not_found.
	bare := httptest.NewServer(rest.Handler(rest.Config{Routes: rest.RoutesOf(n.Tracker())}))
	t.Cleanup(bare.Close)
	resp, err := http.Get(bare.URL + "/api/v1/spaces")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("no knowledge base: %d", resp.StatusCode)
	}
}
