package tools

import (
	"context"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
)

// Toolset is one group of tools --toolsets names (a domain's, the
// fleet's), bound to the service its handlers call, with the prompts,
// resources and completions that belong to it. A domain's tools package
// builds its own (trackertools.Toolset, ...); this package names none.
type Toolset struct {
	// Name is what --toolsets calls the group: tracker, kb, fleet.
	Name    string
	Entries []Entry
	// Prompts are the toolset's prompts on a surface; nil: none.
	Prompts func(d Deps) []server.ServerPrompt
	// Resources are the kinds of resource it serves, in order.
	Resources []ResourceKind
	// Listing lists its resources for resources/list; nil lists none.
	Listing *Listing
	// Complete answers completion/complete for the arguments it knows,
	// by argument name: the values there are, for the kit to match
	// against what the client typed.
	Complete map[string]func(ctx context.Context, d Deps, prefix string, resolved map[string]string) []string
	// Observe, when set, sees every tool call of every toolset of the
	// catalogue once it is answered, on every surface built over it (the
	// usage domain's record of what the node served). It runs on the
	// call's goroutine and must not block.
	Observe func(ctx context.Context, c Served)
}

// Catalogue is every toolset a server offers, in order: each tool once,
// the operator, seat and read-only toolsets filters over it.
type Catalogue []Toolset

// Names are the toolset names --toolsets takes, "all" aside.
func (c Catalogue) Names() []string {
	var out []string
	for _, ts := range c {
		if !slices.Contains(out, ts.Name) {
			out = append(out, ts.Name)
		}
	}
	return out
}

// ParseToolsets reads a --toolsets value: toolset names of c separated by
// commas, or "all". It refuses an unknown name with the list of known
// ones.
func (c Catalogue) ParseToolsets(s string) ([]string, error) {
	known := c.Names()
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			continue
		case n == ToolsetAll:
			return nil, nil
		case !slices.Contains(known, n):
			return nil, engine.Refuse(engine.CodeInvalidArgument, "toolset %q is not one of %s (or all); name toolsets separated by commas.", n, strings.Join(known, ", "))
		case !slices.Contains(out, n):
			out = append(out, n)
		}
	}
	return out, nil
}

// served are the toolsets whose reads d's filter keeps: those whose
// prompts, resources and completions a surface offers.
func (c Catalogue) served(d Deps) []Toolset {
	var out []Toolset
	for _, ts := range c {
		if d.Filter.Keeps(ts.Name, true) {
			out = append(out, ts)
		}
	}
	return out
}

// Prompts are the prompts of every toolset d serves.
func (c Catalogue) Prompts(d Deps) []server.ServerPrompt {
	var out []server.ServerPrompt
	for _, ts := range c.served(d) {
		if ts.Prompts != nil {
			out = append(out, ts.Prompts(d)...)
		}
	}
	return out
}
