package tools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb"
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

func init() {
	kb := needs[KB]
	register(
		Entry{Build: ListSpaces, Read: true, Needs: kb, Toolset: ToolsetKB},
		Entry{Build: GetPage, Read: true, Needs: kb, Toolset: ToolsetKB},
		Entry{Build: ListPages, Read: true, Needs: kb, Toolset: ToolsetKB},
		Entry{Build: SearchKnowledge, Read: true, Needs: kb, Toolset: ToolsetKB},
		Entry{Build: CreateSpace, Needs: kb, Toolset: ToolsetKB},
		Entry{Build: UpdateSpace, Needs: kb, Toolset: ToolsetKB},
		Entry{Build: CreatePage, Needs: kb, Toolset: ToolsetKB},
		Entry{Build: UpdatePage, Needs: kb, Toolset: ToolsetKB},
		Entry{Build: PurgePage, OperatorOnly: true, Needs: kb, Toolset: ToolsetKB},
		Entry{Build: GetSpace, Read: true, Needs: kb, Toolset: ToolsetKB},
		Entry{Build: ListPageVersions, Read: true, Needs: kb, Toolset: ToolsetKB},
		Entry{Build: CommentOnPage, Needs: kb, Toolset: ToolsetKB},
	)
}

func (d Deps) kb() KB {
	k, _ := service[KB](d)
	return k
}

var (
	spaceKeyDesc = "Space key: 2-10 upper-case letters and digits, a letter first (DOCS)."
	pageIDDesc   = "Page id: pg_ and 32 hex digits."
	editingDesc  = "open: pages take edits; locked: they refuse create, update and move."
)

// ListSpaces is list_spaces {include_archived, limit, cursor}.
func ListSpaces(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := []param{
		{name: "include_archived", kind: kindBool, desc: "Archived spaces too."},
		kbLimitParam, kbCursorParam,
	}
	tool := newTool(NameListSpaces,
		"List knowledge-base spaces by key: name, settings, page count and version.",
		params, readAnnotations("List spaces"), outputSchema[kb.SpaceList]())
	return tool, d.readHandler(NameListSpaces, params, nil, func(ctx context.Context, a args) (any, error) {
		res, err := d.kb().ListSpacesPage(ctx, d.readOptions(ctx, engine.StreamPages),
			kb.SpaceFilter{IncludeArchived: a.flag("include_archived"), Limit: int(a.uint("limit")), Cursor: a.str("cursor")})
		if res.Spaces == nil {
			res.Spaces = []kb.Space{}
		}
		return res, err
	})
}

// CreateSpace is create_space {key, name}.
func CreateSpace(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.withOpID([]param{
		{name: "key", kind: kindString, required: true, nonEmpty: true, maxBytes: maxProjectKey, desc: spaceKeyDesc},
		{name: "name", kind: kindString, required: true, nonEmpty: true, maxBytes: kb.MaxNameBytes, desc: "The space's display name (for example Engineering docs)."},
	})
	tool := newTool(NameCreateSpace,
		d.writeDesc("Create a knowledge-base space (key and name), open for edits, no page template. An existing key is refused already_exists."),
		params,
		// Idempotent: a repeat with the same key has no further effect.
		writeAnnotations("Create space", true),
		outputSchema[kb.SpaceWrite]())
	return tool, d.writeHandler(NameCreateSpace, params, func(a args) *engine.Refusal { return checkSpaceKey("key", a.str("key")) },
		func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
			res, err := d.kb().CreateSpace(ctx, w, a.str("key"), a.str("name"))
			d.explain(&res.WriteResult)
			return res.WriteResult, res, err
		})
}

// UpdateSpace is update_space {key, if_match, name, page_template, editing}.
func UpdateSpace(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.withOpID([]param{
		{name: "key", kind: kindString, required: true, nonEmpty: true, maxBytes: maxProjectKey, desc: spaceKeyDesc},
		{name: "if_match", kind: kindInteger, min: 1, desc: "The space's version you read (list_spaces); refused stale if it changed."},
		{name: "name", kind: kindString, nonEmpty: true, maxBytes: kb.MaxNameBytes, desc: "New display name."},
		{name: "page_template", kind: kindString, long: true, maxBytes: kb.MaxBodyBytes, desc: "Markdown a new page starts with when created without a body."},
		{name: "editing", kind: kindString, enum: kb.EditingValues, desc: "" + editingDesc},
		{name: "archived", kind: kindBool, desc: "true refuses new pages and hides it; false undoes."},
	})
	tool := newTool(NameUpdateSpace,
		d.writeDesc("Change a space's name or settings; pass only what changes. A settings change covers every page of the space."),
		params,
		// Idempotent: the same settings again leave the space as it is.
		writeAnnotations("Update space", true),
		outputSchema[kb.SpaceWrite]())
	return tool, d.writeHandler(NameUpdateSpace, params, func(a args) *engine.Refusal {
		if r := checkSpaceKey("key", a.str("key")); r != nil {
			return r
		}
		if !a.has("name") && !a.has("page_template") && !a.has("editing") && !a.has("archived") {
			return engine.Refuse(engine.CodeInvalidArgument, "Nothing to change: pass at least one of name, page_template, editing, archived.")
		}
		return nil
	}, func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
		res, err := d.kb().UpdateSpace(ctx, w, a.str("key"), a.uint("if_match"), kb.SpacePatch{
			Name:         a.strPtr("name"),
			PageTemplate: a.strPtr("page_template"),
			Editing:      a.strPtr("editing"),
			Archived:     a.boolPtr("archived"),
		})
		d.explain(&res.WriteResult)
		return res.WriteResult, res, err
	})
}

// CreatePage is create_page {space, title, body, parent}.
func CreatePage(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.withOpID([]param{
		{name: "space", kind: kindString, required: true, nonEmpty: true, maxBytes: maxProjectKey, desc: "Key of the space the page belongs to (for example DOCS); list_spaces lists them."},
		{name: "title", kind: kindString, required: true, nonEmpty: true, maxBytes: kb.MaxTitleBytes, desc: "The page's title."},
		{name: "body", kind: kindString, long: true, maxBytes: kb.MaxBodyBytes, desc: "Markdown body; empty: the space's page_template."},
		{name: "parent", kind: kindString, maxBytes: 64, desc: "Id of the page (same space) to file it under; empty: top level."},
	})
	tool := newTool(NameCreatePage,
		d.writeDesc("Create a page in a space, at the top or under a parent page; answers its id and version."),
		params,
		// Not idempotent: each call without op_id creates another page.
		writeAnnotations("Create page", false),
		outputSchema[kb.PageWrite]())
	return tool, d.writeHandler(NameCreatePage, params, func(a args) *engine.Refusal { return checkSpaceKey("space", a.str("space")) },
		func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
			res, err := d.kb().CreatePage(ctx, w, kb.NewPage{Space: a.str("space"), Title: a.str("title"), Body: a.str("body"), Parent: a.str("parent")})
			d.explain(&res.WriteResult)
			return res.WriteResult, res, err
		})
}

// GetPage is get_page {id | title+space, version}.
func GetPage(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := []param{
		{name: "id", kind: kindString, nonEmpty: true, maxBytes: 64, desc: pageIDDesc},
		{name: "title", kind: kindString, nonEmpty: true, maxBytes: kb.MaxTitleBytes, desc: "Or: exact title (with space)."},
		{name: "space", kind: kindString, maxBytes: maxProjectKey, desc: "With title."},
		{name: "version", kind: kindInteger, min: 1, desc: "This version (list_page_versions)."},
	}
	tool := newTool(NameGetPage,
		"Get one page: title, Markdown body, space, parent, version (update_page's if_match) and comments.",
		params, readAnnotations("Get page"), outputSchema[kb.PageRead]())
	return tool, d.readHandler(NameGetPage, params, nil, func(ctx context.Context, a args) (any, error) {
		res, err := d.kb().FindPage(ctx, d.readOptions(ctx, engine.StreamPages),
			kb.PageQuery{ID: a.str("id"), Title: a.str("title"), Space: a.str("space"), Version: a.uint("version")})
		if res.Comments == nil {
			res.Comments = []kb.Comment{}
		}
		return res, err
	})
}

// ListPages is list_pages {space, parent, limit, cursor}.
func ListPages(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := []param{
		{name: "space", kind: kindString, required: true, nonEmpty: true, maxBytes: maxProjectKey, desc: "Key of the space to list (for example DOCS)."},
		{name: "parent", kind: kindString, maxBytes: 64, desc: "Absent: every page; empty: top-level pages only; a page id: its children."},
		kbLimitParam, kbCursorParam,
	}
	tool := newTool(NameListPages,
		"List a space's pages (no bodies) in creation order, with parent and child count.",
		params, readAnnotations("List pages"), outputSchema[kb.PageList]())
	return tool, d.readHandler(NameListPages, params, func(a args) *engine.Refusal { return checkSpaceKey("space", a.str("space")) }, func(ctx context.Context, a args) (any, error) {
		f := kb.PageFilter{Space: a.str("space"), Parent: a.strPtr("parent"), Limit: int(a.uint("limit")), Cursor: a.str("cursor")}
		res, err := d.kb().ListPages(ctx, d.readOptions(ctx, engine.StreamPages), f)
		if res.Pages == nil {
			res.Pages = []kb.PageSummary{}
		}
		return res, err
	})
}

// UpdatePage is update_page {id, if_match, title, body, parent}.
func UpdatePage(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.withOpID([]param{
		{name: "id", kind: kindString, required: true, nonEmpty: true, maxBytes: 64, desc: pageIDDesc},
		{name: "if_match", kind: kindInteger, min: 1, desc: "Optional: the version you read (get_page); refused stale if it moved."},
		{name: "title", kind: kindString, nonEmpty: true, maxBytes: kb.MaxTitleBytes, desc: "New title."},
		{name: "body", kind: kindString, long: true, maxBytes: kb.MaxBodyBytes, desc: "New Markdown body, replacing the whole body; empty clears it."},
		{name: "parent", kind: kindString, maxBytes: 64, desc: "Move it and its subtree under this page; empty: to the top."},
		{name: "space", kind: kindString, maxBytes: maxProjectKey, desc: "Move it and its subtree to this space."},
		{name: "trashed", kind: kindBool, desc: "Alone. true: trash it and its subtree; false: restore."},
	})
	tool := newTool(NameUpdatePage,
		d.writeDesc("Change a page's title, body, parent or space, or trash it: pass only what changes (and if_match)."),
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
		outputSchema[kb.PageWrite]())
	return tool, d.writeHandler(NameUpdatePage, params, func(a args) *engine.Refusal {
		if !a.has("title") && !a.has("body") && !a.has("parent") && !a.has("space") && !a.has("trashed") {
			return engine.Refuse(engine.CodeInvalidArgument, "Nothing to change: pass at least one of title, body, parent, space, trashed.")
		}
		if a.has("space") {
			return checkSpaceKey("space", a.str("space"))
		}
		return nil
	}, func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
		res, err := d.kb().UpdatePage(ctx, w, a.str("id"), a.uint("if_match"), kb.PagePatch{
			Title:   a.strPtr("title"),
			Body:    a.strPtr("body"),
			Parent:  a.strPtr("parent"),
			Space:   a.strPtr("space"),
			Trashed: a.boolPtr("trashed"),
		})
		d.explain(&res.WriteResult)
		return res.WriteResult, res, err
	})
}

// SearchKnowledge is search_knowledge {query, space, limit}.
func SearchKnowledge(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := []param{
		{name: "query", kind: kindString, required: true, nonEmpty: true, maxBytes: kb.MaxQueryBytes, desc: "Words to find in titles and bodies; all must appear. Taken as words, never syntax; a trailing * matches a prefix."},
		{name: "space", kind: kindString, maxBytes: maxProjectKey, desc: "Only pages of this space key."},
		{name: "limit", kind: kindInteger, min: 1, max: kb.MaxSearchLimit, desc: fmt.Sprintf("At most this many results (1 to %d, default %d).", kb.MaxSearchLimit, kb.DefaultSearchLimit)},
		kbCursorParam,
	}
	tool := newTool(NameSearchKnowledge,
		"Search pages, best first (title before body); each hit has id, title and a snippet. No read-your-writes floor: a page just written may not show yet; get_page finds it.",
		params, readAnnotations("Search knowledge"), outputSchema[kb.SearchResult]())
	check := func(a args) *engine.Refusal {
		if a.has("space") {
			return checkSpaceKey("space", a.str("space"))
		}
		return nil
	}
	return tool, d.readHandler(NameSearchKnowledge, params, check, func(ctx context.Context, a args) (any, error) {
		q := kb.SearchQuery{Query: a.str("query"), Space: a.str("space"), Limit: int(a.uint("limit")), Cursor: a.str("cursor")}
		res, err := d.kb().SearchKnowledge(ctx, d.readOptions(ctx, engine.StreamPages), q)
		if res.Hits == nil {
			res.Hits = []kb.Hit{}
		}
		return res, err
	})
}

// PurgePage is purge_page {id}: operator only, destructive.
func PurgePage(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.withOpID([]param{{name: "id", kind: kindString, required: true, nonEmpty: true, maxBytes: 64, desc: pageIDDesc}})
	tool := newTool(NamePurgePage,
		d.writeDesc("Destroy a page for good (operator only): its row and search entry go, its children move up to where it stood (its parent, or the top of its space), and every later record about it applies nowhere, on every node, for ever. There is no undo."),
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
		outputSchema[kb.PurgeWrite]())
	return tool, d.writeHandler(NamePurgePage, params, nil, func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
		res, err := d.kb().PurgePage(ctx, w, a.str("id"))
		d.explain(&res.WriteResult)
		return res.WriteResult, res, err
	})
}

// checkSpaceKey refuses a space key that is not 2 to 10 upper-case letters
// and digits starting with a letter, as the service checks it.
func checkSpaceKey(arg, key string) *engine.Refusal {
	if validProjectKey(key) {
		return nil
	}
	return engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s, which is not a space key: use 2 to 10 upper-case letters and digits starting with a letter, like DOCS (list_spaces lists them).", arg, quote(key))
}
