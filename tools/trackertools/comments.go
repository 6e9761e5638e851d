package trackertools

// list_comments: an item's whole comment thread, a page at a time
// (get_work_item shows the newest 50).

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/tools"
)

// CommentLister pages an item's comments (*tracker.Service).
type CommentLister interface {
	ListComments(ctx context.Context, r engine.ReadOptions, key, cursor string, limit int) (tracker.CommentPage, error)
}

var _ CommentLister = (*tracker.Service)(nil)

// NameListComments is list_comments {key, cursor, limit}.
const NameListComments = "list_comments"

// listComments is list_comments {key, cursor, limit}.
func listComments(d env) (mcp.Tool, server.ToolHandlerFunc) {
	return itemPageTool(d, NameListComments, "An item's comments, newest first, with ids for comment_on_work_item's edits.",
		"List comments", tools.OutputSchema[tracker.CommentPage](),
		func(ctx context.Context, r engine.ReadOptions, key, cursor string, limit int) (any, error) {
			l, _ := d.svc.(CommentLister)
			return l.ListComments(ctx, r, key, cursor, limit)
		})
}
