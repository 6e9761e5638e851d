package kb

import (
	"context"

	"github.com/crewlet/crewlet/engine/rest"
)

// ReadRoutes are the knowledge base's REST read routes: the same answers
// as list_spaces and get_page, at the read level the grammar asks (stale
// by default).
func (s *Service) ReadRoutes() []rest.Route {
	return []rest.Route{
		{Pattern: "/api/v1/spaces", Grammar: true, Serve: s.restSpaces},
		{Pattern: "/api/v1/pages/{id}", Grammar: true, Serve: s.restPage},
	}
}

// restSpaces is GET /api/v1/spaces.
func (s *Service) restSpaces(ctx context.Context, q *rest.Query) (any, error) {
	res, err := s.ListSpaces(ctx, q.Read)
	if res.Spaces == nil {
		res.Spaces = []Space{}
	}
	return res, err
}

// restPage is GET /api/v1/pages/{id}.
func (s *Service) restPage(ctx context.Context, q *rest.Query) (any, error) {
	return s.GetPage(ctx, q.Read, q.Path("id"))
}
