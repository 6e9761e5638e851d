package trackertools

// The bulk tools: one patch over many items (by keys or a filter) and
// several items filed at once, each under one op id, with MCP progress
// notifications while the work applies.

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/tools"
)

// bulkUpdateWorkItems is bulk_update_work_items {project, keys | status,
// assignee, tag, set: {status, assignee, add_tags, add_watchers}}.
func bulkUpdateWorkItems(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.WithOpID([]tools.Param{projectParam,
		{Name: "keys", Kind: tools.KindStrings, MaxItems: tracker.MaxBulkItems, Each: checkItemKey, MaxBytes: maxItemKey, Desc: "Items to change; or filter:"},
		{Name: "status", Kind: tools.KindString, MaxBytes: 200, Desc: "Comma-separated."},
		{Name: "assignee", Kind: tools.KindString, MaxBytes: 1000, Desc: "Comma-separated."},
		{Name: "tag", Kind: tools.KindString, MaxBytes: 1000, Desc: "Comma-separated."},
		{Name: "set", Kind: tools.KindObject, Required: true, Desc: "What to set on each.", Fields: []tools.Param{
			{Name: "status", Kind: tools.KindString, Enum: tracker.Statuses},
			{Name: "assignee", Kind: tools.KindString, MaxBytes: tracker.MaxAssigneeBytes},
			tagsParam("add_tags", ""),
			tagsParam("add_watchers", ""),
		}},
	})
	tool := tools.NewTool(NameBulkUpdateWorkItems, d.WriteDesc("Change many items of a project at once (up to 20000): one step per chunk, progress notified."),
		// Idempotent: every patch sets values, so a repeat changes nothing.
		params, tools.WriteAnnotations("Bulk update work items", true), tools.OutputSchema[tracker.ItemWrite]())
	check := func(a tools.Args) *engine.Refusal {
		if r := checkProjectKey("project", a.Str("project")); r != nil {
			return r
		}
		if len(a.Strs("keys")) == 0 && !a.Has("status") && !a.Has("assignee") && !a.Has("tag") {
			return engine.Refuse(engine.CodeInvalidArgument, "Name the items: pass keys, or a filter (status, assignee, tag).")
		}
		if len(a.Object("set")) == 0 {
			return engine.Refuse(engine.CodeInvalidArgument, "Argument \"set\" is empty: set at least one of status, assignee, add_tags, add_watchers.")
		}
		return nil
	}
	h := d.writeHandler(NameBulkUpdateWorkItems, params, check, func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
		l, _ := d.life()
		set := a.Object("set")
		res, err := l.BulkUpdateWhere(ctx, w, a.Str("project"), a.Strs("keys"),
			tracker.BulkFilter{Status: a.Str("status"), Assignee: a.Str("assignee"), Tag: a.Str("tag")},
			tracker.BulkPatch{Status: set.StrPtr("status"), Assignee: set.StrPtr("assignee"), AddTags: set.Strs("add_tags"), AddWatchers: set.Strs("add_watchers")})
		return res.WriteResult, res, err
	})
	return tool, d.Progressive(NameBulkUpdateWorkItems, h)
}

// bulkCreateWorkItems is bulk_create_work_items {project, items}.
func bulkCreateWorkItems(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.WithOpID([]tools.Param{projectParam,
		{Name: "items", Kind: tools.KindObjects, Required: true, MaxItems: tracker.MaxBulkCreate, Desc: "As create_work_item takes them.", Fields: []tools.Param{
			{Name: "title", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: tracker.MaxTitleBytes},
			{Name: "description", Kind: tools.KindString, Long: true, MaxBytes: tracker.MaxDescriptionBytes},
			{Name: "status", Kind: tools.KindString, Enum: tracker.Statuses},
			{Name: "assignee", Kind: tools.KindString, MaxBytes: tracker.MaxAssigneeBytes},
			tagsParam("tags", ""),
			{Name: "parent", Kind: tools.KindString, MaxBytes: maxItemKey},
		}},
	})
	tool := tools.NewTool(NameBulkCreateWorkItems, d.WriteDesc("Create several items in a project: a step per item with its key, progress notified."),
		// Not idempotent: each call without op_id files the items again.
		params, tools.WriteAnnotations("Bulk create work items", false), tools.OutputSchema[tracker.ItemWrite]())
	check := func(a tools.Args) *engine.Refusal {
		if r := checkProjectKey("project", a.Str("project")); r != nil {
			return r
		}
		for _, it := range a.Objects("items") {
			if p := it.Str("parent"); p != "" {
				if r := checkItemKey("parent", p); r != nil {
					return r
				}
			}
		}
		if len(a.Objects("items")) == 0 {
			return engine.Refuse(engine.CodeInvalidArgument, "Argument \"items\" is empty: give at least one item to create.")
		}
		return nil
	}
	h := d.writeHandler(NameBulkCreateWorkItems, params, check, func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
		l, _ := d.life()
		var items []tracker.NewWorkItem
		for _, it := range a.Objects("items") {
			items = append(items, tracker.NewWorkItem{Title: it.Str("title"), Description: it.Str("description"), Status: it.Str("status"),
				Assignee: it.Str("assignee"), Tags: it.Strs("tags"), Parent: it.Str("parent")})
		}
		res, err := l.BulkCreate(ctx, w, a.Str("project"), items)
		return res.WriteResult, res, err
	})
	return tool, d.Progressive(NameBulkCreateWorkItems, h)
}
