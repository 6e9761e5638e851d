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

// keyParam is the work item an operation is about.
var keyParam = tools.Param{Name: "key", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: maxItemKey, Desc: itemKeyDesc}

// ifMatchParam is a gesture's optional if_match: the version of the item
// it is about that the caller decided against. Absent, the gesture is
// decided against the current rows (and arbitrated by the broker alike).
var ifMatchParam = tools.Param{Name: "if_match", Kind: tools.KindInteger, Min: 1, Desc: "Optional: the version you read; refused stale if it moved."}

// gestureTool is the shape every one-item gesture shares: parse, check
// the keys, write, render the steps.
type gestureTool struct {
	name, title, desc string
	params            []tools.Param
	keys              []string // arguments that are item keys
	destructive       bool
	idempotent        bool
	// check refuses arguments the declarations cannot express, before
	// anything is derived or written.
	check func(a tools.Args) *engine.Refusal
	run   func(ctx context.Context, d env, w engine.WriteOptions, a tools.Args) (tracker.ItemWrite, error)
}

func (g gestureTool) build(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.WithOpID(g.params)
	ann := tools.WriteAnnotations(g.title, g.idempotent)
	if g.destructive {
		ann = append(ann, mcp.WithDestructiveHintAnnotation(true))
	}
	tool := tools.NewTool(g.name, d.WriteDesc(g.desc), params, ann, tools.OutputSchema[tracker.ItemWrite]())
	check := func(a tools.Args) *engine.Refusal {
		for _, k := range g.keys {
			if r := checkItemKey(k, a.Str(k)); r != nil {
				return r
			}
		}
		if g.check != nil {
			return g.check(a)
		}
		return nil
	}
	return tool, d.writeHandler(g.name, params, check, func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
		w.IfMatch = a.Uint("if_match")
		res, err := g.run(ctx, d, w, a)
		return res.WriteResult, res, err
	})
}

// commentOnWorkItem is comment_on_work_item {key, body, author,
// comment_id, delete}. On the seat surface the author is the seat the turn
// names, not an argument: a seat cannot sign for someone else, nor edit
// another's comment.
func commentOnWorkItem(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := []tools.Param{keyParam,
		{Name: "body", Kind: tools.KindString, NonEmpty: true, Long: true, MaxBytes: tracker.MaxCommentBytes, Desc: "The comment, Markdown."}}
	if d.Surface != tools.Seat {
		params = append(params, tools.Param{Name: "author", Kind: tools.KindString, MaxBytes: tracker.MaxAssigneeBytes, Desc: "Who writes it; default operator."})
	}
	params = d.WithOpID(append(params, commentEditParams...))
	tool := tools.NewTool(NameCommentOnWorkItem,
		d.WriteDesc("Add a comment to a work item, or edit or delete yours; get_work_item lists comments with ids. Never moves the item's version."),
		// Not idempotent: each call without op_id adds another comment.
		params, tools.WriteAnnotations("Comment on work item", false), tools.OutputSchema[tracker.CommentWrite]())
	check := func(a tools.Args) *engine.Refusal {
		if r := checkItemKey("key", a.Str("key")); r != nil {
			return r
		}
		if a.Flag(argDelete) && !a.Has(argCommentID) {
			return engine.Refuse(engine.CodeInvalidArgument, "delete needs comment_id: the id of the comment to delete (get_work_item lists them).")
		}
		if !a.Flag(argDelete) && !a.Has("body") {
			return engine.Refuse(engine.CodeInvalidArgument, "Missing required argument \"body\": the comment, Markdown. Pass it and call again.")
		}
		return nil
	}
	return tool, d.writeHandler(NameCommentOnWorkItem, params, check, func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
		author := a.Str("author")
		if t, ok := tools.TurnFrom(ctx); ok && d.Surface == tools.Seat {
			author = t.Seat
		}
		if l, ok := d.life(); ok {
			res, err := d.comment(ctx, l, w, a, author)
			return res.WriteResult, res, err
		}
		// A tracker without the lifecycle half adds comments only.
		res, err := d.tracker().CommentOnWorkItem(ctx, w, a.Str("key"), author, a.Str("body"))
		return res.WriteResult, tracker.CommentWrite{WriteResult: res.WriteResult}, err
	})
}

// moveWorkItem is move_work_item {key, project}.
func moveWorkItem(d env) (mcp.Tool, server.ToolHandlerFunc) {
	return gestureTool{
		name: NameMoveWorkItem, title: "Move work item", keys: []string{"key"},
		params: []tools.Param{keyParam, {Name: "project", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: maxProjectKey, Desc: "Key of the project to move into (OPS)."}, ifMatchParam},
		desc:   "Move an item and its subtree to another project; each takes that project's next key (ENG-3 becomes OPS-7), old keys still resolve. Answers steps: mark, a move per item, unmark.",
		// Not destructive: nothing is lost, old keys resolve and a move
		// back is another move. Idempotent: a repeat finds the items in
		// the project already and moves nothing.
		idempotent: true,
		check:      func(a tools.Args) *engine.Refusal { return checkProjectKey("project", a.Str("project")) },
		run: func(ctx context.Context, d env, w engine.WriteOptions, a tools.Args) (tracker.ItemWrite, error) {
			return d.tracker().MoveWorkItem(ctx, w, a.Str("key"), a.Str("project"))
		},
	}.build(d)
}

// mergeWorkItems is merge_work_items {into, duplicates}.
func mergeWorkItems(d env) (mcp.Tool, server.ToolHandlerFunc) {
	return gestureTool{
		name: NameMergeWorkItems, title: "Merge work items", keys: []string{"into"},
		params: []tools.Param{
			{Name: "into", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: maxItemKey, Desc: "Key of the item to keep."},
			{Name: "duplicates", Kind: tools.KindStrings, Required: true, MaxItems: tracker.MaxMergeItems, Each: checkItemKey, MaxBytes: maxItemKey, Desc: "Keys of its duplicates."},
			ifMatchParam,
		},
		desc: "Merge duplicates into one item: each is cancelled with a duplicates edge to it, its watchers join it. Answers steps: mark, a merge per duplicate, unmark.",
		// Not destructive: every duplicate stays, with its history and
		// comments; only its status and edges change, as update_work_item
		// could. Idempotent: a repeat merges what is merged already.
		idempotent: true,
		check: func(a tools.Args) *engine.Refusal {
			if len(a.Strs("duplicates")) == 0 {
				return engine.Refuse(engine.CodeInvalidArgument, "Argument \"duplicates\" is empty: name at least one duplicate of %s.", a.Str("into"))
			}
			return nil
		},
		run: func(ctx context.Context, d env, w engine.WriteOptions, a tools.Args) (tracker.ItemWrite, error) {
			return d.tracker().MergeWorkItems(ctx, w, a.Str("into"), a.Strs("duplicates"))
		},
	}.build(d)
}

// trashWorkItem is trash_work_item {key}.
func trashWorkItem(d env) (mcp.Tool, server.ToolHandlerFunc) {
	return gestureTool{
		name: NameTrashWorkItem, title: "Trash work item", keys: []string{"key"}, params: []tools.Param{keyParam, ifMatchParam},
		desc: "Put an item and its subtree in the trash: they leave lists and search until restore_work_item. Answers a step per item.",
		// Destructive: the subtree vanishes from every list and search
		// (restore undoes it, but a caller should treat it with care).
		// Idempotent: trashing what is in the trash changes nothing.
		destructive: true, idempotent: true,
		run: func(ctx context.Context, d env, w engine.WriteOptions, a tools.Args) (tracker.ItemWrite, error) {
			return d.tracker().TrashWorkItem(ctx, w, a.Str("key"))
		},
	}.build(d)
}

// restoreWorkItem is restore_work_item {key}.
func restoreWorkItem(d env) (mcp.Tool, server.ToolHandlerFunc) {
	return gestureTool{
		name: NameRestoreWorkItem, title: "Restore work item", keys: []string{"key"}, params: []tools.Param{keyParam, ifMatchParam},
		desc:       "Bring a trashed item and the subtree its trash took back out of the trash. Answers a step per item.",
		idempotent: true,
		run: func(ctx context.Context, d env, w engine.WriteOptions, a tools.Args) (tracker.ItemWrite, error) {
			return d.tracker().RestoreWorkItem(ctx, w, a.Str("key"))
		},
	}.build(d)
}

// purgeWorkItem is purge_work_item {key}, operator only: Set never gives
// it to a seat, and the handler refuses on the seat surface besides.
func purgeWorkItem(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.WithOpID([]tools.Param{keyParam})
	ann := tools.WriteAnnotations("Purge work item", true)
	// Destructive: nothing of the item survives and no record about it
	// applies again. Idempotent: a repeat is refused deleted and changes
	// nothing (with the same op_id it answers the first purge).
	ann = append(ann, mcp.WithDestructiveHintAnnotation(true))
	tool := tools.NewTool(NamePurgeWorkItem,
		d.WriteDesc("Destroy a work item for good (operator only): its rows, comments and history go, edges to it go, its children move up to its parent, and no later record about it applies on any node. Cannot be undone; trash_work_item is the reversible way."),
		params, ann, tools.OutputSchema[tracker.PurgeResult]())
	check := func(a tools.Args) *engine.Refusal {
		if d.Surface == tools.Seat {
			return engine.Refuse(engine.CodeInvalidArgument, "purge_work_item is for operators only; a seat can trash_work_item instead.")
		}
		return checkItemKey("key", a.Str("key"))
	}
	return tool, d.writeHandler(NamePurgeWorkItem, params, check, func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
		res, err := d.tracker().PurgeWorkItem(ctx, w, a.Str("key"))
		d.Explain(&res.WriteResult)
		return res.WriteResult, res, err
	})
}

// searchWorkItems is search_work_items {query, project, limit, cursor}.
func searchWorkItems(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := []tools.Param{
		{Name: "query", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: tracker.MaxQueryBytes, Desc: "Plain words."},
		{Name: "project", Kind: tools.KindString, MaxBytes: maxProjectKey, Desc: "Only this project's items."},
		{Name: "limit", Kind: tools.KindInteger, Min: 1, Max: tracker.MaxSearchLimit, Desc: fmt.Sprintf("Default %d.", tracker.DefaultSearchLimit)},
		cursorParam,
	}
	tool := tools.NewTool(NameSearchWorkItems,
		"Find work items by words and meaning, best first, with snippets; trash left out. No read-your-writes floor.",
		params, tools.ReadAnnotations("Search work items"), tools.OutputSchema[tracker.SearchResult]())
	check := func(a tools.Args) *engine.Refusal {
		if a.Has("project") {
			return checkProjectKey("project", a.Str("project"))
		}
		return nil
	}
	return tool, d.ReadHandler(NameSearchWorkItems, params, check, func(ctx context.Context, a tools.Args) (any, error) {
		limit := tracker.DefaultSearchLimit
		if a.Has("limit") {
			limit = int(a.Uint("limit"))
		}
		// No level and no floor: the service reads the index as applied,
		// and the answer says so in its note.
		res, err := d.tracker().SearchWorkItemsPage(ctx, engine.ReadOptions{}, tracker.SearchQuery{Query: a.Str("query"), Project: a.Str("project"), Limit: limit, Cursor: a.Str("cursor")})
		if res.Hits == nil {
			res.Hits = []tracker.SearchHit{}
		}
		return res, err
	})
}
