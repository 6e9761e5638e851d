package kb

import (
	"context"
	"net/http"

	"github.com/crewlet/crewlet/engine/rest"
)

// purgeRoutes are the knowledge base's operator write routes: a
// page's purge.
func (s *Service) purgeRoutes() []rest.Route {
	return []rest.Route{{Method: http.MethodPost, Pattern: "/api/v1/pages/{id}/purge", OpID: &rest.OpID{Tool: "purge_page", Arg: "id"},
		Serve: func(ctx context.Context, q *rest.Query) (any, error) {
			return s.PurgePage(ctx, q.Write, q.Path("id"))
		}}}
}
