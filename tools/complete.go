package tools

import (
	"context"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// maxCompletions is the most values one completion answers (the
// protocol's ceiling).
const maxCompletions = 100

// Completer answers completion/complete for the prompts' arguments and the
// resource templates' variables from the toolsets' Complete (project
// keys, item keys, space keys, page ids, tags...), each read at the
// surface's level. A completion is a convenience: a read that fails
// answers no values rather than an error.
type Completer struct {
	Deps      Deps
	Catalogue Catalogue
}

// CompletePromptArgument completes a prompt's argument by its name.
func (c Completer) CompletePromptArgument(ctx context.Context, _ string, a mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	return c.complete(ctx, a.Name, a.Value, cc.Arguments), nil
}

// CompleteResourceArgument completes a template's variable as the
// argument its resource kind names (ResourceKind.Arg).
func (c Completer) CompleteResourceArgument(ctx context.Context, uri string, a mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	name := a.Name
	for _, ts := range c.Catalogue {
		for _, k := range ts.Resources {
			if k.Template == uri {
				name = k.Arg
			}
		}
	}
	return c.complete(ctx, name, a.Value, cc.Arguments), nil
}

// complete answers the values of the argument name that start with
// prefix, case-insensitively, from every toolset served that knows it.
func (c Completer) complete(ctx context.Context, name, prefix string, resolved map[string]string) *mcp.Completion {
	var all []string
	for _, ts := range c.Catalogue.served(c.Deps) {
		if values, ok := ts.Complete[name]; ok {
			all = append(all, values(ctx, c.Deps, prefix, resolved)...)
		}
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
