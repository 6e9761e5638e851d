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

// KB is the knowledge-base service the tools call (*kb.Service). Errors are
// *engine.Refusal for refusals; any other error is internal.
type KB interface {
	ListSpaces(ctx context.Context, r engine.ReadOptions) (kb.SpaceList, error)
	CreateSpace(ctx context.Context, w engine.WriteOptions, key, name string) (kb.SpaceWrite, error)
	UpdateSpace(ctx context.Context, w engine.WriteOptions, key string, ifMatch uint64, p kb.SpacePatch) (kb.SpaceWrite, error)
	CreatePage(ctx context.Context, w engine.WriteOptions, in kb.NewPage) (kb.PageWrite, error)
	GetPage(ctx context.Context, r engine.ReadOptions, id string) (kb.PageRead, error)
	ListPages(ctx context.Context, r engine.ReadOptions, f kb.PageFilter) (kb.PageList, error)
	UpdatePage(ctx context.Context, w engine.WriteOptions, id string, ifMatch uint64, p kb.PagePatch) (kb.PageWrite, error)
	SearchKnowledge(ctx context.Context, r engine.ReadOptions, q kb.SearchQuery) (kb.SearchResult, error)
	PurgePage(ctx context.Context, w engine.WriteOptions, id string) (kb.PurgeWrite, error)
	// The lifecycle (kb_life.go).
	ListSpacesPage(ctx context.Context, r engine.ReadOptions, f kb.SpaceFilter) (kb.SpaceList, error)
	GetSpace(ctx context.Context, r engine.ReadOptions, key string) (kb.SpaceRead, error)
	FindPage(ctx context.Context, r engine.ReadOptions, q kb.PageQuery) (kb.PageRead, error)
	ListPageVersions(ctx context.Context, r engine.ReadOptions, id, cursor string, limit int) (kb.VersionList, error)
	CommentOnPage(ctx context.Context, w engine.WriteOptions, in kb.CommentEdit) (kb.CommentWrite, error)
}

var _ KB = (*kb.Service)(nil)

// Knowledge-base tool names, fixed by the contract.
const (
	NameListSpaces      = "list_spaces"
	NameCreateSpace     = "create_space"
	NameUpdateSpace     = "update_space"
	NameCreatePage      = "create_page"
	NameGetPage         = "get_page"
	NameListPages       = "list_pages"
	NameUpdatePage      = "update_page"
	NameSearchKnowledge = "search_knowledge"
	NamePurgePage       = "purge_page"
)

func (d env) kb() KB { return d.svc }

var (
	spaceKeyDesc = "Space key: 2-10 upper-case letters and digits, a letter first (DOCS)."
	pageIDDesc   = "Page id: pg_ and 32 hex digits."
	editingDesc  = "open: pages take edits; locked: they refuse create, update and move."
)

// listSpaces is list_spaces {include_archived, limit, cursor}.
func listSpaces(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := []tools.Param{
		{Name: "include_archived", Kind: tools.KindBool, Desc: "Archived spaces too."},
		kbLimitParam, kbCursorParam,
	}
	tool := tools.NewTool(NameListSpaces,
		"List knowledge-base spaces by key: name, settings, page count and version.",
		params, tools.ReadAnnotations("List spaces"), tools.OutputSchema[kb.SpaceList]())
	return tool, d.ReadHandler(NameListSpaces, params, nil, func(ctx context.Context, a tools.Args) (any, error) {
		res, err := d.kb().ListSpacesPage(ctx, d.ReadOptions(ctx, engine.StreamPages),
			kb.SpaceFilter{IncludeArchived: a.Flag("include_archived"), Limit: int(a.Uint("limit")), Cursor: a.Str("cursor")})
		if res.Spaces == nil {
			res.Spaces = []kb.Space{}
		}
		return res, err
	})
}

// createSpace is create_space {key, name}.
func createSpace(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.WithOpID([]tools.Param{
		{Name: "key", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: maxSpaceKey, Desc: spaceKeyDesc},
		{Name: "name", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: kb.MaxNameBytes, Desc: "The space's display name (for example Engineering docs)."},
	})
	tool := tools.NewTool(NameCreateSpace,
		d.WriteDesc("Create a knowledge-base space (key and name), open for edits, no page template. An existing key is refused already_exists."),
		params,
		// Idempotent: a repeat with the same key has no further effect.
		tools.WriteAnnotations("Create space", true),
		tools.OutputSchema[kb.SpaceWrite]())
	return tool, d.WriteHandler(NameCreateSpace, params, func(a tools.Args) *engine.Refusal { return checkSpaceKey("key", a.Str("key")) },
		func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
			res, err := d.kb().CreateSpace(ctx, w, a.Str("key"), a.Str("name"))
			d.Explain(&res.WriteResult)
			return res.WriteResult, res, err
		})
}

// updateSpace is update_space {key, if_match, name, page_template, editing}.
func updateSpace(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.WithOpID([]tools.Param{
		{Name: "key", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: maxSpaceKey, Desc: spaceKeyDesc},
		{Name: "if_match", Kind: tools.KindInteger, Min: 1, Desc: "The space's version you read (list_spaces); refused stale if it changed."},
		{Name: "name", Kind: tools.KindString, NonEmpty: true, MaxBytes: kb.MaxNameBytes, Desc: "New display name."},
		{Name: "page_template", Kind: tools.KindString, Long: true, MaxBytes: kb.MaxBodyBytes, Desc: "Markdown a new page starts with when created without a body."},
		{Name: "editing", Kind: tools.KindString, Enum: kb.EditingValues, Desc: "" + editingDesc},
		{Name: "archived", Kind: tools.KindBool, Desc: "true refuses new pages and hides it; false undoes."},
	})
	tool := tools.NewTool(NameUpdateSpace,
		d.WriteDesc("Change a space's name or settings; pass only what changes. A settings change covers every page of the space."),
		params,
		// Idempotent: the same settings again leave the space as it is.
		tools.WriteAnnotations("Update space", true),
		tools.OutputSchema[kb.SpaceWrite]())
	return tool, d.WriteHandler(NameUpdateSpace, params, func(a tools.Args) *engine.Refusal {
		if r := checkSpaceKey("key", a.Str("key")); r != nil {
			return r
		}
		if !a.Has("name") && !a.Has("page_template") && !a.Has("editing") && !a.Has("archived") {
			return engine.Refuse(engine.CodeInvalidArgument, "Nothing to change: pass at least one of name, page_template, editing, archived.")
		}
		return nil
	}, func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
		res, err := d.kb().UpdateSpace(ctx, w, a.Str("key"), a.Uint("if_match"), kb.SpacePatch{
			Name:         a.StrPtr("name"),
			PageTemplate: a.StrPtr("page_template"),
			Editing:      a.StrPtr("editing"),
			Archived:     a.BoolPtr("archived"),
		})
		d.Explain(&res.WriteResult)
		return res.WriteResult, res, err
	})
}

// createPage is create_page {space, title, body, parent}.
func createPage(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.WithOpID([]tools.Param{
		{Name: "space", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: maxSpaceKey, Desc: "Key of the space the page belongs to (for example DOCS); list_spaces lists them."},
		{Name: "title", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: kb.MaxTitleBytes, Desc: "The page's title."},
		{Name: "body", Kind: tools.KindString, Long: true, MaxBytes: kb.MaxBodyBytes, Desc: "Markdown body; empty: the space's page_template."},
		{Name: "parent", Kind: tools.KindString, MaxBytes: 64, Desc: "Id of the page (same space) to file it under; empty: top level."},
	})
	tool := tools.NewTool(NameCreatePage,
		d.WriteDesc("Create a page in a space, at the top or under a parent page; answers its id and version."),
		params,
		// Not idempotent: each call without op_id creates another page.
		tools.WriteAnnotations("Create page", false),
		tools.OutputSchema[kb.PageWrite]())
	return tool, d.WriteHandler(NameCreatePage, params, func(a tools.Args) *engine.Refusal { return checkSpaceKey("space", a.Str("space")) },
		func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
			res, err := d.kb().CreatePage(ctx, w, kb.NewPage{Space: a.Str("space"), Title: a.Str("title"), Body: a.Str("body"), Parent: a.Str("parent")})
			d.Explain(&res.WriteResult)
			return res.WriteResult, res, err
		})
}

// getPage is get_page {id | title+space, version}.
func getPage(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := []tools.Param{
		{Name: "id", Kind: tools.KindString, NonEmpty: true, MaxBytes: 64, Desc: pageIDDesc},
		{Name: "title", Kind: tools.KindString, NonEmpty: true, MaxBytes: kb.MaxTitleBytes, Desc: "Or: exact title (with space)."},
		{Name: "space", Kind: tools.KindString, MaxBytes: maxSpaceKey, Desc: "With title."},
		{Name: "version", Kind: tools.KindInteger, Min: 1, Desc: "This version (list_page_versions)."},
	}
	tool := tools.NewTool(NameGetPage,
		"Get one page: title, Markdown body, space, parent, version (update_page's if_match) and comments.",
		params, tools.ReadAnnotations("Get page"), tools.OutputSchema[kb.PageRead]())
	return tool, d.ReadHandler(NameGetPage, params, nil, func(ctx context.Context, a tools.Args) (any, error) {
		res, err := d.kb().FindPage(ctx, d.ReadOptions(ctx, engine.StreamPages),
			kb.PageQuery{ID: a.Str("id"), Title: a.Str("title"), Space: a.Str("space"), Version: a.Uint("version")})
		if res.Comments == nil {
			res.Comments = []kb.Comment{}
		}
		return res, err
	})
}

// listPages is list_pages {space, parent, limit, cursor}.
func listPages(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := []tools.Param{
		{Name: "space", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: maxSpaceKey, Desc: "Key of the space to list (for example DOCS)."},
		{Name: "parent", Kind: tools.KindString, MaxBytes: 64, Desc: "Absent: every page; empty: top-level pages only; a page id: its children."},
		kbLimitParam, kbCursorParam,
	}
	tool := tools.NewTool(NameListPages,
		"List a space's pages (no bodies) in creation order, with parent and child count.",
		params, tools.ReadAnnotations("List pages"), tools.OutputSchema[kb.PageList]())
	return tool, d.ReadHandler(NameListPages, params, func(a tools.Args) *engine.Refusal { return checkSpaceKey("space", a.Str("space")) }, func(ctx context.Context, a tools.Args) (any, error) {
		f := kb.PageFilter{Space: a.Str("space"), Parent: a.StrPtr("parent"), Limit: int(a.Uint("limit")), Cursor: a.Str("cursor")}
		res, err := d.kb().ListPages(ctx, d.ReadOptions(ctx, engine.StreamPages), f)
		if res.Pages == nil {
			res.Pages = []kb.PageSummary{}
		}
		return res, err
	})
}

// updatePage is update_page {id, if_match, title, body, parent}.
func updatePage(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.WithOpID([]tools.Param{
		{Name: "id", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: 64, Desc: pageIDDesc},
		{Name: "if_match", Kind: tools.KindInteger, Min: 1, Desc: "Optional: the version you read (get_page); refused stale if it moved."},
		{Name: "title", Kind: tools.KindString, NonEmpty: true, MaxBytes: kb.MaxTitleBytes, Desc: "New title."},
		{Name: "body", Kind: tools.KindString, Long: true, MaxBytes: kb.MaxBodyBytes, Desc: "New Markdown body, replacing the whole body; empty clears it."},
		{Name: "parent", Kind: tools.KindString, MaxBytes: 64, Desc: "Move it and its subtree under this page; empty: to the top."},
		{Name: "space", Kind: tools.KindString, MaxBytes: maxSpaceKey, Desc: "Move it and its subtree to this space."},
		{Name: "trashed", Kind: tools.KindBool, Desc: "Alone. true: trash it and its subtree; false: restore."},
	})
	tool := tools.NewTool(NameUpdatePage,
		d.WriteDesc("Change a page's title, body, parent or space, or trash it: pass only what changes (and if_match)."),
		params,
		// Destructive: trashed takes the page and its subtree out of every
		// listing and search (a restore brings them back; every version
		// stays). Idempotent: a repeat names a version no longer current
		// and is refused stale, a second trash is refused.
		[]mcp.ToolOption{
			mcp.WithTitleAnnotation("Update page"),
			mcp.WithReadOnlyHintAnnotation(false),
			mcp.WithDestructiveHintAnnotation(true),
			mcp.WithIdempotentHintAnnotation(true),
			mcp.WithOpenWorldHintAnnotation(false),
		},
		tools.OutputSchema[kb.PageWrite]())
	return tool, d.WriteHandler(NameUpdatePage, params, func(a tools.Args) *engine.Refusal {
		if !a.Has("title") && !a.Has("body") && !a.Has("parent") && !a.Has("space") && !a.Has("trashed") {
			return engine.Refuse(engine.CodeInvalidArgument, "Nothing to change: pass at least one of title, body, parent, space, trashed.")
		}
		if a.Has("space") {
			return checkSpaceKey("space", a.Str("space"))
		}
		return nil
	}, func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
		res, err := d.kb().UpdatePage(ctx, w, a.Str("id"), a.Uint("if_match"), kb.PagePatch{
			Title:   a.StrPtr("title"),
			Body:    a.StrPtr("body"),
			Parent:  a.StrPtr("parent"),
			Space:   a.StrPtr("space"),
			Trashed: a.BoolPtr("trashed"),
		})
		d.Explain(&res.WriteResult)
		return res.WriteResult, res, err
	})
}

// searchKnowledge is search_knowledge {query, space, limit}.
func searchKnowledge(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := []tools.Param{
		{Name: "query", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: kb.MaxQueryBytes, Desc: "Words, never syntax; a trailing * matches a prefix."},
		{Name: "space", Kind: tools.KindString, MaxBytes: maxSpaceKey, Desc: "Only pages of this space key."},
		{Name: "limit", Kind: tools.KindInteger, Min: 1, Max: kb.MaxSearchLimit, Desc: fmt.Sprintf("Default %d.", kb.DefaultSearchLimit)},
		kbCursorParam,
	}
	tool := tools.NewTool(NameSearchKnowledge,
		"Search pages by words and meaning, best first, with snippets. No read-your-writes floor.",
		params, tools.ReadAnnotations("Search knowledge"), tools.OutputSchema[kb.SearchResult]())
	check := func(a tools.Args) *engine.Refusal {
		if a.Has("space") {
			return checkSpaceKey("space", a.Str("space"))
		}
		return nil
	}
	return tool, d.ReadHandler(NameSearchKnowledge, params, check, func(ctx context.Context, a tools.Args) (any, error) {
		q := kb.SearchQuery{Query: a.Str("query"), Space: a.Str("space"), Limit: int(a.Uint("limit")), Cursor: a.Str("cursor")}
		res, err := d.kb().SearchKnowledge(ctx, d.ReadOptions(ctx, engine.StreamPages), q)
		if res.Hits == nil {
			res.Hits = []kb.Hit{}
		}
		return res, err
	})
}

// purgePage is purge_page {id}: operator only, destructive.
func purgePage(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.WithOpID([]tools.Param{{Name: "id", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: 64, Desc: pageIDDesc}})
	tool := tools.NewTool(NamePurgePage,
		d.WriteDesc("Destroy a page for good (operator only): its row and search entry go, its children move up to where it stood (its parent, or the top of its space), and every later record about it applies nowhere, on every node, for ever. There is no undo."),
		params,
		[]mcp.ToolOption{
			mcp.WithTitleAnnotation("Purge page"),
			mcp.WithReadOnlyHintAnnotation(false),
			mcp.WithDestructiveHintAnnotation(true),
			// A repeat has no further effect: with the op_id it answers the
			// first purge, without it it is refused deleted.
			mcp.WithIdempotentHintAnnotation(true),
			mcp.WithOpenWorldHintAnnotation(false),
		},
		tools.OutputSchema[kb.PurgeWrite]())
	return tool, d.WriteHandler(NamePurgePage, params, nil, func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
		res, err := d.kb().PurgePage(ctx, w, a.Str("id"))
		d.Explain(&res.WriteResult)
		return res.WriteResult, res, err
	})
}

// checkSpaceKey refuses a space key that is not 2 to 10 upper-case letters
// and digits starting with a letter, as the service checks it.
func checkSpaceKey(arg, key string) *engine.Refusal {
	if tools.ValidKey(key) {
		return nil
	}
	return engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s, which is not a space key: use 2 to 10 upper-case letters and digits starting with a letter, like DOCS (list_spaces lists them).", arg, tools.Quote(key))
}

// maxSpaceKey is the longest space key.
const maxSpaceKey = tools.MaxKeyBytes
