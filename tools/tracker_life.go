package tools

// The tracker's lifecycle tools: an item's history, a project read and
// updated (archived), the trash emptied, and the comment edits that
// comment_on_work_item takes.

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TrackerLife is the lifecycle half of the tracker service
// (*tracker.Service).
type TrackerLife interface {
	Comment(ctx context.Context, w engine.WriteOptions, in tracker.CommentInput) (tracker.CommentWrite, error)
	ListItemHistory(ctx context.Context, r engine.ReadOptions, key, cursor string, limit int) (tracker.HistoryPage, error)
	GetProject(ctx context.Context, r engine.ReadOptions, key string) (tracker.ProjectRead, error)
	ListProjectsIn(ctx context.Context, r engine.ReadOptions, includeArchived bool) (tracker.ProjectList, error)
	UpdateProject(ctx context.Context, w engine.WriteOptions, key string, name *string, archived *bool) (tracker.ProjectWrite, error)
	EmptyTrash(ctx context.Context, w engine.WriteOptions, project string) (tracker.ItemWrite, error)
	BulkUpdateWhere(ctx context.Context, w engine.WriteOptions, project string, keys []string, f tracker.BulkFilter, p tracker.BulkPatch) (tracker.ItemWrite, error)
	BulkCreate(ctx context.Context, w engine.WriteOptions, project string, items []tracker.NewWorkItem) (tracker.ItemWrite, error)
}

var _ TrackerLife = (*tracker.Service)(nil)

// Tool names of the lifecycle tools.
const (
	NameListWorkItemHistory  = "list_work_item_history"
	NameGetProject           = "get_project"
	NameUpdateProject        = "update_project"
	NameEmptyTrash           = "empty_trash"
	NameBulkUpdateWorkItems  = "bulk_update_work_items"
	NameBulkCreateWorkItems  = "bulk_create_work_items"
	argIncludeArchived       = "include_archived"
	argCommentID, argDelete  = "comment_id", "delete"
	projectParamDesc         = "Project key (ENG)."
	updateProjectDescription = "Rename or archive a project; archived ones take no new items and leave list_projects."
)

func init() {
	life := needs[TrackerLife]
	register(
		Entry{Build: ListWorkItemHistory, Read: true, Needs: life, Toolset: ToolsetTracker},
		Entry{Build: GetProject, Read: true, Needs: life, Toolset: ToolsetTracker},
		Entry{Build: UpdateProject, Needs: life, Toolset: ToolsetTracker},
		Entry{Build: EmptyTrash, OperatorOnly: true, Needs: life, Toolset: ToolsetTracker},
		Entry{Build: BulkUpdateWorkItems, Needs: life, Toolset: ToolsetTracker},
		Entry{Build: BulkCreateWorkItems, Needs: life, Toolset: ToolsetTracker},
	)
}

func (d Deps) life() (TrackerLife, bool) { return service[TrackerLife](d) }

var projectParam = param{name: "project", kind: kindString, required: true, nonEmpty: true, maxBytes: maxProjectKey, desc: projectParamDesc}

// commentEditParams are comment_on_work_item's edit arguments.
var commentEditParams = []param{
	{name: argCommentID, kind: kindInteger, min: 1, desc: "Edit this comment (its author only)."},
	{name: argDelete, kind: kindBool, desc: "With comment_id: delete it."},
}

// comment runs comment_on_work_item on the lifecycle service.
func (d Deps) comment(ctx context.Context, l TrackerLife, w engine.WriteOptions, a args, author string) (tracker.CommentWrite, error) {
	return l.Comment(ctx, w, tracker.CommentInput{Key: a.str("key"), Author: author, Body: a.str("body"),
		CommentID: a.uint(argCommentID), Delete: a.flag(argDelete)})
}

// ListWorkItemHistory is list_work_item_history {key, cursor, limit}.
func ListWorkItemHistory(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	return itemPageTool(d, NameListWorkItemHistory, "An item's changes, newest first: who, field, old, new, position.",
		"Work item history", outputSchema[tracker.HistoryPage](),
		func(ctx context.Context, r engine.ReadOptions, key, cursor string, limit int) (any, error) {
			l, _ := d.life()
			return l.ListItemHistory(ctx, r, key, cursor, limit)
		})
}

// GetProject is get_project {key}.
func GetProject(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := []param{{name: "key", kind: kindString, required: true, nonEmpty: true, maxBytes: maxProjectKey, desc: projectParamDesc}}
	tool := newTool(NameGetProject, "A project with its item counts by status.",
		params, readAnnotations("Get project"), outputSchema[tracker.ProjectRead]())
	return tool, d.readHandler(NameGetProject, params, func(a args) *engine.Refusal { return checkProjectKey("key", a.str("key")) },
		func(ctx context.Context, a args) (any, error) {
			l, _ := d.life()
			return l.GetProject(ctx, d.readOptions(ctx, engine.StreamTracker), a.str("key"))
		})
}

// UpdateProject is update_project {key, name, archived, if_match}.
func UpdateProject(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.withOpID([]param{
		{name: "key", kind: kindString, required: true, nonEmpty: true, maxBytes: maxProjectKey, desc: projectParamDesc},
		{name: "name", kind: kindString, nonEmpty: true, maxBytes: tracker.MaxNameBytes, desc: "New name."},
		{name: "archived", kind: kindBool, desc: "True archives it, false brings it back."},
		ifMatchParam,
	})
	tool := newTool(NameUpdateProject, d.writeDesc(updateProjectDescription), params,
		// Idempotent: setting the same name or flag again changes nothing.
		writeAnnotations("Update project", true), outputSchema[tracker.ProjectWrite]())
	check := func(a args) *engine.Refusal {
		if r := checkProjectKey("key", a.str("key")); r != nil {
			return r
		}
		if !a.has("name") && !a.has("archived") {
			return engine.Refuse(engine.CodeInvalidArgument, "Nothing to change: pass name, archived or both.")
		}
		return nil
	}
	return tool, d.writeHandler(NameUpdateProject, params, check, func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
		l, _ := d.life()
		w.IfMatch = a.uint("if_match")
		res, err := l.UpdateProject(ctx, w, a.str("key"), a.strPtr("name"), a.boolPtr("archived"))
		d.explain(&res.WriteResult)
		return res.WriteResult, res, err
	})
}

// EmptyTrash is empty_trash {project}, operator only: it purges.
func EmptyTrash(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	return gestureTool{
		name: NameEmptyTrash, title: "Empty trash", params: []param{projectParam},
		desc: "Purge every item in a project's trash for good (operator only), as purge_work_item does each. Answers a step per item.",
		// Destructive: it purges. Idempotent: an empty trash stays empty.
		destructive: true, idempotent: true,
		check: func(a args) *engine.Refusal {
			if d.Surface == Seat {
				return engine.Refuse(engine.CodeInvalidArgument, "empty_trash is for operators only; a seat can restore_work_item or leave items in the trash.")
			}
			return checkProjectKey("project", a.str("project"))
		},
		run: func(ctx context.Context, d Deps, w engine.WriteOptions, a args) (tracker.ItemWrite, error) {
			l, _ := d.life()
			return l.EmptyTrash(ctx, w, a.str("project"))
		},
	}.buildProgressive(d)
}

// buildProgressive is build with the call's progress reported.
func (g gestureTool) buildProgressive(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	t, h := g.build(d)
	return t, d.progressive(g.name, h)
}
