package tracker

import (
	"context"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/operator"
)

// OperatorRoutes are the tracker's operator write routes: a task's purge.
func (s *Service) OperatorRoutes() []operator.Route {
	return []operator.Route{{Pattern: "POST /api/v1/work-items/{key}/purge", Tool: "purge_work_item", Arg: "key",
		Run: func(ctx context.Context, w engine.WriteOptions, key string) (any, error) {
			return s.PurgeWorkItem(ctx, w, key)
		}}}
}
