package tools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/tracker"
)

// Every work item, page, project and space is an MCP resource, read as
// its get tool answers it (the level and position included), at the
// surface's own read level.
const (
	ResourceWorkItem = "crewlet://work-items/{key}"
	ResourcePage     = "crewlet://pages/{id}"
	ResourceProject  = "crewlet://projects/{key}"
	ResourceSpace    = "crewlet://spaces/{key}"
)

// The URIs' prefixes, one per kind.
const (
	prefixWorkItem = "crewlet://work-items/"
	prefixPage     = "crewlet://pages/"
	prefixProject  = "crewlet://projects/"
	prefixSpace    = "crewlet://spaces/"
)

const jsonMIME = "application/json"

// ProjectRead is a project resource: the project, with the read's level
// and position.
type ProjectRead struct {
	engine.ReadInfo
	Project tracker.Project `json:"project"`
}

// SpaceRead is a space resource: the space, with the read's level and
// position.
type SpaceRead struct {
	engine.ReadInfo
	Space kb.Space `json:"space"`
}

// resourceKind is one kind of resource: its template and how to read one.
type resourceKind struct {
	template, prefix, name, title, desc string
	needs                               func(Deps) bool
	read                                func(ctx context.Context, d Deps, id string) (any, error)
}

var resourceKinds = []resourceKind{
	{ResourceWorkItem, prefixWorkItem, "work-item", "Work item",
		"A work item by key (ENG-8): what get_work_item answers.", hasTracker, readWorkItem},
	{ResourceProject, prefixProject, "project", "Project",
		"A project by key (ENG): key, name, counts.", hasTracker, readProject},
	{ResourcePage, prefixPage, "page", "Page",
		"A knowledge-base page by id: what get_page answers.", hasKB, readPage},
	{ResourceSpace, prefixSpace, "space", "Space",
		"A knowledge-base space by key: name, settings, page count.", hasKB, readSpace},
}

// hasTracker and hasKB say d serves the domain's resources: it has the
// service and its filter keeps the domain's reads (--toolsets).
func hasTracker(d Deps) bool {
	return needs[Tracker](d) && d.Filter.keeps(Entry{Toolset: ToolsetTracker, Read: true})
}

func hasKB(d Deps) bool { return needs[KB](d) && d.Filter.keeps(Entry{Toolset: ToolsetKB, Read: true}) }

func readWorkItem(ctx context.Context, d Deps, key string) (any, error) {
	if r := checkItemKey("key", key); r != nil {
		return nil, r
	}
	res, err := d.tracker().GetWorkItem(ctx, d.readOptions(ctx, engine.StreamTracker), key)
	if res.Comments == nil {
		res.Comments = []tracker.Comment{}
	}
	return res, err
}

func readPage(ctx context.Context, d Deps, id string) (any, error) {
	return d.kb().GetPage(ctx, d.readOptions(ctx, engine.StreamPages), id)
}

func readProject(ctx context.Context, d Deps, key string) (any, error) {
	list, err := d.tracker().ListProjects(ctx, d.readOptions(ctx, engine.StreamTracker))
	if err != nil {
		return nil, err
	}
	for _, p := range list.Projects {
		if p.Key == key {
			return ProjectRead{ReadInfo: list.ReadInfo, Project: p}, nil
		}
	}
	return nil, engine.Refuse(engine.CodeNotFound, "project %s does not exist; resources/list or list_projects shows the projects.", quote(key))
}

func readSpace(ctx context.Context, d Deps, key string) (any, error) {
	list, err := d.kb().ListSpaces(ctx, d.readOptions(ctx, engine.StreamPages))
	if err != nil {
		return nil, err
	}
	for _, s := range list.Spaces {
		if s.Key == key {
			return SpaceRead{ReadInfo: list.ReadInfo, Space: s}, nil
		}
	}
	return nil, engine.Refuse(engine.CodeNotFound, "space %s does not exist; resources/list or list_spaces shows the spaces.", quote(key))
}

// ResourceTemplates are the resource templates of the services d has, each
// with its read handler.
func ResourceTemplates(d Deps) []server.ServerResourceTemplate {
	var out []server.ServerResourceTemplate
	for _, k := range resourceKinds {
		if !k.needs(d) {
			continue
		}
		k := k
		t := mcp.NewResourceTemplate(k.template, k.name,
			mcp.WithTemplateTitle(k.title),
			mcp.WithTemplateDescription(k.desc+" It answers at this surface's read level, with the level and position."),
			mcp.WithTemplateMIMEType(jsonMIME))
		out = append(out, server.ServerResourceTemplate{Template: t, Handler: func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return d.readResource(ctx, k, req.Params.URI)
		}})
	}
	return out
}

// readResource reads one resource: its JSON, as the get tool answers it.
// A refusal is an error whose text is the refusal's JSON object, so a
// client shows the code and the sentence.
func (d Deps) readResource(ctx context.Context, k resourceKind, uri string) ([]mcp.ResourceContents, error) {
	id, ok := strings.CutPrefix(uri, k.prefix)
	if !ok || id == "" || strings.Contains(id, "/") {
		return nil, resourceError(engine.Refuse(engine.CodeInvalidArgument, "%s is not a %s URI; send %s.", quote(uri), k.name, k.template))
	}
	res, err := k.read(ctx, d, id)
	if err != nil {
		return nil, d.resourceFailed(ctx, uri, err)
	}
	b, err := marshal(res)
	if err != nil {
		return nil, d.resourceFailed(ctx, uri, err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: jsonMIME, Text: string(b)}}, nil
}

// resourceFailed is a read's error as a resource error: a refusal as its
// object, anything else logged and answered internal.
func (d Deps) resourceFailed(ctx context.Context, uri string, err error) error {
	if r, ok := engine.AsRefusal(err); ok {
		return resourceError(r)
	}
	d.logger().ErrorContext(ctx, "resource_read_failed", slog.String("uri", uri), slog.String(engine.LogErr, err.Error()))
	return resourceError(engine.RefuseDoc(engine.CodeInternal))
}

// resourceError carries a refusal through mcp-go, which answers a
// resource handler's error as a JSON-RPC error with its text.
func resourceError(r *engine.Refusal) error {
	b, err := json.Marshal(r.ForFixedLevel().Object())
	if err != nil {
		return errors.New(r.Message)
	}
	return errors.New(string(b))
}

// listPage is how many resources one resources/list answer holds at most
// (a kind's page may end it early).
const listPage = 100

// listCursor is where a resources/list continues: the kind (0 projects
// and spaces, 1 work items, 2 pages), the space whose pages are next and
// the service's own cursor within that kind.
type listCursor struct {
	Kind   int    `json:"k"`
	Space  string `json:"s,omitempty"`
	Cursor string `json:"c,omitempty"`
}

// ListResources is one page of resources/list: every project and space,
// then every work item, then every page space by space, each page read at
// the surface's level. next is "" after the last page. The cursor is
// base64 (mcp-go checks that much before the listing is filled in).
func ListResources(ctx context.Context, d Deps, cursor string) (out []mcp.Resource, next string, err error) {
	var c listCursor
	if cursor != "" {
		raw, err := base64.StdEncoding.DecodeString(cursor)
		if err != nil || json.Unmarshal(raw, &c) != nil {
			return nil, "", engine.Refuse(engine.CodeInvalidArgument, "the cursor is not one resources/list gave; send its nextCursor as it came, or none for the first page.")
		}
	}
	for len(out) < listPage {
		var done bool
		out, done, err = d.listKind(ctx, &c, out)
		if err != nil {
			return nil, "", err
		}
		if done {
			return out, "", nil
		}
	}
	b, _ := json.Marshal(c)
	return out, base64.StdEncoding.EncodeToString(b), nil
}

// listKind appends the next stretch of the cursor's kind and moves the
// cursor on; done says there is nothing after it.
func (d Deps) listKind(ctx context.Context, c *listCursor, out []mcp.Resource) (_ []mcp.Resource, done bool, _ error) {
	hasTracker, hasKB := hasTracker(d), hasKB(d)
	switch c.Kind {
	case 0:
		if hasTracker {
			ps, err := d.tracker().ListProjects(ctx, d.readOptions(ctx, engine.StreamTracker))
			if err != nil {
				return nil, false, err
			}
			for _, p := range ps.Projects {
				out = append(out, resource(prefixProject+p.Key, p.Key, p.Name))
			}
		}
		if hasKB {
			ss, err := d.kb().ListSpaces(ctx, d.readOptions(ctx, engine.StreamPages))
			if err != nil {
				return nil, false, err
			}
			for _, s := range ss.Spaces {
				out = append(out, resource(prefixSpace+s.Key, s.Key, s.Name))
			}
		}
		*c = listCursor{Kind: 1}
	case 1:
		if !hasTracker {
			*c = listCursor{Kind: 2}
			return out, false, nil
		}
		items, err := d.tracker().ListWorkItems(ctx, d.readOptions(ctx, engine.StreamTracker), tracker.ListFilter{Limit: listPage, Cursor: c.Cursor})
		if err != nil {
			return nil, false, err
		}
		for _, it := range items.Items {
			out = append(out, resource(prefixWorkItem+it.Key, it.Key, it.Title))
		}
		if items.NextCursor != "" {
			c.Cursor = items.NextCursor
		} else {
			*c = listCursor{Kind: 2}
		}
	case 2:
		return d.listPages(ctx, c, out, hasKB)
	default:
		return out, true, nil
	}
	return out, false, nil
}

// listPages appends the next stretch of pages: the cursor's space's, or
// the first space's after it once that one is done.
func (d Deps) listPages(ctx context.Context, c *listCursor, out []mcp.Resource, hasKB bool) ([]mcp.Resource, bool, error) {
	if !hasKB {
		return out, true, nil
	}
	if c.Space == "" {
		ss, err := d.kb().ListSpaces(ctx, d.readOptions(ctx, engine.StreamPages))
		if err != nil {
			return nil, false, err
		}
		next := ""
		for _, s := range ss.Spaces {
			if s.Key > c.Cursor && (next == "" || s.Key < next) {
				next = s.Key
			}
		}
		if next == "" {
			return out, true, nil
		}
		// Between spaces the cursor holds the last space done.
		c.Space, c.Cursor = next, ""
	}
	pages, err := d.kb().ListPages(ctx, d.readOptions(ctx, engine.StreamPages), kb.PageFilter{Space: c.Space, Limit: listPage, Cursor: c.Cursor})
	if err != nil {
		return nil, false, err
	}
	for _, p := range pages.Pages {
		out = append(out, resource(prefixPage+p.ID, p.Title, p.Space+": "+p.Title))
	}
	if pages.NextCursor != "" {
		c.Cursor = pages.NextCursor
	} else {
		c.Space, c.Cursor = "", c.Space
	}
	return out, false, nil
}

func resource(uri, name, title string) mcp.Resource {
	return mcp.NewResource(uri, name, mcp.WithMIMEType(jsonMIME), mcp.WithResourceDescription(title))
}

// ResourceScope is the scope a record names when it may change the
// resource at uri ("item:<id>", "project:ENG", "page:<id>",
// "space:DOCS"): what a subscription to uri waits for. An item is
// subscribed by its id, read once here, so it is followed across a move
// that changes its key.
func ResourceScope(ctx context.Context, d Deps, uri string) (string, error) {
	for _, k := range resourceKinds {
		id, ok := strings.CutPrefix(uri, k.prefix)
		if !ok {
			continue
		}
		if !k.needs(d) || id == "" {
			break
		}
		switch k.prefix {
		case prefixWorkItem:
			res, err := readWorkItem(ctx, d, id)
			if err != nil {
				return "", err
			}
			return "item:" + res.(tracker.ItemRead).Item.ID, nil
		case prefixProject:
			return "project:" + id, nil
		case prefixPage:
			return "page:" + id, nil
		case prefixSpace:
			return "space:" + id, nil
		}
	}
	return "", engine.Refuse(engine.CodeInvalidArgument, "%s is no resource of this server; resources/templates/list shows the URIs it serves.", quote(uri))
}

// ResourceErr words a refusal for a JSON-RPC error (subscribe's).
func ResourceErr(err error) error {
	if r, ok := engine.AsRefusal(err); ok {
		return resourceError(r)
	}
	return fmt.Errorf("internal: %w", err)
}
