package rest

import (
	"context"
	"net/http"
)

// Route is one route of a node's HTTP surface. A route is answered either
// as JSON from Serve, its query checked here first, or by its own Handler.
type Route struct {
	// Method is GET or POST. A JSON GET route answers 405 to any other
	// method (HEAD aside); "" is every method, for a Handler route only
	// (the MCP endpoints, the health checks).
	Method string
	// Pattern is the route's net/http path pattern, its wildcards named:
	// /api/v1/work-items/{key}.
	Pattern string
	// Access is who may call it: the operator by default.
	Access Access
	// Grammar says a GET takes the read grammar; a replication answer's
	// route does not: its level is derived, never chosen.
	Grammar bool
	// Keys are the query keys the route takes besides the grammar.
	Keys []string
	// OpID makes a POST a write run under ?op_id=, the only key it takes.
	OpID *OpID
	// Unchecked leaves the query to the route: Serve reads what it takes
	// (Query.Raw) and words its own refusals.
	Unchecked bool
	// Serve answers the route: its answer as JSON with 200, or its error,
	// a refusal with its code's status and anything else internal.
	Serve func(ctx context.Context, q *Query) (any, error)
	// Handler answers the route itself, in Serve's place: what is not one
	// JSON answer (the MCP endpoints, the dashboard, a streamed backup).
	Handler http.Handler
}

// OpID is what a write route digests its call as: the MCP tool that makes
// the same write and the path wildcard naming its object (its one
// argument), so an op id from either surface comes back on the other.
type OpID struct {
	Tool string
	Arg  string
}

// Access is who may call a route.
type Access int

const (
	// Operator routes want the operator's bearer token, from this node's
	// own Host and Origin names: every route but the ones below.
	Operator Access = iota
	// Page routes want this node's own Host and Origin names and no
	// token: what a browser loads before it can send one (the dashboard's
	// page and assets, which carry no data).
	Page
	// Open routes want nothing: the health checks a load balancer asks.
	Open
)

// Router declares routes: a domain's service, the node's own parts.
type Router interface {
	Routes() []Route
}

// RoutesOf collects the routes of every router, in the order given.
func RoutesOf(routers ...Router) []Route {
	var out []Route
	for _, r := range routers {
		out = append(out, r.Routes()...)
	}
	return out
}
