package tools

import (
	"context"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/tracker"
)

// maxCompletions is the most values one completion answers (the
// protocol's ceiling).
const maxCompletions = 100

// tagScanPages bounds how many pages of items a tag completion reads: the
// tracker keeps no table of tags, so the tags are those of the first
// tagScanPages*MaxListLimit items.
const tagScanPages = 5

// Completer answers completion/complete for the prompts' arguments and the
// resource templates' variables: project keys, item keys, space keys,
// page ids and tags, each read at the surface's level. A completion is a
// convenience: a read that fails answers no values rather than an error.
type Completer struct{ Deps Deps }

// CompletePromptArgument completes a prompt's argument by its name.
func (c Completer) CompletePromptArgument(ctx context.Context, _ string, a mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	return c.complete(ctx, a.Name, a.Value, cc.Arguments), nil
}

// CompleteResourceArgument completes a template's variable: {key} is an
// item's or a project's or a space's key by the template, {id} a page's.
func (c Completer) CompleteResourceArgument(ctx context.Context, uri string, a mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	name := a.Name
	switch uri {
	case ResourceWorkItem:
		name = "key"
	case ResourceProject:
		name = "project"
	case ResourceSpace:
		name = "space"
	case ResourcePage:
		name = "page"
	}
	return c.complete(ctx, name, a.Value, cc.Arguments), nil
}

// complete answers the values of kind (an argument's name) that start
// with prefix, case-insensitively.
func (c Completer) complete(ctx context.Context, kind, prefix string, resolved map[string]string) *mcp.Completion {
	var all []string
	switch kind {
	case "project":
		all = c.projects(ctx)
	case "key", "into", "duplicate":
		all = c.itemKeys(ctx, prefix, resolved["project"])
	case "space":
		all = c.spaces(ctx)
	case "page", "id":
		all = c.pages(ctx, resolved["space"])
	case "tag", "tags":
		all = c.tags(ctx, resolved["project"])
	case "status":
		all = tracker.Statuses
	}
	return matching(all, prefix)
}

func matching(all []string, prefix string) *mcp.Completion {
	out := []string{}
	p := strings.ToLower(prefix)
	for _, v := range all {
		if strings.HasPrefix(strings.ToLower(v), p) && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	comp := &mcp.Completion{Values: out, Total: len(out)}
	if len(out) > maxCompletions {
		comp.Values, comp.HasMore = out[:maxCompletions], true
	}
	return comp
}

func (c Completer) projects(ctx context.Context) []string {
	d := c.Deps
	if !hasTracker(d) {
		return nil
	}
	list, err := d.tracker().ListProjects(ctx, d.readOptions(ctx, engine.StreamTracker))
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
func (c Completer) itemKeys(ctx context.Context, prefix, project string) []string {
	d := c.Deps
	if p, _, ok := strings.Cut(prefix, "-"); ok {
		project = strings.ToUpper(p)
	}
	if project == "" {
		var out []string
		for _, p := range c.projects(ctx) {
			out = append(out, p+"-")
		}
		return out
	}
	if !hasTracker(d) || checkProjectKey("project", project) != nil {
		return nil
	}
	var out []string
	items, err := d.tracker().ListWorkItems(ctx, d.readOptions(ctx, engine.StreamTracker), tracker.ListFilter{Project: project, Limit: tracker.MaxListLimit})
	if err != nil {
		return nil
	}
	for _, it := range items.Items {
		out = append(out, it.Key)
	}
	return out
}

func (c Completer) spaces(ctx context.Context) []string {
	d := c.Deps
	if !hasKB(d) {
		return nil
	}
	list, err := d.kb().ListSpaces(ctx, d.readOptions(ctx, engine.StreamPages))
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range list.Spaces {
		out = append(out, s.Key)
	}
	return out
}

// pages are the first page ids of the chosen space, or of every space.
func (c Completer) pages(ctx context.Context, space string) []string {
	d := c.Deps
	spaces := []string{space}
	if space == "" {
		spaces = c.spaces(ctx)
	}
	var out []string
	for _, s := range spaces {
		if !hasKB(d) || s == "" {
			break
		}
		list, err := d.kb().ListPages(ctx, d.readOptions(ctx, engine.StreamPages), kb.PageFilter{Space: s, Limit: kb.MaxListLimit})
		if err != nil {
			continue
		}
		for _, p := range list.Pages {
			out = append(out, p.ID)
		}
	}
	return out
}

// tags are the tags on the items read (see tagScanPages), of one project
// when one is chosen.
func (c Completer) tags(ctx context.Context, project string) []string {
	d := c.Deps
	if !hasTracker(d) || (project != "" && checkProjectKey("project", project) != nil) {
		return nil
	}
	var out []string
	f := tracker.ListFilter{Project: project, Limit: tracker.MaxListLimit}
	for range tagScanPages {
		items, err := d.tracker().ListWorkItems(ctx, d.readOptions(ctx, engine.StreamTracker), f)
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
