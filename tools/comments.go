package tools

// list_comments: an item's whole comment thread, a page at a time
// (get_work_item shows the newest 50).

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// CommentLister pages an item's comments (*tracker.Service).
type CommentLister interface {
	ListComments(ctx context.Context, r engine.ReadOptions, key, cursor string, limit int) (tracker.CommentPage, error)
}

var _ CommentLister = (*tracker.Service)(nil)

// NameListComments is list_comments {key, cursor, limit}.
const NameListComments = "list_comments"

func init() {
	register(Entry{Build: ListComments, Read: true, Needs: needs[CommentLister], Toolset: ToolsetTracker})
}

// ListComments is list_comments {key, cursor, limit}.
func ListComments(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	return itemPageTool(d, NameListComments, "An item's comments, newest first, with ids for comment_on_work_item's edits.",
		"List comments", outputSchema[tracker.CommentPage](),
		func(ctx context.Context, r engine.ReadOptions, key, cursor string, limit int) (any, error) {
			l, _ := service[CommentLister](d)
			return l.ListComments(ctx, r, key, cursor, limit)
		})
}
