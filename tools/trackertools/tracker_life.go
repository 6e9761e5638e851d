package trackertools

// The tracker's lifecycle tools: an item's history, a project read and
// updated (archived), the trash emptied, and the comment edits that
// comment_on_work_item takes.

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/tools"
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

func (d env) life() (TrackerLife, bool) {
	l, ok := d.svc.(TrackerLife)
	return l, ok
}

var projectParam = tools.Param{Name: "project", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: maxProjectKey, Desc: projectParamDesc}

// commentEditParams are comment_on_work_item's edit arguments.
var commentEditParams = []tools.Param{
	{Name: argCommentID, Kind: tools.KindInteger, Min: 1, Desc: "Edit this comment (its author only)."},
	{Name: argDelete, Kind: tools.KindBool, Desc: "With comment_id: delete it."},
}

// comment runs comment_on_work_item on the lifecycle service.
func (d env) comment(ctx context.Context, l TrackerLife, w engine.WriteOptions, a tools.Args, author string) (tracker.CommentWrite, error) {
	return l.Comment(ctx, w, tracker.CommentInput{Key: a.Str("key"), Author: author, Body: a.Str("body"),
		CommentID: a.Uint(argCommentID), Delete: a.Flag(argDelete)})
}

// listWorkItemHistory is list_work_item_history {key, cursor, limit}.
func listWorkItemHistory(d env) (mcp.Tool, server.ToolHandlerFunc) {
	return itemPageTool(d, NameListWorkItemHistory, "An item's changes, newest first: who, field, old, new, position.",
		"Work item history", tools.OutputSchema[tracker.HistoryPage](),
		func(ctx context.Context, r engine.ReadOptions, key, cursor string, limit int) (any, error) {
			l, _ := d.life()
			return l.ListItemHistory(ctx, r, key, cursor, limit)
		})
}

// getProject is get_project {key}.
func getProject(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := []tools.Param{{Name: "key", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: maxProjectKey, Desc: projectParamDesc}}
	tool := tools.NewTool(NameGetProject, "A project with its item counts by status.",
		params, tools.ReadAnnotations("Get project"), tools.OutputSchema[tracker.ProjectRead]())
	return tool, d.ReadHandler(NameGetProject, params, func(a tools.Args) *engine.Refusal { return checkProjectKey("key", a.Str("key")) },
		func(ctx context.Context, a tools.Args) (any, error) {
			l, _ := d.life()
			return l.GetProject(ctx, d.ReadOptions(ctx, engine.StreamTracker), a.Str("key"))
		})
}

// updateProject is update_project {key, name, archived, if_match}.
func updateProject(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.WithOpID([]tools.Param{
		{Name: "key", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: maxProjectKey, Desc: projectParamDesc},
		{Name: "name", Kind: tools.KindString, NonEmpty: true, MaxBytes: tracker.MaxNameBytes, Desc: "New name."},
		{Name: "archived", Kind: tools.KindBool, Desc: "True archives it, false brings it back."},
		ifMatchParam,
	})
	tool := tools.NewTool(NameUpdateProject, d.WriteDesc(updateProjectDescription), params,
		// Idempotent: setting the same name or flag again changes nothing.
		tools.WriteAnnotations("Update project", true), tools.OutputSchema[tracker.ProjectWrite]())
	check := func(a tools.Args) *engine.Refusal {
		if r := checkProjectKey("key", a.Str("key")); r != nil {
			return r
		}
		if !a.Has("name") && !a.Has("archived") {
			return engine.Refuse(engine.CodeInvalidArgument, "Nothing to change: pass name, archived or both.")
		}
		return nil
	}
	return tool, d.writeHandler(NameUpdateProject, params, check, func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
		l, _ := d.life()
		w.IfMatch = a.Uint("if_match")
		res, err := l.UpdateProject(ctx, w, a.Str("key"), a.StrPtr("name"), a.BoolPtr("archived"))
		d.Explain(&res.WriteResult)
		return res.WriteResult, res, err
	})
}

// emptyTrash is empty_trash {project}, operator only: it purges.
func emptyTrash(d env) (mcp.Tool, server.ToolHandlerFunc) {
	return gestureTool{
		name: NameEmptyTrash, title: "Empty trash", params: []tools.Param{projectParam},
		desc: "Purge every item in a project's trash for good (operator only), as purge_work_item does each. Answers a step per item.",
		// Destructive: it purges. Idempotent: an empty trash stays empty.
		destructive: true, idempotent: true,
		check: func(a tools.Args) *engine.Refusal {
			if d.Surface == tools.Seat {
				return engine.Refuse(engine.CodeInvalidArgument, "empty_trash is for operators only; a seat can restore_work_item or leave items in the trash.")
			}
			return checkProjectKey("project", a.Str("project"))
		},
		run: func(ctx context.Context, d env, w engine.WriteOptions, a tools.Args) (tracker.ItemWrite, error) {
			l, _ := d.life()
			return l.EmptyTrash(ctx, w, a.Str("project"))
		},
	}.buildProgressive(d)
}

// buildProgressive is build with the call's progress reported.
func (g gestureTool) buildProgressive(d env) (mcp.Tool, server.ToolHandlerFunc) {
	t, h := g.build(d)
	return t, d.Progressive(g.name, h)
}
