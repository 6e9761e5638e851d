package rest_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestWorkItemsCarryTheirFieldsAndPage: /api/v1/work-items answers the
// item fields, takes list_work_items' filters and pages by its cursor; a
// cursor of another query is refused 400.
func TestWorkItemsCarryTheirFieldsAndPage(t *testing.T) {
	r := newRig(t, node.Config{})
	ctx := context.Background()
	svc := r.n.Tracker()
	if _, err := svc.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"urgent", "none", "high"} {
		if _, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: p, Priority: p, Due: "2026-05-01", Type: "epic"}); err != nil {
			t.Fatal(err)
		}
	}
	a := r.get("/api/v1/work-items", "priority=high,urgent", "sort=priority", "limit=1").served(t, engine.Stale)
	items := a.body["items"].([]any)
	first := items[0].(map[string]any)
	if len(items) != 1 || first["key"] != "ENG-1" || first["priority"] != "urgent" || first["due"] != "2026-05-01" || first["type"] != "epic" || first["estimate"] != float64(0) {
		t.Fatalf("first page %s", a.raw)
	}
	cursor := url.QueryEscape(a.body["next_cursor"].(string))
	b := r.get("/api/v1/work-items", "priority=high,urgent", "sort=priority", "limit=1", "cursor="+cursor).served(t, engine.Stale)
	if items := b.body["items"].([]any); len(items) != 1 || items[0].(map[string]any)["key"] != "ENG-3" || b.body["next_cursor"] != nil {
		t.Fatalf("second page %s", b.raw)
	}
	if c := r.get("/api/v1/work-items", "priority=high", "sort=priority", "cursor="+cursor); c.status != http.StatusBadRequest {
		t.Fatalf("a cursor of another query: %d %s", c.status, c.raw)
	}
}
