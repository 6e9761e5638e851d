package trackertools

import (
	"context"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/tools"
)

// Tracker is the tracker service the tools call (*tracker.Service). Errors
// are *engine.Refusal for refusals; any other error is internal.
type Tracker interface {
	CreateProject(ctx context.Context, w engine.WriteOptions, key, name string) (tracker.ProjectWrite, error)
	ListProjects(ctx context.Context, r engine.ReadOptions) (tracker.ProjectList, error)
	CreateWorkItem(ctx context.Context, w engine.WriteOptions, in tracker.NewWorkItem) (tracker.ItemWrite, error)
	GetWorkItem(ctx context.Context, r engine.ReadOptions, key string) (tracker.ItemRead, error)
	ListWorkItems(ctx context.Context, r engine.ReadOptions, f tracker.ListFilter) (tracker.ItemList, error)
	UpdateWorkItem(ctx context.Context, w engine.WriteOptions, key string, ifMatch uint64, p tracker.ItemPatch) (tracker.ItemWrite, error)
	CommentOnWorkItem(ctx context.Context, w engine.WriteOptions, key, author, body string) (tracker.ItemWrite, error)
	MoveWorkItem(ctx context.Context, w engine.WriteOptions, key, to string) (tracker.ItemWrite, error)
	MergeWorkItems(ctx context.Context, w engine.WriteOptions, into string, duplicates []string) (tracker.ItemWrite, error)
	TrashWorkItem(ctx context.Context, w engine.WriteOptions, key string) (tracker.ItemWrite, error)
	RestoreWorkItem(ctx context.Context, w engine.WriteOptions, key string) (tracker.ItemWrite, error)
	PurgeWorkItem(ctx context.Context, w engine.WriteOptions, key string) (tracker.PurgeResult, error)
	SearchWorkItems(ctx context.Context, r engine.ReadOptions, query, project string, limit int) (tracker.SearchResult, error)
	SearchWorkItemsPage(ctx context.Context, r engine.ReadOptions, q tracker.SearchQuery) (tracker.SearchResult, error)
	ListTags(ctx context.Context, r engine.ReadOptions, project string) (tracker.TagList, error)
}

func (d env) tracker() Tracker { return d.svc }

// Tool names, fixed by the contract.
const (
	NameCreateProject     = "create_project"
	NameListProjects      = "list_projects"
	NameCreateWorkItem    = "create_work_item"
	NameGetWorkItem       = "get_work_item"
	NameListWorkItems     = "list_work_items"
	NameUpdateWorkItem    = "update_work_item"
	NameSearchWorkItems   = "search_work_items"
	NameCommentOnWorkItem = "comment_on_work_item"
	NameMoveWorkItem      = "move_work_item"
	NameMergeWorkItems    = "merge_work_items"
	NameTrashWorkItem     = "trash_work_item"
	NameRestoreWorkItem   = "restore_work_item"
	NamePurgeWorkItem     = "purge_work_item"
)

// Argument declarations shared across tools.
var (
	projectKeyDesc = "Project key: 2-10 upper-case letters and digits, starting with a letter, like ENG; its items are keyed ENG-1, ENG-2, ..."
	itemKeyDesc    = "Work item key, like ENG-8."
	statusDesc     = "Status: one of " + strings.Join(tracker.Statuses, ", ") + "."
	assigneeDesc   = "Who the item is assigned to (a name or handle); empty for nobody."
)

// createProject is create_project {key, name}.
func createProject(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.WithOpID([]tools.Param{
		{Name: "key", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: maxProjectKey, Desc: projectKeyDesc},
		{Name: "name", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: tracker.MaxNameBytes, Desc: "The project's display name (for example Engineering)."},
	})
	tool := tools.NewTool(NameCreateProject,
		d.WriteDesc("Create a project: a key prefixing its items' keys, and a name. A key is taken for good: an existing one is refused already_exists."),
		params,
		// Idempotent: a repeat with the same key has no further effect (it
		// is refused already_exists), with or without op_id.
		tools.WriteAnnotations("Create project", true),
		tools.OutputSchema[tracker.ProjectWrite]())
	return tool, d.writeHandler(NameCreateProject, params, func(a tools.Args) *engine.Refusal { return checkProjectKey("key", a.Str("key")) },
		func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
			res, err := d.tracker().CreateProject(ctx, w, a.Str("key"), a.Str("name"))
			d.Explain(&res.WriteResult)
			return res.WriteResult, res, err
		})
}

// listProjects is list_projects {}.
func listProjects(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := []tools.Param{{Name: argIncludeArchived, Kind: tools.KindBool, Desc: "Archived ones too."}}
	tool := tools.NewTool(NameListProjects,
		"List every project: key, name and the last item number given out, with the read level and position.",
		params, tools.ReadAnnotations("List projects"), tools.OutputSchema[tracker.ProjectList]())
	return tool, d.ReadHandler(NameListProjects, params, nil, func(ctx context.Context, a tools.Args) (any, error) {
		var res tracker.ProjectList
		var err error
		if l, ok := d.life(); ok {
			res, err = l.ListProjectsIn(ctx, d.ReadOptions(ctx, engine.StreamTracker), a.Flag(argIncludeArchived))
		} else {
			res, err = d.tracker().ListProjects(ctx, d.ReadOptions(ctx, engine.StreamTracker))
		}
		if res.Projects == nil {
			res.Projects = []tracker.Project{}
		}
		return res, err
	})
}

// createWorkItem is create_work_item {project, title, description, status,
// assignee, tags, parent, depends_on}.
func createWorkItem(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.WithOpID(append([]tools.Param{
		{Name: "project", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: maxProjectKey, Desc: "Project key (ENG); list_projects lists them."},
		{Name: "title", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: tracker.MaxTitleBytes, Desc: "One-line title."},
		{Name: "description", Kind: tools.KindString, Long: true, MaxBytes: tracker.MaxDescriptionBytes, Desc: "Markdown."},
		{Name: "status", Kind: tools.KindString, Enum: tracker.Statuses, Desc: "Default open."},
		{Name: "assignee", Kind: tools.KindString, MaxBytes: tracker.MaxAssigneeBytes, Desc: "" + assigneeDesc},
		tagsParam("tags", "Labels."),
		{Name: "parent", Kind: tools.KindString, MaxBytes: maxItemKey, Desc: "Key of the parent item."},
		keysParam("depends_on", "Keys of items this one depends on; each gets a blocks edge back."),
	}, fieldParams(false)...))
	tool := tools.NewTool(NameCreateWorkItem,
		d.WriteDesc("Create a work item; it gets the project's next key (ENG-8). Answers item (its version is update_work_item's if_match) and, with depends_on, a step per mirror edge."),
		params,
		// Not idempotent: each call without op_id creates another item.
		tools.WriteAnnotations("Create work item", false),
		tools.OutputSchema[tracker.ItemWrite]())
	check := func(a tools.Args) *engine.Refusal {
		if r := checkProjectKey("project", a.Str("project")); r != nil {
			return r
		}
		if a.Str("parent") != "" {
			return checkItemKey("parent", a.Str("parent"))
		}
		return nil
	}
	return tool, d.writeHandler(NameCreateWorkItem, params, check, func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
		in := tracker.NewWorkItem{
			Project:     a.Str("project"),
			Title:       a.Str("title"),
			Description: a.Str("description"),
			Status:      a.Str("status"),
			Assignee:    a.Str("assignee"),
			Tags:        a.Strs("tags"),
			Parent:      a.Str("parent"),
			DependsOn:   a.Strs("depends_on"),
		}
		newItemFields(&in, a)
		res, err := d.tracker().CreateWorkItem(ctx, w, in)
		return res.WriteResult, res, err
	})
}

// getWorkItem is get_work_item {key}.
func getWorkItem(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := []tools.Param{keyParam}
	tool := tools.NewTool(NameGetWorkItem,
		"Get a work item by key: fields, tags, watchers, edges, parent, version (update_work_item's if_match) and latest comments.",
		params, tools.ReadAnnotations("Get work item"), tools.OutputSchema[tracker.ItemRead]())
	return tool, d.ReadHandler(NameGetWorkItem, params, func(a tools.Args) *engine.Refusal { return checkItemKey("key", a.Str("key")) },
		func(ctx context.Context, a tools.Args) (any, error) {
			res, err := d.tracker().GetWorkItem(ctx, d.ReadOptions(ctx, engine.StreamTracker), a.Str("key"))
			if res.Comments == nil {
				res.Comments = []tracker.Comment{}
			}
			return res, err
		})
}

// updateFields are update_work_item's arguments that change something.
var updateFields = []string{"title", "description", "status", "transition", "priority", "due", "estimate", "type", "assignee", "parent",
	"add_tags", "remove_tags", "add_watchers", "remove_watchers",
	"add_relations", "remove_relations", "add_dependencies", "remove_dependencies"}

// updateWorkItem is update_work_item {key, if_match, title, description,
// status, assignee, parent, add_/remove_ tags, watchers, relations,
// dependencies}. Sets change by what is added and removed, never by
// replacing the whole set, so two callers adding different tags both land.
func updateWorkItem(d env) (mcp.Tool, server.ToolHandlerFunc) {
	relationKinds := []string{tracker.EdgeRelatesTo, tracker.EdgeDuplicates}
	params := d.WithOpID(append([]tools.Param{
		keyParam,
		{Name: "if_match", Kind: tools.KindInteger, Min: 1, Desc: "Optional: the version you read (get_work_item); refused stale if it moved."},
		{Name: "title", Kind: tools.KindString, NonEmpty: true, MaxBytes: tracker.MaxTitleBytes, Desc: "New title."},
		{Name: "description", Kind: tools.KindString, Long: true, MaxBytes: tracker.MaxDescriptionBytes, Desc: "New Markdown; empty clears it."},
		{Name: "status", Kind: tools.KindString, Enum: tracker.Statuses, Desc: "New status."},
		transitionParam,
		{Name: "assignee", Kind: tools.KindString, MaxBytes: tracker.MaxAssigneeBytes, Desc: "New assignee; empty unassigns."},
		{Name: "parent", Kind: tools.KindString, MaxBytes: maxItemKey, Desc: "New parent's key; empty detaches."},
		tagsParam("add_tags", "Tags to add."),
		tagsParam("remove_tags", "Tags to remove."),
		tagsParam("add_watchers", "Watchers to add."),
		tagsParam("remove_watchers", "Watchers to remove."),
		{Name: "add_relations", Kind: tools.KindCustom, Custom: edgesType, MaxItems: tracker.MaxEdges, Enum: relationKinds, Desc: "Edges to add, {kind, key}; the other item gets the mirror."},
		{Name: "remove_relations", Kind: tools.KindCustom, Custom: edgesType, MaxItems: tracker.MaxEdges, Enum: relationKinds, Desc: "Edges to remove, {kind, key}."},
		keysParam("add_dependencies", "Keys this item comes to depend on; each gets a blocks edge back."),
		keysParam("remove_dependencies", "Keys it no longer depends on."),
	}, fieldParams(true)...))
	tool := tools.NewTool(NameUpdateWorkItem,
		d.WriteDesc("Change a work item: pass only what changes (and if_match). Answers item at its new version; when edges change, a step per mirror (one_sided: mirrors left unknown)."+transitionSentence),
		params,
		// Not destructive: it replaces only the named fields, only at the
		// version the caller read (if_match), and every prior version stays
		// in the log; trash and purge are the destructive tools, and marking
		// every edit destructive would blunt that signal. Idempotent: a
		// repeat with the same arguments names a version that is no longer
		// current and is refused stale, so it has no further effect.
		tools.WriteAnnotations("Update work item", true),
		tools.OutputSchema[tracker.ItemWrite]())
	check := func(a tools.Args) *engine.Refusal {
		if r := checkItemKey("key", a.Str("key")); r != nil {
			return r
		}
		if a.Str("parent") != "" {
			if r := checkItemKey("parent", a.Str("parent")); r != nil {
				return r
			}
		}
		if !slices.ContainsFunc(updateFields, a.Has) {
			return engine.Refuse(engine.CodeInvalidArgument, "Nothing to change: pass at least one of %s.", strings.Join(updateFields, ", "))
		}
		return nil
	}
	return tool, d.writeHandler(NameUpdateWorkItem, params, check, func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
		p := tracker.ItemPatch{
			Title:          a.StrPtr("title"),
			Description:    a.StrPtr("description"),
			Status:         a.StrPtr("status"),
			Assignee:       a.StrPtr("assignee"),
			Parent:         a.StrPtr("parent"),
			AddTags:        a.Strs("add_tags"),
			RemoveTags:     a.Strs("remove_tags"),
			AddWatchers:    a.Strs("add_watchers"),
			RemoveWatchers: a.Strs("remove_watchers"),
			AddEdges:       append(edges(a, "add_relations"), dependencies(a.Strs("add_dependencies"))...),
			RemoveEdges:    append(edges(a, "remove_relations"), dependencies(a.Strs("remove_dependencies"))...),
		}
		patchFields(&p, a)
		res, err := d.tracker().UpdateWorkItem(ctx, w, a.Str("key"), a.Uint("if_match"), p)
		return res.WriteResult, res, err
	})
}

// dependencies are depends_on edges to keys.
func dependencies(keys []string) []tracker.Edge {
	var out []tracker.Edge
	for _, k := range keys {
		out = append(out, tracker.Edge{Kind: tracker.EdgeDependsOn, Key: k})
	}
	return out
}

// tagsParam declares a list of tags or watchers.
func tagsParam(name, desc string) tools.Param {
	return tools.Param{Name: name, Kind: tools.KindStrings, MaxItems: tracker.MaxTags, NonEmpty: true, MaxBytes: tracker.MaxTagBytes, Desc: desc}
}

// keysParam declares a list of work item keys.
func keysParam(name, desc string) tools.Param {
	return tools.Param{Name: name, Kind: tools.KindStrings, MaxItems: tracker.MaxEdges, Each: checkItemKey, MaxBytes: maxItemKey, Desc: desc}
}

// Project keys are 2 to 10 upper-case letters and digits starting with a
// letter, as the tracker service checks them.
const (
	minProjectKey = 2
	maxProjectKey = tools.MaxKeyBytes
	// maxItemKey is a project key, a hyphen and an 18-digit number.
	maxItemKey = maxProjectKey + 1 + 18
)

// checkProjectKey refuses a project key that is not 2 to 10 upper-case
// letters and digits starting with a letter. The service checks too;
// checking here answers a malformed key before anything else runs.
func checkProjectKey(arg, key string) *engine.Refusal {
	if validProjectKey(key) {
		return nil
	}
	return engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s, which is not a project key: use 2 to 10 upper-case letters and digits starting with a letter, like ENG (list_projects lists them).", arg, tools.Quote(key))
}

// checkItemKey refuses a work item key not of the form <PROJECT>-<n>.
func checkItemKey(arg, key string) *engine.Refusal {
	i := strings.LastIndexByte(key, '-')
	if i > 0 && validProjectKey(key[:i]) && validNumber(key[i+1:]) {
		return nil
	}
	return engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s, which is not a work item key: use the project key, a hyphen and the item number, like ENG-8 (list_work_items lists them).", arg, tools.Quote(key))
}

func validProjectKey(s string) bool {
	if len(s) < minProjectKey || len(s) > maxProjectKey || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func validNumber(s string) bool {
	if s == "" || s[0] == '0' || len(s) > 18 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// The tracker service is what the tools call.
var _ Tracker = (*tracker.Service)(nil)
