package trackertools

// list_work_items with its multi-valued filters, batch get, trash
// listing, sorts and cursor; and list_tags.

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/tools"
)

// NameListTags is list_tags.
const NameListTags = "list_tags"

// maxFilterBytes bounds a comma-separated filter; a batch get's keys take
// more.
const (
	maxFilterBytes = 1024
	maxKeysBytes   = tracker.MaxListKeys * (maxItemKey + 1)
)

var cursorParam = tools.Param{Name: "cursor", Kind: tools.KindString, MaxBytes: 1024, Desc: "The previous page's next_cursor."}

// trackerLimitParam is the page size of every paged tracker read.
var trackerLimitParam = tools.Param{Name: "limit", Kind: tools.KindInteger, Min: 1, Max: tracker.MaxListLimit, Desc: fmt.Sprintf("Default %d.", tracker.DefaultListLimit)}

// itemPageParams are the arguments of a paged read of one item's thread
// (list_comments, list_work_item_history).
var itemPageParams = []tools.Param{keyParam, cursorParam, trackerLimitParam}

// itemPageTool builds a paged read of one item's thread by its key: the
// key checked, then list asked for the page after cursor.
func itemPageTool(d env, name, desc, title string, output mcp.ToolOption,
	list func(ctx context.Context, r engine.ReadOptions, key, cursor string, limit int) (any, error)) (mcp.Tool, server.ToolHandlerFunc) {
	tool := tools.NewTool(name, desc, itemPageParams, tools.ReadAnnotations(title), output)
	return tool, d.ReadHandler(name, itemPageParams, func(a tools.Args) *engine.Refusal { return checkItemKey("key", a.Str("key")) },
		func(ctx context.Context, a tools.Args) (any, error) {
			return list(ctx, d.ReadOptions(ctx, engine.StreamTracker), a.Str("key"), a.Str("cursor"), int(a.Uint("limit")))
		})
}

// me is the assignee a seat names itself by.
const me = "me"

// listParams are list_work_items' arguments; on the seat surface the
// assignee "me" is the seat calling.
func (d env) listParams() []tools.Param {
	assignee := "Names."
	if d.Surface == tools.Seat {
		assignee = "Names; me = you."
	}
	multi := func(name, desc string) tools.Param {
		return tools.Param{Name: name, Kind: tools.KindString, MaxBytes: maxFilterBytes, Desc: desc}
	}
	return []tools.Param{
		multi("project", "Project keys."),
		multi("status", strings.Join(tracker.Statuses, ", ")+"."),
		multi("assignee", assignee),
		multi("tag", "Tags."),
		multi("priority", strings.Join(tracker.Priorities, ", ")+"."),
		multi("type", strings.Join(tracker.ItemTypes, ", ")+"."),
		{Name: "keys", Kind: tools.KindString, MaxBytes: maxKeysBytes, Desc: fmt.Sprintf("Batch get: up to %d keys.", tracker.MaxListKeys)},
		{Name: "parent", Kind: tools.KindString, MaxBytes: maxItemKey, Desc: "Children of this key."},
		{Name: "updated_since", Kind: tools.KindString, MaxBytes: 64, Desc: "RFC 3339."},
		{Name: "trashed", Kind: tools.KindBool, Desc: "true: only the trash."},
		{Name: "sort", Kind: tools.KindString, Enum: tracker.ListSorts, Desc: "Default key."},
		trackerLimitParam,
		cursorParam,
	}
}

// listWorkItems is list_work_items {project, status, assignee, tag,
// priority, type, keys, parent, updated_since, trashed, sort, limit,
// cursor}.
func listWorkItems(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.listParams()
	tool := tools.NewTool(NameListWorkItems,
		"List work items (trash left out), a page at a time: pass next_cursor back as cursor with the same filters. Filters take comma-separated values. Says the read level, position and whether complete.",
		params, tools.ReadAnnotations("List work items"), tools.OutputSchema[tracker.ItemList]())
	check := func(a tools.Args) *engine.Refusal {
		if a.Has("parent") {
			return checkItemKey("parent", a.Str("parent"))
		}
		return nil
	}
	return tool, d.ReadHandler(NameListWorkItems, params, check, func(ctx context.Context, a tools.Args) (any, error) {
		limit := tracker.DefaultListLimit
		if a.Has("limit") {
			limit = int(a.Uint("limit"))
		}
		assignee, err := d.assignees(ctx, a.Str("assignee"))
		if err != nil {
			return nil, err
		}
		res, err := d.tracker().ListWorkItems(ctx, d.ReadOptions(ctx, engine.StreamTracker), tracker.ListFilter{
			Project: a.Str("project"), Status: a.Str("status"), Assignee: assignee, Tag: a.Str("tag"),
			Priority: a.Str("priority"), Type: a.Str("type"), Keys: a.Str("keys"), Parent: a.Str("parent"),
			UpdatedSince: a.Str("updated_since"), Trashed: a.Flag("trashed"), Sort: a.Str("sort"),
			Limit: limit, Cursor: a.Str("cursor"),
		})
		if res.Items == nil {
			res.Items = []tracker.WorkItem{}
		}
		return res, err
	})
}

// assignees is an assignee filter with "me" made the seat calling, on the
// seat surface (the Crewlet-Seat header names it); elsewhere "me" is a
// name like any other.
func (d env) assignees(ctx context.Context, filter string) (string, error) {
	if d.Surface != tools.Seat || filter == "" {
		return filter, nil
	}
	vals := strings.Split(filter, ",")
	for i, v := range vals {
		if strings.TrimSpace(v) != me {
			continue
		}
		t, ok := tools.TurnFrom(ctx)
		if !ok || t.Seat == "" {
			return "", engine.Refuse(engine.CodeInvalidArgument, "assignee \"me\" is the seat calling, named by the Crewlet-Seat header, which this request lacks; send it or name the assignee.")
		}
		vals[i] = t.Seat
	}
	return strings.Join(vals, ","), nil
}

// listTags is list_tags {project}.
func listTags(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := []tools.Param{{Name: "project", Kind: tools.KindString, MaxBytes: maxProjectKey, Desc: "Only this project's items."}}
	tool := tools.NewTool(NameListTags, "List tags in use (trash left out) with how many items carry each, most used first.",
		params, tools.ReadAnnotations("List tags"), tools.OutputSchema[tracker.TagList]())
	check := func(a tools.Args) *engine.Refusal {
		if a.Has("project") {
			return checkProjectKey("project", a.Str("project"))
		}
		return nil
	}
	return tool, d.ReadHandler(NameListTags, params, check, func(ctx context.Context, a tools.Args) (any, error) {
		res, err := d.tracker().ListTags(ctx, d.ReadOptions(ctx, engine.StreamTracker), a.Str("project"))
		if res.Tags == nil {
			res.Tags = []tracker.TagCount{}
		}
		return res, err
	})
}
