//go:build integration

package mcp

import (
	"fmt"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/tools"
)

// TestResourceListingPagesThroughEverything: resources/list pages
// through every project, space, item and page of a real node, each once,
// the items and pages past one page of the listing and past one page of
// the services' own lists; a cursor it never gave is refused.
func TestResourceListingPagesThroughEverything(t *testing.T) {
	n := realNode(t)
	ctx := ctxT(t)
	want := map[string]bool{}
	for _, p := range []string{"ENG", "OPS"} {
		if _, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, p, p); err != nil {
			t.Fatal(err)
		}
		want["crewlet://projects/"+p] = true
	}
	// 230 items: more than a listing page (100) and than one page of
	// list_work_items (200).
	for i := range 230 {
		p := []string{"ENG", "OPS"}[i%2]
		w, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: p, Title: fmt.Sprint("item ", i)})
		if err != nil {
			t.Fatal(err)
		}
		want["crewlet://work-items/"+w.Item.Key] = true
	}
	for _, s := range []string{"DOCS", "RUN"} {
		if _, err := n.Pages().CreateSpace(ctx, engine.WriteOptions{}, s, s); err != nil {
			t.Fatal(err)
		}
		want["crewlet://spaces/"+s] = true
		for i := range 60 {
			w, err := n.Pages().CreatePage(ctx, engine.WriteOptions{}, kb.NewPage{Space: s, Title: fmt.Sprint("page ", i)})
			if err != nil {
				t.Fatal(err)
			}
			want["crewlet://pages/"+w.Page.ID] = true
		}
	}
	c := inProcess(t, New(Options{Version: "test", Logger: testLogger(t)}, catalogueOf(n.Tracker(), n.Pages())))
	seen := map[string]int{}
	var cursor mcpgo.Cursor
	pages := 0
	for {
		req := mcpgo.ListResourcesRequest{}
		req.Params.Cursor = cursor
		res, err := c.ListResourcesByPage(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range res.Resources {
			seen[r.URI]++
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	for uri := range want {
		if seen[uri] != 1 {
			t.Errorf("%s listed %d times", uri, seen[uri])
		}
	}
	if len(seen) != len(want) || pages < 4 {
		t.Errorf("%d resources in %d pages, want %d in at least 4", len(seen), pages, len(want))
	}
	if _, _, err := catalogueOf(n.Tracker()).ListResources(ctx, tools.Deps{Surface: tools.Operator}, "bm90IG91cnM="); err == nil {
		t.Error("a cursor resources/list never gave was taken")
	}
}
