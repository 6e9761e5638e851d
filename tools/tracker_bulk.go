package tools

// The bulk tools: one patch over many items (by keys or a filter) and
// several items filed at once, each under one op id, with MCP progress
// notifications while the work applies.

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// BulkUpdateWorkItems is bulk_update_work_items {project, keys | status,
// assignee, tag, set: {status, assignee, add_tags, add_watchers}}.
func BulkUpdateWorkItems(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.withOpID([]param{projectParam,
		{name: "keys", kind: kindStrings, maxItems: tracker.MaxBulkItems, itemKeys: true, maxBytes: maxItemKey, desc: "Items to change; or filter:"},
		{name: "status", kind: kindString, maxBytes: 200, desc: "Comma-separated."},
		{name: "assignee", kind: kindString, maxBytes: 1000, desc: "Comma-separated."},
		{name: "tag", kind: kindString, maxBytes: 1000, desc: "Comma-separated."},
		{name: "set", kind: kindObject, required: true, desc: "What to set on each.", fields: []param{
			{name: "status", kind: kindString, enum: tracker.Statuses},
			{name: "assignee", kind: kindString, maxBytes: tracker.MaxAssigneeBytes},
			tagsParam("add_tags", ""),
			tagsParam("add_watchers", ""),
		}},
	})
	tool := newTool(NameBulkUpdateWorkItems, d.writeDesc("Change many items of a project at once (up to 20000): one step per chunk, progress notified."),
		// Idempotent: every patch sets values, so a repeat changes nothing.
		params, writeAnnotations("Bulk update work items", true), outputSchema[tracker.ItemWrite]())
	check := func(a args) *engine.Refusal {
		if r := checkProjectKey("project", a.str("project")); r != nil {
			return r
		}
		if len(a.strs("keys")) == 0 && !a.has("status") && !a.has("assignee") && !a.has("tag") {
			return engine.Refuse(engine.CodeInvalidArgument, "Name the items: pass keys, or a filter (status, assignee, tag).")
		}
		if len(a.object("set")) == 0 {
			return engine.Refuse(engine.CodeInvalidArgument, "Argument \"set\" is empty: set at least one of status, assignee, add_tags, add_watchers.")
		}
		return nil
	}
	h := d.writeHandler(NameBulkUpdateWorkItems, params, check, func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
		l, _ := d.life()
		set := a.object("set")
		res, err := l.BulkUpdateWhere(ctx, w, a.str("project"), a.strs("keys"),
			tracker.BulkFilter{Status: a.str("status"), Assignee: a.str("assignee"), Tag: a.str("tag")},
			tracker.BulkPatch{Status: set.strPtr("status"), Assignee: set.strPtr("assignee"), AddTags: set.strs("add_tags"), AddWatchers: set.strs("add_watchers")})
		return res.WriteResult, res, err
	})
	return tool, d.progressive(NameBulkUpdateWorkItems, h)
}

// BulkCreateWorkItems is bulk_create_work_items {project, items}.
func BulkCreateWorkItems(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.withOpID([]param{projectParam,
		{name: "items", kind: kindObjects, required: true, maxItems: tracker.MaxBulkCreate, desc: "As create_work_item takes them.", fields: []param{
			{name: "title", kind: kindString, required: true, nonEmpty: true, maxBytes: tracker.MaxTitleBytes},
			{name: "description", kind: kindString, long: true, maxBytes: tracker.MaxDescriptionBytes},
			{name: "status", kind: kindString, enum: tracker.Statuses},
			{name: "assignee", kind: kindString, maxBytes: tracker.MaxAssigneeBytes},
			tagsParam("tags", ""),
			{name: "parent", kind: kindString, maxBytes: maxItemKey},
		}},
	})
	tool := newTool(NameBulkCreateWorkItems, d.writeDesc("Create several items in a project: a step per item with its key, progress notified."),
		// Not idempotent: each call without op_id files the items again.
		params, writeAnnotations("Bulk create work items", false), outputSchema[tracker.ItemWrite]())
	check := func(a args) *engine.Refusal {
		if r := checkProjectKey("project", a.str("project")); r != nil {
			return r
		}
		for _, it := range a.objects("items") {
			if p := it.str("parent"); p != "" {
				if r := checkItemKey("parent", p); r != nil {
					return r
				}
			}
		}
		if len(a.objects("items")) == 0 {
			return engine.Refuse(engine.CodeInvalidArgument, "Argument \"items\" is empty: give at least one item to create.")
		}
		return nil
	}
	h := d.writeHandler(NameBulkCreateWorkItems, params, check, func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
		l, _ := d.life()
		var items []tracker.NewWorkItem
		for _, it := range a.objects("items") {
			items = append(items, tracker.NewWorkItem{Title: it.str("title"), Description: it.str("description"), Status: it.str("status"),
				Assignee: it.str("assignee"), Tags: it.strs("tags"), Parent: it.str("parent")})
		}
		res, err := l.BulkCreate(ctx, w, a.str("project"), items)
		return res.WriteResult, res, err
	})
	return tool, d.progressive(NameBulkCreateWorkItems, h)
}
