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
	)
}

func (d Deps) kb() KB {
	k, _ := service[KB](d)
	return k
}

var (
	spaceKeyDesc = "Space key: 2 to 10 upper-case letters and digits, starting with a letter (for example DOCS); list_spaces lists them."
	pageIDDesc   = "Page id, as create_page, list_pages and search_knowledge answer it (pg_ followed by 32 hex digits)."
	editingDesc  = "Editing setting of the space: open (its pages take edits) or locked (its pages refuse create, update and move until it is opened again)."
)

// ListSpaces is list_spaces {}.
func ListSpaces(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	var params []param
	tool := newTool(NameListSpaces,
		"List every knowledge-base space: key, name, settings, page count and version.",
		params, readAnnotations("List spaces"), outputSchema[kb.SpaceList]())
	return tool, d.readHandler(NameListSpaces, params, nil, func(ctx context.Context, _ args) (any, error) {
		res, err := d.kb().ListSpaces(ctx, d.readOptions(ctx, engine.StreamPages))
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
		if !a.has("name") && !a.has("page_template") && !a.has("editing") {
			return engine.Refuse(engine.CodeInvalidArgument, "Nothing to change: pass at least one of name, page_template, editing.")
		}
		return nil
	}, func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
		res, err := d.kb().UpdateSpace(ctx, w, a.str("key"), a.uint("if_match"), kb.SpacePatch{
			Name:         a.strPtr("name"),
			PageTemplate: a.strPtr("page_template"),
			Editing:      a.strPtr("editing"),
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
		d.writeDesc("Create a page in a space, at the top or under a parent page. Answers the page with its id and version (update_page's if_match)."),
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

// GetPage is get_page {id}.
func GetPage(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := []param{{name: "id", kind: kindString, required: true, nonEmpty: true, maxBytes: 64, desc: pageIDDesc}}
	tool := newTool(NameGetPage,
		"Get one page by id: title, Markdown body, space, parent and version (update_page takes it as if_match).",
		params, readAnnotations("Get page"), outputSchema[kb.PageRead]())
	return tool, d.readHandler(NameGetPage, params, nil, func(ctx context.Context, a args) (any, error) {
		return d.kb().GetPage(ctx, d.readOptions(ctx, engine.StreamPages), a.str("id"))
	})
}

// ListPages is list_pages {space, parent, limit, cursor}.
func ListPages(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := []param{
		{name: "space", kind: kindString, required: true, nonEmpty: true, maxBytes: maxProjectKey, desc: "Key of the space to list (for example DOCS)."},
		{name: "parent", kind: kindString, maxBytes: 64, desc: "Absent: every page; empty: top-level pages only; a page id: its children."},
		{name: "limit", kind: kindInteger, min: 1, max: kb.MaxListLimit, desc: fmt.Sprintf("At most this many pages (1 to %d, default %d).", kb.MaxListLimit, kb.DefaultListLimit)},
		{name: "cursor", kind: kindString, maxBytes: 1024, desc: "next_cursor of the previous page."},
	}
	tool := newTool(NameListPages,
		"List a space's pages in creation order, without bodies, with parent and child count; pass next_cursor as cursor for more.",
		params, readAnnotations("List pages"), outputSchema[kb.PageList]())
	return tool, d.readHandler(NameListPages, params, func(a args) *engine.Refusal { return checkSpaceKey("space", a.str("space")) }, func(ctx context.Context, a args) (any, error) {
		f := kb.PageFilter{Space: a.str("space"), Parent: a.strPtr("parent"), Limit: kb.DefaultListLimit, Cursor: a.str("cursor")}
		if a.has("limit") {
			f.Limit = int(a.uint("limit"))
		}
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
		{name: "parent", kind: kindString, maxBytes: 64, desc: "Move the page and its subtree under this page of the same space; empty: to the top."},
	})
	tool := newTool(NameUpdatePage,
		d.writeDesc("Change a page's title, body or parent within its space: pass only what changes (and if_match). Answers the page at its new version."),
		params,
		// Not destructive: it replaces only the named fields, only at the
		// version the caller read, and every prior version stays in the log.
		// Idempotent: a repeat names a version no longer current and is
		// refused stale.
		writeAnnotations("Update page", true),
		outputSchema[kb.PageWrite]())
	return tool, d.writeHandler(NameUpdatePage, params, func(a args) *engine.Refusal {
		if !a.has("title") && !a.has("body") && !a.has("parent") {
			return engine.Refuse(engine.CodeInvalidArgument, "Nothing to change: pass at least one of title, body, parent.")
		}
		return nil
	}, func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
		res, err := d.kb().UpdatePage(ctx, w, a.str("id"), a.uint("if_match"), kb.PagePatch{
			Title:  a.strPtr("title"),
			Body:   a.strPtr("body"),
			Parent: a.strPtr("parent"),
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
		q := kb.SearchQuery{Query: a.str("query"), Space: a.str("space"), Limit: kb.DefaultSearchLimit}
		if a.has("limit") {
			q.Limit = int(a.uint("limit"))
		}
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
