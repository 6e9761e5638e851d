package fleet

import (
	"context"

	"github.com/crewlet/crewlet/engine/rest"
)

// ReadRoutes is the replication answer as a REST read route,
// GET /api/v1/retention. It takes no read grammar: its level is derived
// (stale, weakening to consistent_prefix), never chosen.
func (s *Status) ReadRoutes() []rest.Route {
	return []rest.Route{{Pattern: "/api/v1/retention", Serve: func(ctx context.Context, _ *rest.Query) (any, error) {
		return s.Answer(ctx)
	}}}
}
