package tracker

import (
	"context"
	"net/http"

	"github.com/crewlet/crewlet/engine/rest"
)

// purgeRoutes are the tracker's operator write routes: a task's purge.
func (s *Service) purgeRoutes() []rest.Route {
	return []rest.Route{{Method: http.MethodPost, Pattern: "/api/v1/work-items/{key}/purge", OpID: &rest.OpID{Tool: "purge_work_item", Arg: "key"},
		Serve: func(ctx context.Context, q *rest.Query) (any, error) {
			return s.PurgeWorkItem(ctx, q.Write, q.Path("key"))
		}}}
}
