package rest

import (
	"context"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb"
)

// KB is the knowledge base's read side (*kb.Service).
type KB interface {
	ListSpaces(ctx context.Context, r engine.ReadOptions) (kb.SpaceList, error)
	GetPage(ctx context.Context, r engine.ReadOptions, id string) (kb.PageRead, error)
}

var _ KB = (*kb.Service)(nil)

// kbRoutes are the knowledge base's read routes.
func (s *server) kbRoutes() []Route {
	return []Route{
		{Pattern: "/api/v1/spaces", Grammar: true, Serve: s.spaces},
		{Pattern: "/api/v1/pages/{id}", Grammar: true, Serve: s.page},
	}
}

func (s *server) kb() (KB, error) {
	if s.cfg.KB == nil {
		return nil, engine.Refuse(engine.CodeNotFound, "this node serves no knowledge base.")
	}
	return s.cfg.KB, nil
}

// spaces is GET /api/v1/spaces: list_spaces' answer.
func (s *server) spaces(ctx context.Context, q *Query) (any, error) {
	k, err := s.kb()
	if err != nil {
		return nil, err
	}
	res, err := k.ListSpaces(ctx, q.Read)
	if res.Spaces == nil {
		res.Spaces = []kb.Space{}
	}
	return res, err
}

// page is GET /api/v1/pages/{id}: get_page's answer.
func (s *server) page(ctx context.Context, q *Query) (any, error) {
	k, err := s.kb()
	if err != nil {
		return nil, err
	}
	return k.GetPage(ctx, q.Read, q.Path("id"))
}
