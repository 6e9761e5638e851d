package kbtools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/tools"
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
	kbLimitParam  = tools.Param{Name: "limit", Kind: tools.KindInteger, Min: 1, Max: kb.MaxListLimit, Desc: fmt.Sprintf("Page size (default %d).", kb.DefaultListLimit)}
	kbCursorParam = tools.Param{Name: "cursor", Kind: tools.KindString, MaxBytes: 1024, Desc: "next_cursor of the previous page."}
)

// getSpace is get_space {key}.
func getSpace(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := []tools.Param{{Name: "key", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: maxSpaceKey, Desc: spaceKeyDesc}}
	tool := tools.NewTool(NameGetSpace, "One space: settings, archived, page count, version.",
		params, tools.ReadAnnotations("Get space"), tools.OutputSchema[kb.SpaceRead]())
	return tool, d.ReadHandler(NameGetSpace, params, func(a tools.Args) *engine.Refusal { return checkSpaceKey("key", a.Str("key")) },
		func(ctx context.Context, a tools.Args) (any, error) {
			return d.kb().GetSpace(ctx, d.ReadOptions(ctx, engine.StreamPages), a.Str("key"))
		})
}

// listPageVersions is list_page_versions {id, cursor, limit}.
func listPageVersions(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := []tools.Param{{Name: "id", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: 64, Desc: pageIDDesc}, kbCursorParam, kbLimitParam}
	tool := tools.NewTool(NameListPageVersions, "A page's versions, newest first: who, when, position. get_page with version reads one.",
		params, tools.ReadAnnotations("List page versions"), tools.OutputSchema[kb.VersionList]())
	return tool, d.ReadHandler(NameListPageVersions, params, nil, func(ctx context.Context, a tools.Args) (any, error) {
		res, err := d.kb().ListPageVersions(ctx, d.ReadOptions(ctx, engine.StreamPages), a.Str("id"), a.Str("cursor"), int(a.Uint("limit")))
		if res.Versions == nil {
			res.Versions = []kb.PageVersion{}
		}
		return res, err
	})
}

// commentOnPage is comment_on_page {id, body, comment_id, delete}. The
// author is who asks (the seat, or the operator), never an argument; only
// the author edits or deletes a comment.
func commentOnPage(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.WithOpID([]tools.Param{
		{Name: "id", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: 64, Desc: pageIDDesc},
		{Name: "body", Kind: tools.KindString, Long: true, MaxBytes: kb.MaxCommentBytes, Desc: "Markdown."},
		{Name: "comment_id", Kind: tools.KindString, MaxBytes: 64, Desc: "Your comment to edit or delete."},
		{Name: "delete", Kind: tools.KindBool, Desc: "With comment_id: delete it."},
	})
	tool := tools.NewTool(NameCommentOnPage,
		d.WriteDesc("Comment on a page, or edit/delete your comment; get_page lists them."),
		params,
		// Not idempotent: each call without op_id adds another comment.
		// Not destructive: a delete takes only the caller's own words.
		tools.WriteAnnotations("Comment on page", false),
		tools.OutputSchema[kb.CommentWrite]())
	return tool, d.WriteHandler(NameCommentOnPage, params, nil, func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
		res, err := d.kb().CommentOnPage(ctx, w, kb.CommentEdit{Page: a.Str("id"), ID: a.Str("comment_id"), Body: a.Str("body"), Delete: a.Flag("delete")})
		d.Explain(&res.WriteResult)
		return res.WriteResult, res, err
	})
}
