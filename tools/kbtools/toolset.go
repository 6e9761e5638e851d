package kbtools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/tools"
)

// Name is the knowledge base's toolset name (--toolsets kb).
const Name = "kb"

// env is what a knowledge-base tool is built over: the surface's Deps
// and the service it calls.
type env struct {
	tools.Deps
	svc KB
}

// Toolset is the knowledge base's tools over svc, with its resources
// (pages and spaces) and their completions. Toolset(nil) builds the
// definitions alone: its tools are offered only over a service.
func Toolset(svc KB) tools.Toolset {
	bind := func(f func(env) (mcp.Tool, server.ToolHandlerFunc)) tools.Constructor {
		return func(d tools.Deps) (mcp.Tool, server.ToolHandlerFunc) { return f(env{Deps: d, svc: svc}) }
	}
	has := func() bool { return svc != nil }
	read := func(f func(env) (mcp.Tool, server.ToolHandlerFunc)) tools.Entry {
		return tools.Entry{Build: bind(f), Read: true, Needs: has}
	}
	write := func(f func(env) (mcp.Tool, server.ToolHandlerFunc)) tools.Entry {
		return tools.Entry{Build: bind(f), Needs: has}
	}
	purge := write(purgePage)
	purge.OperatorOnly = true
	r := resources{svc: svc}
	return tools.Toolset{
		Name: Name,
		Entries: []tools.Entry{
			read(listSpaces), read(getPage), read(listPages), read(searchKnowledge),
			write(createSpace), write(updateSpace), write(createPage), write(updatePage), purge,
			read(getSpace), read(listPageVersions), write(commentOnPage),
		},
		Resources: r.kinds(),
		Listing:   &tools.Listing{Heads: r.spaceHeads, Next: r.pageStretch},
		Complete: map[string]func(context.Context, tools.Deps, string, map[string]string) []string{
			"space": func(ctx context.Context, d tools.Deps, _ string, _ map[string]string) []string {
				return r.spaces(ctx, d)
			},
			"page": r.completePages,
			"id":   r.completePages,
		},
	}
}

// Every page and space is an MCP resource.
const (
	ResourcePage  = "crewlet://pages/{id}"
	ResourceSpace = "crewlet://spaces/{key}"
	prefixPage    = "crewlet://pages/"
	prefixSpace   = "crewlet://spaces/"
)

// SpaceRead is a space resource: the space, with the read's level and
// position.
type SpaceRead struct {
	engine.ReadInfo
	Space kb.Space `json:"space"`
}

// resources are the knowledge base's resources over its service.
type resources struct{ svc KB }

func (r resources) kinds() []tools.ResourceKind {
	return []tools.ResourceKind{
		{Template: ResourcePage, Prefix: prefixPage, Name: "page", Title: "Page", Arg: "page",
			Desc: "A knowledge-base page by id: what get_page answers.", Read: r.readPage,
			Scope: func(_ context.Context, _ tools.Deps, id string) (string, error) { return "page:" + id, nil }},
		{Template: ResourceSpace, Prefix: prefixSpace, Name: "space", Title: "Space", Arg: "space",
			Desc: "A knowledge-base space by key: name, settings, page count.", Read: r.readSpace,
			Scope: func(_ context.Context, _ tools.Deps, key string) (string, error) { return "space:" + key, nil }},
	}
}

func (r resources) readPage(ctx context.Context, d tools.Deps, id string) (any, error) {
	return r.svc.GetPage(ctx, d.ReadOptions(ctx, engine.StreamPages), id)
}

func (r resources) readSpace(ctx context.Context, d tools.Deps, key string) (any, error) {
	list, err := r.svc.ListSpaces(ctx, d.ReadOptions(ctx, engine.StreamPages))
	if err != nil {
		return nil, err
	}
	for _, s := range list.Spaces {
		if s.Key == key {
			return SpaceRead{ReadInfo: list.ReadInfo, Space: s}, nil
		}
	}
	return nil, engine.Refuse(engine.CodeNotFound, "space %s does not exist; resources/list or list_spaces shows the spaces.", tools.Quote(key))
}

// spaceHeads lists every space on resources/list's first page.
func (r resources) spaceHeads(ctx context.Context, d tools.Deps) ([]mcp.Resource, error) {
	ss, err := r.svc.ListSpaces(ctx, d.ReadOptions(ctx, engine.StreamPages))
	if err != nil {
		return nil, err
	}
	var out []mcp.Resource
	for _, s := range ss.Spaces {
		out = append(out, tools.NewResource(prefixSpace+s.Key, s.Key, s.Name))
	}
	return out, nil
}

// pageStretch appends the next stretch of pages: the cursor's space's,
// or, once that one is done, the first space's after it (between spaces
// the cursor holds the last space done).
func (r resources) pageStretch(ctx context.Context, d tools.Deps, c tools.ListCursor, out []mcp.Resource) ([]mcp.Resource, tools.ListCursor, bool, error) {
	if c.Group == "" {
		ss, err := r.svc.ListSpaces(ctx, d.ReadOptions(ctx, engine.StreamPages))
		if err != nil {
			return nil, c, false, err
		}
		next := ""
		for _, s := range ss.Spaces {
			if s.Key > c.Cursor && (next == "" || s.Key < next) {
				next = s.Key
			}
		}
		if next == "" {
			return out, c, true, nil
		}
		c = tools.ListCursor{Group: next}
	}
	pages, err := r.svc.ListPages(ctx, d.ReadOptions(ctx, engine.StreamPages), kb.PageFilter{Space: c.Group, Limit: tools.ListPage, Cursor: c.Cursor})
	if err != nil {
		return nil, c, false, err
	}
	for _, p := range pages.Pages {
		out = append(out, tools.NewResource(prefixPage+p.ID, p.Title, p.Space+": "+p.Title))
	}
	if pages.NextCursor != "" {
		c.Cursor = pages.NextCursor
	} else {
		c = tools.ListCursor{Cursor: c.Group}
	}
	return out, c, false, nil
}

// spaces are the space keys, for completions.
func (r resources) spaces(ctx context.Context, d tools.Deps) []string {
	list, err := r.svc.ListSpaces(ctx, d.ReadOptions(ctx, engine.StreamPages))
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range list.Spaces {
		out = append(out, s.Key)
	}
	return out
}

// completePages are the first page ids of the chosen space, or of every
// space.
func (r resources) completePages(ctx context.Context, d tools.Deps, _ string, resolved map[string]string) []string {
	spaces := []string{resolved["space"]}
	if spaces[0] == "" {
		spaces = r.spaces(ctx, d)
	}
	var out []string
	for _, s := range spaces {
		if s == "" {
			break
		}
		list, err := r.svc.ListPages(ctx, d.ReadOptions(ctx, engine.StreamPages), kb.PageFilter{Space: s, Limit: kb.MaxListLimit})
		if err != nil {
			continue
		}
		for _, p := range list.Pages {
			out = append(out, p.ID)
		}
	}
	return out
}
