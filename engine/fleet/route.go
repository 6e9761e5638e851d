package fleet

import (
	"context"
	"net/http"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/rest"
	"github.com/crewlet/crewlet/engine/statelog"
)

// Routes is the replication answer as a REST read route,
// GET /api/v1/retention. It takes no read grammar: its level is derived
// (stale, weakening to consistent_prefix), never chosen.
func (s *Status) Routes() []rest.Route {
	return []rest.Route{{Method: http.MethodGet, Pattern: "/api/v1/retention", Serve: func(ctx context.Context, _ *rest.Query) (any, error) {
		return s.Answer(ctx)
	}}}
}

// NodeGates evicts and readmits nodes of the fleet (*statelog.NodeGates).
type NodeGates interface {
	EvictNode(ctx context.Context, w engine.WriteOptions, node string) (statelog.NodeGateWrite, error)
	ReadmitNode(ctx context.Context, w engine.WriteOptions, node string) (statelog.NodeGateWrite, error)
}

// GateRoutes are the node gates' operator write routes: a node's eviction
// and its readmission, each under the op id ?op_id= brings back.
func GateRoutes(g NodeGates) []rest.Route {
	return []rest.Route{
		{Method: http.MethodPost, Pattern: "/api/v1/nodes/{node}/evict", OpID: &rest.OpID{Tool: "evict_node", Arg: "node"},
			Serve: func(ctx context.Context, q *rest.Query) (any, error) {
				return g.EvictNode(ctx, q.Write, q.Path("node"))
			}},
		{Method: http.MethodPost, Pattern: "/api/v1/nodes/{node}/readmit", OpID: &rest.OpID{Tool: "readmit_node", Arg: "node"},
			Serve: func(ctx context.Context, q *rest.Query) (any, error) {
				return g.ReadmitNode(ctx, q.Write, q.Path("node"))
			}},
	}
}
