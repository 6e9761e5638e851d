package tools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb"
)

// The knowledge base's lifecycle tools.
const (
	NameGetSpace         = "get_space"
	NameListPageVersions = "list_page_versions"
	NameCommentOnPage    = "comment_on_page"
)

// The paging arguments of the knowledge base's listings. A cursor carries
// the first page's position and where the page ended: later pages read at
// least there, and a cursor from another query is refused.
var (
	kbLimitParam  = param{name: "limit", kind: kindInteger, min: 1, max: kb.MaxListLimit, desc: fmt.Sprintf("Page size (default %d).", kb.DefaultListLimit)}
	kbCursorParam = param{name: "cursor", kind: kindString, maxBytes: 1024, desc: "next_cursor of the previous page."}
)

// GetSpace is get_space {key}.
func GetSpace(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := []param{{name: "key", kind: kindString, required: true, nonEmpty: true, maxBytes: maxProjectKey, desc: spaceKeyDesc}}
	tool := newTool(NameGetSpace, "One space: settings, archived, page count, version.",
		params, readAnnotations("Get space"), outputSchema[kb.SpaceRead]())
	return tool, d.readHandler(NameGetSpace, params, func(a args) *engine.Refusal { return checkSpaceKey("key", a.str("key")) },
		func(ctx context.Context, a args) (any, error) {
			return d.kb().GetSpace(ctx, d.readOptions(ctx, engine.StreamPages), a.str("key"))
		})
}

// ListPageVersions is list_page_versions {id, cursor, limit}.
func ListPageVersions(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := []param{{name: "id", kind: kindString, required: true, nonEmpty: true, maxBytes: 64, desc: pageIDDesc}, kbCursorParam, kbLimitParam}
	tool := newTool(NameListPageVersions, "A page's versions, newest first: who, when, position. get_page with version reads one.",
		params, readAnnotations("List page versions"), outputSchema[kb.VersionList]())
	return tool, d.readHandler(NameListPageVersions, params, nil, func(ctx context.Context, a args) (any, error) {
		res, err := d.kb().ListPageVersions(ctx, d.readOptions(ctx, engine.StreamPages), a.str("id"), a.str("cursor"), int(a.uint("limit")))
		if res.Versions == nil {
			res.Versions = []kb.PageVersion{}
		}
		return res, err
	})
}

// CommentOnPage is comment_on_page {id, body, comment_id, delete}. The
// author is who asks (the seat, or the operator), never an argument; only
// the author edits or deletes a comment.
func CommentOnPage(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.withOpID([]param{
		{name: "id", kind: kindString, required: true, nonEmpty: true, maxBytes: 64, desc: pageIDDesc},
		{name: "body", kind: kindString, long: true, maxBytes: kb.MaxCommentBytes, desc: "Markdown."},
		{name: "comment_id", kind: kindString, maxBytes: 64, desc: "Your comment to edit or delete."},
		{name: "delete", kind: kindBool, desc: "With comment_id: delete it."},
	})
	tool := newTool(NameCommentOnPage,
		d.writeDesc("Comment on a page, or edit/delete your comment; get_page lists them."),
		params,
		// Not idempotent: each call without op_id adds another comment.
		// Not destructive: a delete takes only the caller's own words.
		writeAnnotations("Comment on page", false),
		outputSchema[kb.CommentWrite]())
	return tool, d.writeHandler(NameCommentOnPage, params, nil, func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
		res, err := d.kb().CommentOnPage(ctx, w, kb.CommentEdit{Page: a.str("id"), ID: a.str("comment_id"), Body: a.str("body"), Delete: a.flag("delete")})
		d.explain(&res.WriteResult)
		return res.WriteResult, res, err
	})
}
