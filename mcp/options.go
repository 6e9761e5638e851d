package mcp

import (
	"context"
	"log/slog"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/tools"
)

// Options configure one MCP server of a surface.
type Options struct {
	Version string
	Logger  *slog.Logger
	// Filter narrows the surface's toolset (--toolsets, --read-only).
	Filter tools.Filter
	// Applied tells which records this node applies: with it, a client
	// may subscribe to a resource and is told when it changes. nil: no
	// subscriptions.
	Applied Applied
	// Logs relays the node's log lines to the clients that asked for
	// them (logging/setLevel). nil: the server offers no logging.
	Logs *LogRelay
	// Calls counts every tool call (the node's metrics); nil: none.
	Calls tools.CallObserver
	// Floors is the node's read-your-writes floor table (the seat
	// surface): every seat read carries its floor on the read's log.
	Floors tools.Floors
	// NextHolder, on the seat surface of a data node, is where a seat's
	// call goes when this node refuses it in a way that proves it ran
	// nowhere here (behind, stalled, …): the next data node, never this
	// one. nil: the refusal is the answer.
	NextHolder Forwarder
	// Node is this node's name (node.name): the seat surface names it to
	// the next holder as the node running the turn.
	Node string
}

// Applied is the node's post-commit seam: cmd wires the node in.
type Applied interface {
	// OnApplied calls fn after each applier commit on this node with the
	// scopes ("item:<id>", "project:ENG", "page:<id>", "space:DOCS") of
	// the records it applied. fn runs on the applier and must not block.
	// The returned func stops the calls.
	OnApplied(fn func(scopes []string)) (stop func())
}

// New builds the operator/assistant MCP server over a catalogue bound to
// the node's services: the operator toolset narrowed by o.Filter, the
// toolsets' resources (every item, page, project and space), prompts,
// completions and, where o says, subscriptions and log notifications.
func New(o Options, c tools.Catalogue) *server.MCPServer {
	d := tools.Deps{Logger: o.Logger, Surface: tools.Operator, Filter: o.Filter, Calls: o.Calls}
	return build(c, d, o, instructions)
}

// NewServer is New with no filter, no subscriptions and no logging.
func NewServer(version string, logger *slog.Logger, c tools.Catalogue) *server.MCPServer {
	return New(Options{Version: version, Logger: logger}, c)
}

// build assembles a surface's server: tools, resources, prompts and
// completions over d, subscriptions and logging where o has them.
//
// mcp-go's input schema validation stays off: the tools parse their
// arguments strictly themselves and refuse with sentences a model can act
// on, where mcp-go's messages read like "/limit: &{Got:500/1 Want:50/1}".
func build(c tools.Catalogue, d tools.Deps, o Options, instr string, mw ...server.ToolHandlerMiddleware) *server.MCPServer {
	logger := componentLogger(o.Logger)
	hooks := &server.Hooks{}
	comp := tools.Completer{Deps: d, Catalogue: c}
	opts := []server.ServerOption{
		server.WithToolCapabilities(false),
		server.WithInstructions(instr),
		server.WithToolHandlerMiddleware(recovery(logger)),
		server.WithResourceCapabilities(o.Applied != nil, false),
		server.WithResourceRecovery(),
		server.WithPromptCapabilities(false),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(comp),
		server.WithResourceCompletionProvider(comp),
		server.WithHooks(hooks),
	}
	for _, m := range mw {
		opts = append(opts, server.WithToolHandlerMiddleware(m))
	}
	if o.Logs != nil {
		opts = append(opts, server.WithLogging())
	}
	s, listed := newToolServer(o.Version, opts...)
	s.AddTools(listed.slim(c.Set(d))...)
	s.AddResourceTemplates(c.ResourceTemplates(d)...)
	s.AddPrompts(c.Prompts(d)...)
	hooks.AddAfterListResources(listResources(c, d, logger))
	if o.Applied != nil {
		subscribe(s, hooks, c, d, o.Applied, logger)
	}
	if o.Logs != nil {
		o.Logs.attach(s, hooks)
	}
	return s
}

// listResources fills resources/list: mcp-go lists only resources
// registered one by one, and a node's items are too many and change too
// often for that, so the listing is read here, a page at a time, after
// mcp-go answered its (empty) list. A read that fails answers an empty
// page whose _meta carries the refusal.
func listResources(c tools.Catalogue, d tools.Deps, logger *slog.Logger) server.OnAfterListResourcesFunc {
	return func(ctx context.Context, _ any, req *mcpgo.ListResourcesRequest, res *mcpgo.ListResourcesResult) {
		list, next, err := c.ListResources(ctx, d, string(req.Params.Cursor))
		if err != nil {
			logger.WarnContext(ctx, "resource_list_failed", "err", err.Error())
			res.Meta = mcpgo.NewMetaFromMap(map[string]any{"crewlet/refused": tools.ResourceErr(err).Error()})
			return
		}
		res.Resources = append(res.Resources, list...)
		res.NextCursor = mcpgo.Cursor(next)
	}
}

// Narrow removes from a proxy's server (a remote node's tools, a joined
// node's) the operator tools of the build's catalogue c that f does not
// keep: the proxies list their tools from the far side, so the filter
// applies by name.
func Narrow(s *server.MCPServer, c tools.Catalogue, f tools.Filter) {
	NarrowSurface(s, c, tools.Operator, f)
}

// NarrowSurface is Narrow for the tools of surface sf (a joined node's
// seat surface narrows its seat tools).
func NarrowSurface(s *server.MCPServer, c tools.Catalogue, sf tools.Surface, f tools.Filter) {
	keep := map[string]bool{}
	for _, t := range c.Definitions(sf, f) {
		keep[t.Name] = true
	}
	var drop []string
	for name := range s.ListTools() {
		if !keep[name] {
			drop = append(drop, name)
		}
	}
	if len(drop) > 0 {
		s.DeleteTools(drop...)
	}
}
