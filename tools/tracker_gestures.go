package tools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// keyParam is the work item an operation is about.
var keyParam = param{name: "key", kind: kindString, required: true, nonEmpty: true, maxBytes: maxItemKey, desc: itemKeyDesc}

// ifMatchParam is a gesture's optional if_match: the version of the item
// it is about that the caller decided against. Absent, the gesture is
// decided against the current rows (and arbitrated by the broker alike).
var ifMatchParam = param{name: "if_match", kind: kindInteger, min: 1, desc: "Optional: the version you read; refused stale if it moved."}

// gestureTool is the shape every one-item gesture shares: parse, check
// the keys, write, render the steps.
type gestureTool struct {
	name, title, desc string
	params            []param
	keys              []string // arguments that are item keys
	destructive       bool
	idempotent        bool
	// check refuses arguments the declarations cannot express, before
	// anything is derived or written.
	check func(a args) *engine.Refusal
	run   func(ctx context.Context, d Deps, w engine.WriteOptions, a args) (tracker.ItemWrite, error)
}

func (g gestureTool) build(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.withOpID(g.params)
	ann := writeAnnotations(g.title, g.idempotent)
	if g.destructive {
		ann = append(ann, mcp.WithDestructiveHintAnnotation(true))
	}
	tool := newTool(g.name, d.writeDesc(g.desc), params, ann, outputSchema[tracker.ItemWrite]())
	check := func(a args) *engine.Refusal {
		for _, k := range g.keys {
			if r := checkItemKey(k, a.str(k)); r != nil {
				return r
			}
		}
		if g.check != nil {
			return g.check(a)
		}
		return nil
	}
	return tool, d.writeHandler(g.name, params, check, func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
		w.IfMatch = a.uint("if_match")
		res, err := g.run(ctx, d, w, a)
		return res.WriteResult, res, err
	})
}

// CommentOnWorkItem is comment_on_work_item {key, body, author,
// comment_id, delete}. On the seat surface the author is the seat the turn
// names, not an argument: a seat cannot sign for someone else, nor edit
// another's comment.
func CommentOnWorkItem(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := []param{keyParam,
		{name: "body", kind: kindString, nonEmpty: true, long: true, maxBytes: tracker.MaxCommentBytes, desc: "The comment, Markdown."}}
	if d.Surface != Seat {
		params = append(params, param{name: "author", kind: kindString, maxBytes: tracker.MaxAssigneeBytes, desc: "Who writes it; default operator."})
	}
	params = d.withOpID(append(params, commentEditParams...))
	tool := newTool(NameCommentOnWorkItem,
		d.writeDesc("Add a comment to a work item, or edit or delete yours; get_work_item lists comments with ids. Never moves the item's version."),
		// Not idempotent: each call without op_id adds another comment.
		params, writeAnnotations("Comment on work item", false), outputSchema[tracker.CommentWrite]())
	check := func(a args) *engine.Refusal {
		if r := checkItemKey("key", a.str("key")); r != nil {
			return r
		}
		if a.flag(argDelete) && !a.has(argCommentID) {
			return engine.Refuse(engine.CodeInvalidArgument, "delete needs comment_id: the id of the comment to delete (get_work_item lists them).")
		}
		if !a.flag(argDelete) && !a.has("body") {
			return engine.Refuse(engine.CodeInvalidArgument, "Missing required argument \"body\": the comment, Markdown. Pass it and call again.")
		}
		return nil
	}
	return tool, d.writeHandler(NameCommentOnWorkItem, params, check, func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
		author := a.str("author")
		if t, ok := TurnFrom(ctx); ok && d.Surface == Seat {
			author = t.Seat
		}
		if l, ok := d.life(); ok {
			res, err := d.comment(ctx, l, w, a, author)
			return res.WriteResult, res, err
		}
		// A tracker without the lifecycle half adds comments only.
		res, err := d.tracker().CommentOnWorkItem(ctx, w, a.str("key"), author, a.str("body"))
		return res.WriteResult, tracker.CommentWrite{WriteResult: res.WriteResult}, err
	})
}

// MoveWorkItem is move_work_item {key, project}.
func MoveWorkItem(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	return gestureTool{
		name: NameMoveWorkItem, title: "Move work item", keys: []string{"key"},
		params: []param{keyParam, {name: "project", kind: kindString, required: true, nonEmpty: true, maxBytes: maxProjectKey, desc: "Key of the project to move into (OPS)."}, ifMatchParam},
		desc:   "Move an item and its subtree to another project; each takes that project's next key (ENG-3 becomes OPS-7), old keys still resolve. Answers steps: mark, a move per item, unmark.",
		// Not destructive: nothing is lost, old keys resolve and a move
		// back is another move. Idempotent: a repeat finds the items in
		// the project already and moves nothing.
		idempotent: true,
		check:      func(a args) *engine.Refusal { return checkProjectKey("project", a.str("project")) },
		run: func(ctx context.Context, d Deps, w engine.WriteOptions, a args) (tracker.ItemWrite, error) {
			return d.tracker().MoveWorkItem(ctx, w, a.str("key"), a.str("project"))
		},
	}.build(d)
}

// MergeWorkItems is merge_work_items {into, duplicates}.
func MergeWorkItems(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	return gestureTool{
		name: NameMergeWorkItems, title: "Merge work items", keys: []string{"into"},
		params: []param{
			{name: "into", kind: kindString, required: true, nonEmpty: true, maxBytes: maxItemKey, desc: "Key of the item to keep."},
			{name: "duplicates", kind: kindStrings, required: true, maxItems: tracker.MaxMergeItems, itemKeys: true, maxBytes: maxItemKey, desc: "Keys of its duplicates."},
			ifMatchParam,
		},
		desc: "Merge duplicates into one item: each is cancelled with a duplicates edge to it, its watchers join it. Answers steps: mark, a merge per duplicate, unmark.",
		// Not destructive: every duplicate stays, with its history and
		// comments; only its status and edges change, as update_work_item
		// could. Idempotent: a repeat merges what is merged already.
		idempotent: true,
		check: func(a args) *engine.Refusal {
			if len(a.strs("duplicates")) == 0 {
				return engine.Refuse(engine.CodeInvalidArgument, "Argument \"duplicates\" is empty: name at least one duplicate of %s.", a.str("into"))
			}
			return nil
		},
		run: func(ctx context.Context, d Deps, w engine.WriteOptions, a args) (tracker.ItemWrite, error) {
			return d.tracker().MergeWorkItems(ctx, w, a.str("into"), a.strs("duplicates"))
		},
	}.build(d)
}

// TrashWorkItem is trash_work_item {key}.
func TrashWorkItem(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	return gestureTool{
		name: NameTrashWorkItem, title: "Trash work item", keys: []string{"key"}, params: []param{keyParam, ifMatchParam},
		desc: "Put an item and its subtree in the trash: they leave lists and search until restore_work_item. Answers a step per item.",
		// Destructive: the subtree vanishes from every list and search
		// (restore undoes it, but a caller should treat it with care).
		// Idempotent: trashing what is in the trash changes nothing.
		destructive: true, idempotent: true,
		run: func(ctx context.Context, d Deps, w engine.WriteOptions, a args) (tracker.ItemWrite, error) {
			return d.tracker().TrashWorkItem(ctx, w, a.str("key"))
		},
	}.build(d)
}

// RestoreWorkItem is restore_work_item {key}.
func RestoreWorkItem(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	return gestureTool{
		name: NameRestoreWorkItem, title: "Restore work item", keys: []string{"key"}, params: []param{keyParam, ifMatchParam},
		desc:       "Bring a trashed item and the subtree its trash took back out of the trash. Answers a step per item.",
		idempotent: true,
		run: func(ctx context.Context, d Deps, w engine.WriteOptions, a args) (tracker.ItemWrite, error) {
			return d.tracker().RestoreWorkItem(ctx, w, a.str("key"))
		},
	}.build(d)
}

// PurgeWorkItem is purge_work_item {key}, operator only: Set never gives
// it to a seat, and the handler refuses on the seat surface besides.
func PurgeWorkItem(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.withOpID([]param{keyParam})
	ann := writeAnnotations("Purge work item", true)
	// Destructive: nothing of the item survives and no record about it
	// applies again. Idempotent: a repeat is refused deleted and changes
	// nothing (with the same op_id it answers the first purge).
	ann = append(ann, mcp.WithDestructiveHintAnnotation(true))
	tool := newTool(NamePurgeWorkItem,
		d.writeDesc("Destroy a work item for good (operator only): its rows, comments and history go, edges to it go, its children move up to its parent, and no later record about it applies on any node. Cannot be undone; trash_work_item is the reversible way."),
		params, ann, outputSchema[tracker.PurgeResult]())
	check := func(a args) *engine.Refusal {
		if d.Surface == Seat {
			return engine.Refuse(engine.CodeInvalidArgument, "purge_work_item is for operators only; a seat can trash_work_item instead.")
		}
		return checkItemKey("key", a.str("key"))
	}
	return tool, d.writeHandler(NamePurgeWorkItem, params, check, func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
		res, err := d.tracker().PurgeWorkItem(ctx, w, a.str("key"))
		d.explain(&res.WriteResult)
		return res.WriteResult, res, err
	})
}

// SearchWorkItems is search_work_items {query, project, limit, cursor}.
func SearchWorkItems(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := []param{
		{name: "query", kind: kindString, required: true, nonEmpty: true, maxBytes: tracker.MaxQueryBytes, desc: "Plain words; every one must match."},
		{name: "project", kind: kindString, maxBytes: maxProjectKey, desc: "Only this project's items."},
		{name: "limit", kind: kindInteger, min: 1, max: tracker.MaxSearchLimit, desc: fmt.Sprintf("At most this many hits, default %d.", tracker.DefaultSearchLimit)},
		cursorParam,
	}
	tool := newTool(NameSearchWorkItems,
		"Find work items by words in titles, descriptions and comments, best first, with snippets; trash left out. No read-your-writes floor: a just-written item may not show yet.",
		params, readAnnotations("Search work items"), outputSchema[tracker.SearchResult]())
	check := func(a args) *engine.Refusal {
		if a.has("project") {
			return checkProjectKey("project", a.str("project"))
		}
		return nil
	}
	return tool, d.readHandler(NameSearchWorkItems, params, check, func(ctx context.Context, a args) (any, error) {
		limit := tracker.DefaultSearchLimit
		if a.has("limit") {
			limit = int(a.uint("limit"))
		}
		// No level and no floor: the service reads the index as applied,
		// and the answer says so in its note.
		res, err := d.tracker().SearchWorkItemsPage(ctx, engine.ReadOptions{}, tracker.SearchQuery{Query: a.str("query"), Project: a.str("project"), Limit: limit, Cursor: a.str("cursor")})
		if res.Hits == nil {
			res.Hits = []tracker.SearchHit{}
		}
		return res, err
	})
}
