package trackertools

import (
	"context"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/tools"
)

// Name is the tracker's toolset name (--toolsets tracker).
const Name = "tracker"

// env is what a tracker tool is built over: the surface's Deps and the
// service it calls.
type env struct {
	tools.Deps
	svc Tracker
}

// tool is a tracker tool's constructor over env.
type tool func(env) (mcp.Tool, server.ToolHandlerFunc)

// Toolset is the tracker's tools over svc, with its prompts, its
// resources (work items and projects) and their completions. The
// lifecycle tools are offered where svc is a TrackerLife, list_comments
// where it is a CommentLister. Toolset(nil) builds the definitions alone:
// its tools are offered only over a service.
func Toolset(svc Tracker) tools.Toolset {
	bind := func(f tool) tools.Constructor {
		return func(d tools.Deps) (mcp.Tool, server.ToolHandlerFunc) { return f(env{Deps: d, svc: svc}) }
	}
	has := func() bool { return svc != nil }
	life := func() bool { _, ok := svc.(TrackerLife); return ok }
	comments := func() bool { _, ok := svc.(CommentLister); return ok }
	similar := func() bool { _, ok := svc.(SimilarFinder); return ok }
	entry := func(f tool, read, operatorOnly bool, needs func() bool) tools.Entry {
		return tools.Entry{Build: bind(f), Read: read, OperatorOnly: operatorOnly, Needs: needs}
	}
	r := resources{svc: svc}
	return tools.Toolset{
		Name: Name,
		Entries: []tools.Entry{
			entry(listComments, true, false, comments),
			entry(listTags, true, false, has),
			entry(listProjects, true, false, has),
			entry(getWorkItem, true, false, has),
			entry(listWorkItems, true, false, has),
			entry(searchWorkItems, true, false, has),
			entry(similarWorkItems, true, false, similar),
			entry(createProject, false, false, has),
			entry(createWorkItem, false, false, has),
			entry(updateWorkItem, false, false, has),
			entry(commentOnWorkItem, false, false, has),
			entry(moveWorkItem, false, false, has),
			entry(mergeWorkItems, false, false, has),
			entry(trashWorkItem, false, false, has),
			entry(restoreWorkItem, false, false, has),
			entry(purgeWorkItem, false, true, has),
			entry(listWorkItemHistory, true, false, life),
			entry(getProject, true, false, life),
			entry(updateProject, false, false, life),
			entry(emptyTrash, false, true, life),
			entry(bulkUpdateWorkItems, false, false, life),
			entry(bulkCreateWorkItems, false, false, life),
		},
		Prompts:   func(d tools.Deps) []server.ServerPrompt { return env{Deps: d, svc: svc}.prompts() },
		Resources: r.kinds(),
		Listing:   &tools.Listing{Heads: r.projectHeads, Next: r.itemStretch},
		Complete: map[string]func(context.Context, tools.Deps, string, map[string]string) []string{
			"project": func(ctx context.Context, d tools.Deps, _ string, _ map[string]string) []string {
				return r.projects(ctx, d)
			},
			"key":       r.itemKeys,
			"into":      r.itemKeys,
			"duplicate": r.itemKeys,
			"tag":       r.tags,
			"tags":      r.tags,
			"status":    func(context.Context, tools.Deps, string, map[string]string) []string { return tracker.Statuses },
		},
	}
}

// Every work item and project is an MCP resource.
const (
	ResourceWorkItem = "crewlet://work-items/{key}"
	ResourceProject  = "crewlet://projects/{key}"
	prefixWorkItem   = "crewlet://work-items/"
	prefixProject    = "crewlet://projects/"
)

// ProjectRead is a project resource: the project, with the read's level
// and position.
type ProjectRead struct {
	engine.ReadInfo
	Project tracker.Project `json:"project"`
}

// tagScanPages bounds how many pages of items a tag completion reads: the
// tracker keeps no table of tags, so the tags are those of the first
// tagScanPages*MaxListLimit items.
const tagScanPages = 5

// resources are the tracker's resources and completions over its service.
type resources struct{ svc Tracker }

func (r resources) kinds() []tools.ResourceKind {
	return []tools.ResourceKind{
		{Template: ResourceWorkItem, Prefix: prefixWorkItem, Name: "work-item", Title: "Work item", Arg: "key",
			Desc: "A work item by key (ENG-8): what get_work_item answers.", Read: r.readWorkItem, Scope: r.itemScope},
		{Template: ResourceProject, Prefix: prefixProject, Name: "project", Title: "Project", Arg: "project",
			Desc: "A project by key (ENG): key, name, counts.", Read: r.readProject,
			Scope: func(_ context.Context, _ tools.Deps, key string) (string, error) { return "project:" + key, nil }},
	}
}

func (r resources) readWorkItem(ctx context.Context, d tools.Deps, key string) (any, error) {
	if ref := checkItemKey("key", key); ref != nil {
		return nil, ref
	}
	res, err := r.svc.GetWorkItem(ctx, d.ReadOptions(ctx, engine.StreamTracker), key)
	if res.Comments == nil {
		res.Comments = []tracker.Comment{}
	}
	return res, err
}

// itemScope is an item's scope by its id, read once here, so a
// subscription follows it across a move that changes its key.
func (r resources) itemScope(ctx context.Context, d tools.Deps, key string) (string, error) {
	res, err := r.readWorkItem(ctx, d, key)
	if err != nil {
		return "", err
	}
	return "item:" + res.(tracker.ItemRead).Item.ID, nil
}

func (r resources) readProject(ctx context.Context, d tools.Deps, key string) (any, error) {
	list, err := r.svc.ListProjects(ctx, d.ReadOptions(ctx, engine.StreamTracker))
	if err != nil {
		return nil, err
	}
	for _, p := range list.Projects {
		if p.Key == key {
			return ProjectRead{ReadInfo: list.ReadInfo, Project: p}, nil
		}
	}
	return nil, engine.Refuse(engine.CodeNotFound, "project %s does not exist; resources/list or list_projects shows the projects.", tools.Quote(key))
}

// projectHeads lists every project on resources/list's first page.
func (r resources) projectHeads(ctx context.Context, d tools.Deps) ([]mcp.Resource, error) {
	ps, err := r.svc.ListProjects(ctx, d.ReadOptions(ctx, engine.StreamTracker))
	if err != nil {
		return nil, err
	}
	var out []mcp.Resource
	for _, p := range ps.Projects {
		out = append(out, tools.NewResource(prefixProject+p.Key, p.Key, p.Name))
	}
	return out, nil
}

// itemStretch appends the next page of work items.
func (r resources) itemStretch(ctx context.Context, d tools.Deps, c tools.ListCursor, out []mcp.Resource) ([]mcp.Resource, tools.ListCursor, bool, error) {
	items, err := r.svc.ListWorkItems(ctx, d.ReadOptions(ctx, engine.StreamTracker), tracker.ListFilter{Limit: tools.ListPage, Cursor: c.Cursor})
	if err != nil {
		return nil, c, false, err
	}
	for _, it := range items.Items {
		out = append(out, tools.NewResource(prefixWorkItem+it.Key, it.Key, it.Title))
	}
	return out, tools.ListCursor{Cursor: items.NextCursor}, items.NextCursor == "", nil
}

// projects are the project keys, for completions.
func (r resources) projects(ctx context.Context, d tools.Deps) []string {
	list, err := r.svc.ListProjects(ctx, d.ReadOptions(ctx, engine.StreamTracker))
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range list.Projects {
		out = append(out, p.Key)
	}
	return out
}

// itemKeys are the keys of one project's items: the project the prefix
// names (ENG-1 names ENG) or the one already chosen; with neither, the
// project keys followed by a dash, so the next completion lands in one.
func (r resources) itemKeys(ctx context.Context, d tools.Deps, prefix string, resolved map[string]string) []string {
	project := resolved["project"]
	if p, _, ok := strings.Cut(prefix, "-"); ok {
		project = strings.ToUpper(p)
	}
	if project == "" {
		var out []string
		for _, p := range r.projects(ctx, d) {
			out = append(out, p+"-")
		}
		return out
	}
	if checkProjectKey("project", project) != nil {
		return nil
	}
	items, err := r.svc.ListWorkItems(ctx, d.ReadOptions(ctx, engine.StreamTracker), tracker.ListFilter{Project: project, Limit: tracker.MaxListLimit})
	if err != nil {
		return nil
	}
	var out []string
	for _, it := range items.Items {
		out = append(out, it.Key)
	}
	return out
}

// tags are the tags on the items read (see tagScanPages), of one project
// when one is chosen.
func (r resources) tags(ctx context.Context, d tools.Deps, _ string, resolved map[string]string) []string {
	project := resolved["project"]
	if project != "" && checkProjectKey("project", project) != nil {
		return nil
	}
	var out []string
	f := tracker.ListFilter{Project: project, Limit: tracker.MaxListLimit}
	for range tagScanPages {
		items, err := r.svc.ListWorkItems(ctx, d.ReadOptions(ctx, engine.StreamTracker), f)
		if err != nil {
			break
		}
		for _, it := range items.Items {
			out = append(out, it.Tags...)
		}
		if items.NextCursor == "" {
			break
		}
		f.Cursor = items.NextCursor
	}
	return out
}
