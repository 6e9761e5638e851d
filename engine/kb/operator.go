package kb

import (
	"context"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/operator"
)

// OperatorRoutes are the knowledge base's operator write routes: a
// page's purge.
func (s *Service) OperatorRoutes() []operator.Route {
	return []operator.Route{{Pattern: "POST /api/v1/pages/{id}/purge", Tool: "purge_page", Arg: "id",
		Run: func(ctx context.Context, w engine.WriteOptions, id string) (any, error) {
			return s.PurgePage(ctx, w, id)
		}}}
}
