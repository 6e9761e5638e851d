package tools

import (
	"context"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
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

func init() {
	tracker := needs[Tracker]
	register(
		Entry{Build: ListProjects, Read: true, Needs: tracker, Toolset: ToolsetTracker},
		Entry{Build: GetWorkItem, Read: true, Needs: tracker, Toolset: ToolsetTracker},
		Entry{Build: ListWorkItems, Read: true, Needs: tracker, Toolset: ToolsetTracker},
		Entry{Build: SearchWorkItems, Read: true, Needs: tracker, Toolset: ToolsetTracker},
		Entry{Build: CreateProject, Needs: tracker, Toolset: ToolsetTracker},
		Entry{Build: CreateWorkItem, Needs: tracker, Toolset: ToolsetTracker},
		Entry{Build: UpdateWorkItem, Needs: tracker, Toolset: ToolsetTracker},
		Entry{Build: CommentOnWorkItem, Needs: tracker, Toolset: ToolsetTracker},
		Entry{Build: MoveWorkItem, Needs: tracker, Toolset: ToolsetTracker},
		Entry{Build: MergeWorkItems, Needs: tracker, Toolset: ToolsetTracker},
		Entry{Build: TrashWorkItem, Needs: tracker, Toolset: ToolsetTracker},
		Entry{Build: RestoreWorkItem, Needs: tracker, Toolset: ToolsetTracker},
		Entry{Build: PurgeWorkItem, OperatorOnly: true, Needs: tracker, Toolset: ToolsetTracker},
	)
}

func (d Deps) tracker() Tracker {
	t, _ := service[Tracker](d)
	return t
}

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

const argOpID = "op_id"

// outcomeSentence ends every write description on the operator surface.
const outcomeSentence = " The answer's outcome is applied (done here; position is where it landed), pending (durable in the log but not yet applied on this node: do not retry, it applies on its own) or unknown (the write may or may not have landed: call again with the same arguments and the answer's op_id)."

var opIDParam = param{
	name:     argOpID,
	kind:     kindString,
	maxBytes: 256,
	desc:     "Optional. Leave it out for a new write, or mint a fresh v7 UUID yourself just before the first attempt so a lost answer can be retried; to repeat a write, send the same op_id with exactly the same arguments (with any others it is refused op_reused) and it happens at most once.",
}

// Argument declarations shared across tools.
var (
	projectKeyDesc = "Project key: 2-10 upper-case letters and digits, starting with a letter, like ENG; its items are keyed ENG-1, ENG-2, ..."
	itemKeyDesc    = "Work item key, like ENG-8."
	statusDesc     = "Status: one of " + strings.Join(tracker.Statuses, ", ") + "."
	assigneeDesc   = "Who the item is assigned to (a name or handle); empty for nobody."
)

// The annotations, all four hints set on every tool: mcp.NewTool defaults
// to destructive and open-world, which is wrong for every tool here.
func readAnnotations(title string) []mcp.ToolOption {
	return []mcp.ToolOption{
		mcp.WithTitleAnnotation(title),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		// The tracker is the server's own closed world, not the internet.
		mcp.WithOpenWorldHintAnnotation(false),
	}
}

func writeAnnotations(title string, idempotent bool) []mcp.ToolOption {
	return []mcp.ToolOption{
		mcp.WithTitleAnnotation(title),
		mcp.WithReadOnlyHintAnnotation(false),
		// None of these writes destroys anything; trash and purge (later
		// tools) are the destructive ones.
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(idempotent),
		mcp.WithOpenWorldHintAnnotation(false),
	}
}

// newTool assembles a definition from its parts.
func newTool(name, desc string, params []param, annotations []mcp.ToolOption, output mcp.ToolOption) mcp.Tool {
	opts := []mcp.ToolOption{mcp.WithDescription(desc)}
	opts = append(opts, schemaOptions(params)...)
	opts = append(opts, annotations...)
	opts = append(opts, output)
	return mcp.NewTool(name, opts...)
}

func (d Deps) withOpID(params []param) []param {
	if !d.takesOpID() {
		return params
	}
	return append(params, opIDParam)
}

func (d Deps) writeDesc(desc string) string {
	if !d.takesOpID() {
		return desc
	}
	return desc + outcomeSentence
}

// CreateProject is create_project {key, name}.
func CreateProject(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.withOpID([]param{
		{name: "key", kind: kindString, required: true, nonEmpty: true, maxBytes: maxProjectKey, desc: projectKeyDesc},
		{name: "name", kind: kindString, required: true, nonEmpty: true, maxBytes: tracker.MaxNameBytes, desc: "The project's display name (for example Engineering)."},
	})
	tool := newTool(NameCreateProject,
		d.writeDesc("Create a project: a key prefixing its items' keys, and a name. A key is taken for good: an existing one is refused already_exists."),
		params,
		// Idempotent: a repeat with the same key has no further effect (it
		// is refused already_exists), with or without op_id.
		writeAnnotations("Create project", true),
		outputSchema[tracker.ProjectWrite]())
	return tool, d.writeHandler(NameCreateProject, params, func(a args) *engine.Refusal { return checkProjectKey("key", a.str("key")) },
		func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
			res, err := d.tracker().CreateProject(ctx, w, a.str("key"), a.str("name"))
			d.explain(&res.WriteResult)
			return res.WriteResult, res, err
		})
}

// ListProjects is list_projects {}.
func ListProjects(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := []param{{name: argIncludeArchived, kind: kindBool, desc: "Archived ones too."}}
	tool := newTool(NameListProjects,
		"List every project: key, name and the last item number given out, with the read level and position.",
		params, readAnnotations("List projects"), outputSchema[tracker.ProjectList]())
	return tool, d.readHandler(NameListProjects, params, nil, func(ctx context.Context, a args) (any, error) {
		var res tracker.ProjectList
		var err error
		if l, ok := d.life(); ok {
			res, err = l.ListProjectsIn(ctx, d.readOptions(ctx, engine.StreamTracker), a.flag(argIncludeArchived))
		} else {
			res, err = d.tracker().ListProjects(ctx, d.readOptions(ctx, engine.StreamTracker))
		}
		if res.Projects == nil {
			res.Projects = []tracker.Project{}
		}
		return res, err
	})
}

// CreateWorkItem is create_work_item {project, title, description, status,
// assignee, tags, parent, depends_on}.
func CreateWorkItem(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.withOpID(append([]param{
		{name: "project", kind: kindString, required: true, nonEmpty: true, maxBytes: maxProjectKey, desc: "Project key (ENG); list_projects lists them."},
		{name: "title", kind: kindString, required: true, nonEmpty: true, maxBytes: tracker.MaxTitleBytes, desc: "One-line title."},
		{name: "description", kind: kindString, long: true, maxBytes: tracker.MaxDescriptionBytes, desc: "Markdown."},
		{name: "status", kind: kindString, enum: tracker.Statuses, desc: "Default open."},
		{name: "assignee", kind: kindString, maxBytes: tracker.MaxAssigneeBytes, desc: "" + assigneeDesc},
		tagsParam("tags", "Labels."),
		{name: "parent", kind: kindString, maxBytes: maxItemKey, desc: "Key of the parent item."},
		keysParam("depends_on", "Keys of items this one depends on; each gets a blocks edge back."),
	}, fieldParams(false)...))
	tool := newTool(NameCreateWorkItem,
		d.writeDesc("Create a work item; it gets the project's next key (ENG-8). Answers item (its version is update_work_item's if_match) and, with depends_on, a step per mirror edge."),
		params,
		// Not idempotent: each call without op_id creates another item.
		writeAnnotations("Create work item", false),
		outputSchema[tracker.ItemWrite]())
	check := func(a args) *engine.Refusal {
		if r := checkProjectKey("project", a.str("project")); r != nil {
			return r
		}
		if a.str("parent") != "" {
			return checkItemKey("parent", a.str("parent"))
		}
		return nil
	}
	return tool, d.writeHandler(NameCreateWorkItem, params, check, func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
		in := tracker.NewWorkItem{
			Project:     a.str("project"),
			Title:       a.str("title"),
			Description: a.str("description"),
			Status:      a.str("status"),
			Assignee:    a.str("assignee"),
			Tags:        a.strs("tags"),
			Parent:      a.str("parent"),
			DependsOn:   a.strs("depends_on"),
		}
		newItemFields(&in, a)
		res, err := d.tracker().CreateWorkItem(ctx, w, in)
		return res.WriteResult, res, err
	})
}

// GetWorkItem is get_work_item {key}.
func GetWorkItem(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := []param{keyParam}
	tool := newTool(NameGetWorkItem,
		"Get a work item by key: fields, tags, watchers, edges, parent, version (update_work_item's if_match) and latest comments.",
		params, readAnnotations("Get work item"), outputSchema[tracker.ItemRead]())
	return tool, d.readHandler(NameGetWorkItem, params, func(a args) *engine.Refusal { return checkItemKey("key", a.str("key")) },
		func(ctx context.Context, a args) (any, error) {
			res, err := d.tracker().GetWorkItem(ctx, d.readOptions(ctx, engine.StreamTracker), a.str("key"))
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

// UpdateWorkItem is update_work_item {key, if_match, title, description,
// status, assignee, parent, add_/remove_ tags, watchers, relations,
// dependencies}. Sets change by what is added and removed, never by
// replacing the whole set, so two callers adding different tags both land.
func UpdateWorkItem(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	relationKinds := []string{tracker.EdgeRelatesTo, tracker.EdgeDuplicates}
	params := d.withOpID(append([]param{
		keyParam,
		{name: "if_match", kind: kindInteger, min: 1, desc: "Optional: the version you read (get_work_item); refused stale if it moved."},
		{name: "title", kind: kindString, nonEmpty: true, maxBytes: tracker.MaxTitleBytes, desc: "New title."},
		{name: "description", kind: kindString, long: true, maxBytes: tracker.MaxDescriptionBytes, desc: "New Markdown; empty clears it."},
		{name: "status", kind: kindString, enum: tracker.Statuses, desc: "New status."},
		transitionParam,
		{name: "assignee", kind: kindString, maxBytes: tracker.MaxAssigneeBytes, desc: "New assignee; empty unassigns."},
		{name: "parent", kind: kindString, maxBytes: maxItemKey, desc: "New parent's key; empty detaches."},
		tagsParam("add_tags", "Tags to add."),
		tagsParam("remove_tags", "Tags to remove."),
		tagsParam("add_watchers", "Watchers to add."),
		tagsParam("remove_watchers", "Watchers to remove."),
		{name: "add_relations", kind: kindEdges, maxItems: tracker.MaxEdges, enum: relationKinds, desc: "Edges to add, {kind, key}; the other item gets the mirror."},
		{name: "remove_relations", kind: kindEdges, maxItems: tracker.MaxEdges, enum: relationKinds, desc: "Edges to remove, {kind, key}."},
		keysParam("add_dependencies", "Keys this item comes to depend on; each gets a blocks edge back."),
		keysParam("remove_dependencies", "Keys it no longer depends on."),
	}, fieldParams(true)...))
	tool := newTool(NameUpdateWorkItem,
		d.writeDesc("Change a work item: pass only what changes (and if_match). Answers item at its new version; when edges change, a step per mirror (one_sided: mirrors left unknown)."+transitionSentence),
		params,
		// Not destructive: it replaces only the named fields, only at the
		// version the caller read (if_match), and every prior version stays
		// in the log; trash and purge are the destructive tools, and marking
		// every edit destructive would blunt that signal. Idempotent: a
		// repeat with the same arguments names a version that is no longer
		// current and is refused stale, so it has no further effect.
		writeAnnotations("Update work item", true),
		outputSchema[tracker.ItemWrite]())
	check := func(a args) *engine.Refusal {
		if r := checkItemKey("key", a.str("key")); r != nil {
			return r
		}
		if a.str("parent") != "" {
			if r := checkItemKey("parent", a.str("parent")); r != nil {
				return r
			}
		}
		if !slices.ContainsFunc(updateFields, a.has) {
			return engine.Refuse(engine.CodeInvalidArgument, "Nothing to change: pass at least one of %s.", strings.Join(updateFields, ", "))
		}
		return nil
	}
	return tool, d.writeHandler(NameUpdateWorkItem, params, check, func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
		p := tracker.ItemPatch{
			Title:          a.strPtr("title"),
			Description:    a.strPtr("description"),
			Status:         a.strPtr("status"),
			Assignee:       a.strPtr("assignee"),
			Parent:         a.strPtr("parent"),
			AddTags:        a.strs("add_tags"),
			RemoveTags:     a.strs("remove_tags"),
			AddWatchers:    a.strs("add_watchers"),
			RemoveWatchers: a.strs("remove_watchers"),
			AddEdges:       append(a.edges("add_relations"), dependencies(a.strs("add_dependencies"))...),
			RemoveEdges:    append(a.edges("remove_relations"), dependencies(a.strs("remove_dependencies"))...),
		}
		patchFields(&p, a)
		res, err := d.tracker().UpdateWorkItem(ctx, w, a.str("key"), a.uint("if_match"), p)
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
func tagsParam(name, desc string) param {
	return param{name: name, kind: kindStrings, maxItems: tracker.MaxTags, nonEmpty: true, maxBytes: tracker.MaxTagBytes, desc: desc}
}

// keysParam declares a list of work item keys.
func keysParam(name, desc string) param {
	return param{name: name, kind: kindStrings, maxItems: tracker.MaxEdges, itemKeys: true, maxBytes: maxItemKey, desc: desc}
}

// opOf is the operation a failed write ran under: the one the service
// answered, else the one the caller brought.
func opOf(res engine.WriteResult, w engine.WriteOptions) string {
	if res.OpID != "" {
		return res.OpID
	}
	return w.OpID
}

// Project keys are 2 to 10 upper-case letters and digits starting with a
// letter, as the tracker service checks them.
const (
	minProjectKey = 2
	maxProjectKey = 10
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
	return engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s, which is not a project key: use 2 to 10 upper-case letters and digits starting with a letter, like ENG (list_projects lists them).", arg, quote(key))
}

// checkItemKey refuses a work item key not of the form <PROJECT>-<n>.
func checkItemKey(arg, key string) *engine.Refusal {
	i := strings.LastIndexByte(key, '-')
	if i > 0 && validProjectKey(key[:i]) && validNumber(key[i+1:]) {
		return nil
	}
	return engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s, which is not a work item key: use the project key, a hyphen and the item number, like ENG-8 (list_work_items lists them).", arg, quote(key))
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
