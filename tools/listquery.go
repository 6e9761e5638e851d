package tools

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
)

// NameListTags is list_tags.
const NameListTags = "list_tags"

func init() {
	register(Entry{Build: ListTags, Read: true, Needs: needs[Tracker], Toolset: ToolsetTracker})
}

// maxFilterBytes bounds a comma-separated filter; a batch get's keys take
// more.
const (
	maxFilterBytes = 1024
	maxKeysBytes   = tracker.MaxListKeys * (maxItemKey + 1)
)

var cursorParam = param{name: "cursor", kind: kindString, maxBytes: 1024, desc: "The previous page's next_cursor."}

// trackerLimitParam is the page size of every paged tracker read.
var trackerLimitParam = param{name: "limit", kind: kindInteger, min: 1, max: tracker.MaxListLimit, desc: fmt.Sprintf("Default %d.", tracker.DefaultListLimit)}

// itemPageParams are the arguments of a paged read of one item's thread
// (list_comments, list_work_item_history).
var itemPageParams = []param{keyParam, cursorParam, trackerLimitParam}

// itemPageTool builds a paged read of one item's thread by its key: the
// key checked, then list asked for the page after cursor.
func itemPageTool(d Deps, name, desc, title string, output mcp.ToolOption,
	list func(ctx context.Context, r engine.ReadOptions, key, cursor string, limit int) (any, error)) (mcp.Tool, server.ToolHandlerFunc) {
	tool := newTool(name, desc, itemPageParams, readAnnotations(title), output)
	return tool, d.readHandler(name, itemPageParams, func(a args) *engine.Refusal { return checkItemKey("key", a.str("key")) },
		func(ctx context.Context, a args) (any, error) {
			return list(ctx, d.readOptions(ctx, engine.StreamTracker), a.str("key"), a.str("cursor"), int(a.uint("limit")))
		})
}

// me is the assignee a seat names itself by.
const me = "me"

// listParams are list_work_items' arguments; on the seat surface the
// assignee "me" is the seat calling.
func (d Deps) listParams() []param {
	assignee := "Names."
	if d.Surface == Seat {
		assignee = "Names; me = you."
	}
	multi := func(name, desc string) param {
		return param{name: name, kind: kindString, maxBytes: maxFilterBytes, desc: desc}
	}
	return []param{
		multi("project", "Project keys."),
		multi("status", strings.Join(tracker.Statuses, ", ")+"."),
		multi("assignee", assignee),
		multi("tag", "Tags."),
		multi("priority", strings.Join(tracker.Priorities, ", ")+"."),
		multi("type", strings.Join(tracker.ItemTypes, ", ")+"."),
		{name: "keys", kind: kindString, maxBytes: maxKeysBytes, desc: fmt.Sprintf("Batch get: up to %d keys.", tracker.MaxListKeys)},
		{name: "parent", kind: kindString, maxBytes: maxItemKey, desc: "Children of this key."},
		{name: "updated_since", kind: kindString, maxBytes: 64, desc: "RFC 3339."},
		{name: "trashed", kind: kindBool, desc: "true: only the trash."},
		{name: "sort", kind: kindString, enum: tracker.ListSorts, desc: "Default key."},
		trackerLimitParam,
		cursorParam,
	}
}

// ListWorkItems is list_work_items {project, status, assignee, tag,
// priority, type, keys, parent, updated_since, trashed, sort, limit,
// cursor}.
func ListWorkItems(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.listParams()
	tool := newTool(NameListWorkItems,
		"List work items (trash left out), a page at a time: pass next_cursor back as cursor with the same filters. Filters take comma-separated values. Says the read level, position and whether complete.",
		params, readAnnotations("List work items"), outputSchema[tracker.ItemList]())
	check := func(a args) *engine.Refusal {
		if a.has("parent") {
			return checkItemKey("parent", a.str("parent"))
		}
		return nil
	}
	return tool, d.readHandler(NameListWorkItems, params, check, func(ctx context.Context, a args) (any, error) {
		limit := tracker.DefaultListLimit
		if a.has("limit") {
			limit = int(a.uint("limit"))
		}
		assignee, err := d.assignees(ctx, a.str("assignee"))
		if err != nil {
			return nil, err
		}
		res, err := d.tracker().ListWorkItems(ctx, d.readOptions(ctx, engine.StreamTracker), tracker.ListFilter{
			Project: a.str("project"), Status: a.str("status"), Assignee: assignee, Tag: a.str("tag"),
			Priority: a.str("priority"), Type: a.str("type"), Keys: a.str("keys"), Parent: a.str("parent"),
			UpdatedSince: a.str("updated_since"), Trashed: a.flag("trashed"), Sort: a.str("sort"),
			Limit: limit, Cursor: a.str("cursor"),
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
func (d Deps) assignees(ctx context.Context, filter string) (string, error) {
	if d.Surface != Seat || filter == "" {
		return filter, nil
	}
	vals := strings.Split(filter, ",")
	for i, v := range vals {
		if strings.TrimSpace(v) != me {
			continue
		}
		t, ok := TurnFrom(ctx)
		if !ok || t.Seat == "" {
			return "", engine.Refuse(engine.CodeInvalidArgument, "assignee \"me\" is the seat calling, named by the Crewlet-Seat header, which this request lacks; send it or name the assignee.")
		}
		vals[i] = t.Seat
	}
	return strings.Join(vals, ","), nil
}

// ListTags is list_tags {project}.
func ListTags(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := []param{{name: "project", kind: kindString, maxBytes: maxProjectKey, desc: "Only this project's items."}}
	tool := newTool(NameListTags, "List tags in use (trash left out) with how many items carry each, most used first.",
		params, readAnnotations("List tags"), outputSchema[tracker.TagList]())
	check := func(a args) *engine.Refusal {
		if a.has("project") {
			return checkProjectKey("project", a.str("project"))
		}
		return nil
	}
	return tool, d.readHandler(NameListTags, params, check, func(ctx context.Context, a args) (any, error) {
		res, err := d.tracker().ListTags(ctx, d.readOptions(ctx, engine.StreamTracker), a.str("project"))
		if res.Tags == nil {
			res.Tags = []tracker.TagCount{}
		}
		return res, err
	})
}
