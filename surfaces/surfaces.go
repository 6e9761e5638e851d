// Package surfaces puts a node and the domains of the build on its
// surfaces: the catalogue of tools (every domain's, from the registry,
// and the fleet's, the node's own), the operator, seat and estate MCP
// servers over it, and the node's whole HTTP surface, every route mounted
// one way (rest.Handler). crewlet serve and crewlet mcp build theirs
// here, so a domain added to the registry is served by both.
package surfaces

import (
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/domains"
	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/rest"
	"github.com/crewlet/crewlet/internal/dashboard"
	"github.com/crewlet/crewlet/internal/httpedge"
	"github.com/crewlet/crewlet/mcp"
	"github.com/crewlet/crewlet/tools"
	"github.com/crewlet/crewlet/tools/fleettools"
	"github.com/crewlet/crewlet/tools/turntools"
)

// Catalogue is every tool of a build over no service: what a node
// without the data role offers, and the toolsets --toolsets names.
func Catalogue(r domains.Registry) tools.Catalogue {
	return append(r.Definitions(), fleettools.Toolset(nil, nil), turntools.Toolset(nil, nil))
}

// Tools is the build's catalogue bound to n: the domains' tools over
// their services on n, and the fleet's over its gates and replication
// answer.
func Tools(n *node.Node, r domains.Registry) tools.Catalogue {
	know, _ := n.Service(engine.DomainPages).(turntools.Knowledge)
	return append(r.Toolsets(n.Service), fleettools.Toolset(n.NodeGates(), n.Retention()), turntools.Toolset(n, know))
}

// Operator is the operator (and assistant) MCP server of n.
func Operator(n *node.Node, r domains.Registry, o mcp.Options) *server.MCPServer {
	return mcp.New(o, Tools(n, r))
}

// ServeEstate has n answer the estate calls of the nodes without data
// while its copy is in service: every tool, whatever this node's filter.
// A call naming a seat in its _meta is a seat's (sent by a node without
// data running the turn) and is answered by the seat surface.
func ServeEstate(n *node.Node, r domains.Registry, o mcp.Options) error {
	cat := Tools(n, r)
	seat := mcp.NewSeat(n.Units(), mcp.Options{Version: o.Version, Logger: o.Logger, Floors: n.SeatFloors(), Node: n.Name()}, cat)
	return n.ServeEstate(mcp.EstateHandlers(mcp.NewServer(o.Version, o.Logger, cat), seat))
}

// Seat is the seat MCP over Streamable HTTP: the seat toolset of n, its
// ids derived from the units of work n keeps, its reads carrying n's
// floors, and a call n refuses in a way that proves it ran nowhere here
// sent on to the next data node.
func Seat(n *node.Node, r domains.Registry, o mcp.Options) http.Handler {
	return mcp.SeatHandler(SeatServer(n, r, o), o.Logger)
}

// SeatServer is the seat MCP server of n (Seat's, and `crewlet mcp
// --seat` over stdio, where each call names its turn in _meta).
func SeatServer(n *node.Node, r domains.Registry, o mcp.Options) *server.MCPServer {
	o.Floors, o.Node, o.NextHolder = n.SeatFloors(), n.Name(), n.NextHolder()
	return mcp.NewSeat(n.Units(), o, Tools(n, r))
}

// HTTP is n's whole HTTP surface: the operator MCP (operatorMCP) and the
// seat MCP, the metrics, the domains' routes and the node's own behind
// the operator guard, the dashboard behind its Host and Origin rules,
// and the health checks, which want nothing. Every refusal behind the
// guard is counted by the surface it is on.
func HTTP(n *node.Node, r domains.Registry, operatorMCP http.Handler, guard rest.Guard, o mcp.Options) http.Handler {
	ui := dashboard.Handler()
	rs := []rest.Route{
		{Pattern: "/operator/mcp", Handler: operatorMCP},
		{Pattern: "/seat/mcp", Handler: Seat(n, r, o)},
		{Method: http.MethodGet, Pattern: "/metrics", Handler: n.MetricsHandler()},
		// /healthz says the process answers, /readyz that the node serves.
		{Pattern: "/healthz", Access: rest.Open, Handler: http.HandlerFunc(healthz)},
		{Pattern: "/readyz", Access: rest.Open, Handler: httpedge.Ready(n.Unready)},
		{Method: http.MethodGet, Pattern: "/{$}", Access: rest.Page, Handler: ui},
		{Method: http.MethodGet, Pattern: "/ui/", Access: rest.Page, Handler: ui},
	}
	rs = append(append(rs, rest.RoutesOf(n.Services()...)...), n.Routes()...)
	count := func(h http.Handler) http.Handler { return n.Metrics().CountRefusals(surfaceOf, h) }
	return rest.Handler(rest.Config{Routes: rs, Guard: guard, Count: count, Logger: o.Logger})
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok"))
}

// surfaceOf names the surface an HTTP request is on, for the refusals
// counted by surface: the MCP routes' own (a tool's refusal is counted by
// the toolset; what is counted here is the guard's), the REST read path,
// the operator's write routes, the metrics.
func surfaceOf(r *http.Request) string {
	switch {
	case r.URL.Path == "/operator/mcp":
		return "operator"
	case r.URL.Path == "/seat/mcp":
		return "seat"
	case strings.HasPrefix(r.URL.Path, "/api/") && r.Method == http.MethodGet:
		return "rest"
	case strings.HasPrefix(r.URL.Path, "/api/"):
		return "operator_routes"
	}
	return "http"
}
