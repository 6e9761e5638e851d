package trackertools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/tools"
)

// NameSimilarWorkItems is the duplicate finder's tool.
const NameSimilarWorkItems = "similar_work_items"

// SimilarFinder is the tracker service's duplicate finder
// (*tracker.Service); similar_work_items is offered where the service is
// one.
type SimilarFinder interface {
	SimilarWorkItems(ctx context.Context, r engine.ReadOptions, q tracker.SimilarQuery) (tracker.SimilarResult, error)
}

var _ SimilarFinder = (*tracker.Service)(nil)

// similarWorkItems is similar_work_items {title, description, key,
// limit} over every project (a duplicate filed elsewhere is one too): the likely duplicates of an item about to be filed
// (its title and description) or of one already filed (its key), what a
// tracker's "similar issues" shows beside a new issue's form.
func similarWorkItems(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := []tools.Param{
		{Name: "title", Kind: tools.KindString, MaxBytes: tracker.MaxTitleBytes, Desc: "The new item's title."},
		{Name: "description", Kind: tools.KindString, Long: true, MaxBytes: tracker.MaxDescriptionBytes, Desc: "Its description."},
		{Name: "key", Kind: tools.KindString, MaxBytes: maxItemKey, Desc: "Or a filed item's key."},
		{Name: "limit", Kind: tools.KindInteger, Min: 1, Max: tracker.MaxSimilarLimit, Desc: fmt.Sprintf("Default %d.", tracker.DefaultSimilarLimit)},
	}
	tool := tools.NewTool(NameSimilarWorkItems,
		"Likely duplicates of a new item (title, description) or a filed one (key), in any project. Call before create_work_item.",
		params, tools.ReadAnnotations("Similar work items"), tools.OutputSchema[tracker.SimilarResult]())
	check := func(a tools.Args) *engine.Refusal {
		if a.Has("key") {
			if r := checkItemKey("key", a.Str("key")); r != nil {
				return r
			}
		}
		return nil
	}
	return tool, d.ReadHandler(NameSimilarWorkItems, params, check, func(ctx context.Context, a tools.Args) (any, error) {
		limit := tracker.DefaultSimilarLimit
		if a.Has("limit") {
			limit = int(a.Uint("limit"))
		}
		return d.svc.(SimilarFinder).SimilarWorkItems(ctx, d.ReadOptions(ctx, engine.StreamTracker), tracker.SimilarQuery{
			Title: a.Str("title"), Description: a.Str("description"), Key: a.Str("key"), Limit: limit})
	})
}
