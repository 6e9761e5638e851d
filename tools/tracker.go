package tools

import (
	"context"
	"fmt"
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
}

// Tool names, fixed by the contract.
const (
	NameCreateProject  = "create_project"
	NameListProjects   = "list_projects"
	NameCreateWorkItem = "create_work_item"
	NameGetWorkItem    = "get_work_item"
	NameListWorkItems  = "list_work_items"
	NameUpdateWorkItem = "update_work_item"
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
	projectKeyDesc = "Project key: 2 to 10 upper-case letters and digits, starting with a letter (for example ENG). Work items of the project are keyed ENG-1, ENG-2, ..."
	itemKeyDesc    = "Work item key: the project key, a hyphen and the item's number (for example ENG-8). Find keys with list_work_items."
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
		d.writeDesc("Create a project: a key that prefixes its work items' keys, and a name. A key is taken for good; creating one that exists is refused already_exists."),
		params,
		// Idempotent: a repeat with the same key has no further effect (it
		// is refused already_exists), with or without op_id.
		writeAnnotations("Create project", true),
		mcp.WithOutputSchema[tracker.ProjectWrite]())
	return tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, r := parseArgs(req, params)
		if r == nil {
			r = checkProjectKey("key", a.str("key"))
		}
		if r != nil {
			return Refused(r), nil
		}
		w, werr := d.writeOptions(ctx, NameCreateProject, a)
		if werr != nil {
			return Failed(ctx, d.logger(), NameCreateProject, "", werr), nil
		}
		res, err := d.Tracker.CreateProject(ctx, w, a.str("key"), a.str("name"))
		if err != nil {
			return Failed(ctx, d.logger(), NameCreateProject, opOf(res.WriteResult, w), err), nil
		}
		return Answer(res, writeText("project "+a.str("key"), res.WriteResult)), nil
	}
}

// ListProjects is list_projects {}.
func ListProjects(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	var params []param
	tool := newTool(NameListProjects,
		"List every project: its key, name and the last work item number given out. The answer says the read level and the log position it stands at.",
		params, readAnnotations("List projects"), mcp.WithOutputSchema[tracker.ProjectList]())
	return tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, r := parseArgs(req, params); r != nil {
			return Refused(r), nil
		}
		res, err := d.Tracker.ListProjects(ctx, d.readOptions(ctx, engine.DomainTracker))
		if err != nil {
			return Failed(ctx, d.logger(), NameListProjects, "", err), nil
		}
		if res.Projects == nil {
			res.Projects = []tracker.Project{}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d projects (%s)", len(res.Projects), readHead(res.ReadInfo))
		for _, p := range res.Projects {
			fmt.Fprintf(&b, "\n%s %s (last item %s-%d)", p.Key, p.Name, p.Key, p.LastNumber)
		}
		return Answer(res, b.String()), nil
	}
}

// CreateWorkItem is create_work_item {project, title, description, status, assignee}.
func CreateWorkItem(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.withOpID([]param{
		{name: "project", kind: kindString, required: true, nonEmpty: true, maxBytes: maxProjectKey, desc: "Key of the project the item belongs to (for example ENG); list_projects lists them."},
		{name: "title", kind: kindString, required: true, nonEmpty: true, maxBytes: tracker.MaxTitleBytes, desc: "One-line title of the work item."},
		{name: "description", kind: kindString, maxBytes: tracker.MaxDescriptionBytes, desc: "Optional longer description (Markdown)."},
		{name: "status", kind: kindString, enum: tracker.Statuses, desc: "Optional. " + statusDesc + " Default open."},
		{name: "assignee", kind: kindString, maxBytes: tracker.MaxAssigneeBytes, desc: "Optional. " + assigneeDesc},
	})
	tool := newTool(NameCreateWorkItem,
		d.writeDesc("Create a work item in a project. It gets the next key of the project (ENG-8); numbers are never reused. The answer carries the item with its version, which update_work_item takes as if_match."),
		params,
		// Not idempotent: each call without op_id creates another item.
		writeAnnotations("Create work item", false),
		mcp.WithOutputSchema[tracker.ItemWrite]())
	return tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, r := parseArgs(req, params)
		if r == nil {
			r = checkProjectKey("project", a.str("project"))
		}
		if r != nil {
			return Refused(r), nil
		}
		w, werr := d.writeOptions(ctx, NameCreateWorkItem, a)
		if werr != nil {
			return Failed(ctx, d.logger(), NameCreateWorkItem, "", werr), nil
		}
		res, err := d.Tracker.CreateWorkItem(ctx, w, tracker.NewWorkItem{
			Project:     a.str("project"),
			Title:       a.str("title"),
			Description: a.str("description"),
			Status:      a.str("status"),
			Assignee:    a.str("assignee"),
		})
		if err != nil {
			return Failed(ctx, d.logger(), NameCreateWorkItem, opOf(res.WriteResult, w), err), nil
		}
		subject := "a work item in " + a.str("project")
		if res.Item != nil {
			subject = fmt.Sprintf("%s (version %d)", res.Item.Key, res.Item.Version)
		}
		return Answer(res, writeText(subject, res.WriteResult)), nil
	}
}

// GetWorkItem is get_work_item {key}.
func GetWorkItem(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := []param{{name: "key", kind: kindString, required: true, nonEmpty: true, desc: itemKeyDesc}}
	tool := newTool(NameGetWorkItem,
		"Get one work item by key (ENG-8): title, description, status, assignee and version (pass the version as if_match to update_work_item). The answer says the read level and the log position it stands at.",
		params, readAnnotations("Get work item"), mcp.WithOutputSchema[tracker.ItemRead]())
	return tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, r := parseArgs(req, params)
		if r == nil {
			r = checkItemKey("key", a.str("key"))
		}
		if r != nil {
			return Refused(r), nil
		}
		res, err := d.Tracker.GetWorkItem(ctx, d.readOptions(ctx, engine.DomainTracker), a.str("key"))
		if err != nil {
			return Failed(ctx, d.logger(), NameGetWorkItem, "", err), nil
		}
		it := res.Item
		text := fmt.Sprintf("%s [%s] %s%s, version %d (%s)", it.Key, it.Status, it.Title, assigned(it.Assignee), it.Version, readHead(res.ReadInfo))
		if it.Description != "" {
			text += "\n\n" + it.Description
		}
		return Answer(res, text), nil
	}
}

// ListWorkItems is list_work_items {project, status, assignee, limit, cursor}.
func ListWorkItems(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	params := []param{
		{name: "project", kind: kindString, maxBytes: maxProjectKey, desc: "Optional. Only items of this project key (for example ENG)."},
		{name: "status", kind: kindString, enum: tracker.Statuses, desc: "Optional. Only items with this status. " + statusDesc},
		{name: "assignee", kind: kindString, maxBytes: tracker.MaxAssigneeBytes, desc: "Optional. Only items assigned to this name."},
		{name: "limit", kind: kindInteger, min: 1, max: tracker.MaxListLimit, desc: fmt.Sprintf("Optional. At most this many items (1 to %d, default %d).", tracker.MaxListLimit, tracker.DefaultListLimit)},
		{name: "cursor", kind: kindString, maxBytes: 1024, desc: "Optional. The next_cursor of the previous page, to get the page after it."},
	}
	tool := newTool(NameListWorkItems,
		"List work items, filtered by project, status and assignee, a page at a time. When the answer has next_cursor, pass it as cursor for the next page. The answer says the read level, the log position it stands at and whether it is complete.",
		params, readAnnotations("List work items"), mcp.WithOutputSchema[tracker.ItemList]())
	return tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, r := parseArgs(req, params)
		if r == nil && a.has("project") {
			r = checkProjectKey("project", a.str("project"))
		}
		if r != nil {
			return Refused(r), nil
		}
		limit := tracker.DefaultListLimit
		if a.has("limit") {
			limit = int(a.uint("limit"))
		}
		res, err := d.Tracker.ListWorkItems(ctx, d.readOptions(ctx, engine.DomainTracker), tracker.ListFilter{
			Project:  a.str("project"),
			Status:   a.str("status"),
			Assignee: a.str("assignee"),
			Limit:    limit,
			Cursor:   a.str("cursor"),
		})
		if err != nil {
			return Failed(ctx, d.logger(), NameListWorkItems, "", err), nil
		}
		if res.Items == nil {
			res.Items = []tracker.WorkItem{}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d work items (%s)", len(res.Items), readHead(res.ReadInfo))
		if res.NextCursor != "" {
			fmt.Fprintf(&b, "; more: pass cursor %q", res.NextCursor)
		}
		for _, it := range res.Items {
			fmt.Fprintf(&b, "\n%s [%s] %s%s", it.Key, it.Status, it.Title, assigned(it.Assignee))
		}
		return Answer(res, b.String()), nil
	}
}

// UpdateWorkItem is update_work_item {key, if_match, title, description, status, assignee}.
func UpdateWorkItem(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	fields := []string{"title", "description", "status", "assignee"}
	params := d.withOpID([]param{
		{name: "key", kind: kindString, required: true, nonEmpty: true, desc: itemKeyDesc},
		{name: "if_match", kind: kindInteger, required: true, min: 1, desc: "The item's version you decided against (get_work_item answers it). If the item changed since, the update is refused stale: read it again and decide again."},
		{name: "title", kind: kindString, nonEmpty: true, maxBytes: tracker.MaxTitleBytes, desc: "Optional. New one-line title."},
		{name: "description", kind: kindString, maxBytes: tracker.MaxDescriptionBytes, desc: "Optional. New description (Markdown); empty clears it."},
		{name: "status", kind: kindString, enum: tracker.Statuses, desc: "Optional. New status. " + statusDesc},
		{name: "assignee", kind: kindString, maxBytes: tracker.MaxAssigneeBytes, desc: "Optional. New assignee; empty unassigns."},
	})
	tool := newTool(NameUpdateWorkItem,
		d.writeDesc("Change fields of a work item: pass only the fields to change, and the version you read as if_match. The answer carries the item at its new version."),
		params,
		// Not destructive: it replaces only the named fields, only at the
		// version the caller read (if_match), and every prior version stays
		// in the log; trash and purge are the destructive tools, and marking
		// every edit destructive would blunt that signal. Idempotent: a
		// repeat with the same arguments names a version that is no longer
		// current and is refused stale, so it has no further effect.
		writeAnnotations("Update work item", true),
		mcp.WithOutputSchema[tracker.ItemWrite]())
	return tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, r := parseArgs(req, params)
		if r == nil {
			r = checkItemKey("key", a.str("key"))
		}
		if r == nil && !a.has("title") && !a.has("description") && !a.has("status") && !a.has("assignee") {
			r = engine.Refuse(engine.CodeInvalidArgument, "Nothing to change: pass at least one of %s.", strings.Join(fields, ", "))
		}
		if r != nil {
			return Refused(r), nil
		}
		w, werr := d.writeOptions(ctx, NameUpdateWorkItem, a)
		if werr != nil {
			return Failed(ctx, d.logger(), NameUpdateWorkItem, "", werr), nil
		}
		res, err := d.Tracker.UpdateWorkItem(ctx, w, a.str("key"), a.uint("if_match"), tracker.ItemPatch{
			Title:       a.strPtr("title"),
			Description: a.strPtr("description"),
			Status:      a.strPtr("status"),
			Assignee:    a.strPtr("assignee"),
		})
		if err != nil {
			return Failed(ctx, d.logger(), NameUpdateWorkItem, opOf(res.WriteResult, w), err), nil
		}
		subject := a.str("key")
		if res.Item != nil {
			subject = fmt.Sprintf("%s (version %d)", res.Item.Key, res.Item.Version)
		}
		return Answer(res, writeText(subject, res.WriteResult)), nil
	}
}

// opOf is the operation a failed write ran under: the one the service
// answered, else the one the caller brought.
func opOf(res engine.WriteResult, w engine.WriteOptions) string {
	if res.OpID != "" {
		return res.OpID
	}
	return w.OpID
}

func assigned(who string) string {
	if who == "" {
		return ""
	}
	return " @" + who
}

// Project keys are 2 to 10 upper-case letters and digits starting with a
// letter, as the tracker service checks them.
const (
	minProjectKey = 2
	maxProjectKey = 10
)

// checkProjectKey refuses a project key that is not 2 to 10 upper-case
// letters and digits starting with a letter. The service checks too;
// checking here answers a malformed key before anything else runs.
func checkProjectKey(arg, key string) *engine.Refusal {
	if validProjectKey(key) {
		return nil
	}
	return engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %q, which is not a project key: use 2 to 10 upper-case letters and digits starting with a letter, like ENG (list_projects lists them).", arg, key)
}

// checkItemKey refuses a work item key not of the form <PROJECT>-<n>.
func checkItemKey(arg, key string) *engine.Refusal {
	i := strings.LastIndexByte(key, '-')
	if i > 0 && validProjectKey(key[:i]) && validNumber(key[i+1:]) {
		return nil
	}
	return engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %q, which is not a work item key: use the project key, a hyphen and the item number, like ENG-8 (list_work_items lists them).", arg, key)
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
