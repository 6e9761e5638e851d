package kb

import (
	"context"
	"net/http"

	"github.com/crewlet/crewlet/engine/rest"
)

// Routes are the knowledge base's HTTP routes: its REST read routes,
// the same answers as list_spaces, list_pages, get_page and
// search_knowledge at the read level the grammar asks (stale by default),
// and a page's purge (operator.go).
func (s *Service) Routes() []rest.Route {
	return append([]rest.Route{
		{Method: http.MethodGet, Pattern: "/api/v1/spaces", Grammar: true, Keys: []string{"include_archived", "limit", "cursor"}, Serve: s.restSpaces},
		{Method: http.MethodGet, Pattern: "/api/v1/spaces/{key}", Grammar: true, Serve: s.restSpace},
		{Method: http.MethodGet, Pattern: "/api/v1/pages/{id}/versions", Grammar: true, Keys: []string{"limit", "cursor"}, Serve: s.restVersions},
		{Method: http.MethodGet, Pattern: "/api/v1/pages", Grammar: true, Keys: []string{"space", "parent", "limit", "cursor"}, Serve: s.restPages},
		{Method: http.MethodGet, Pattern: "/api/v1/pages/{id}", Grammar: true, Serve: s.restPage},
		{Method: http.MethodGet, Pattern: "/api/v1/search/pages", Grammar: true, Keys: []string{"q", "space", "limit", "cursor"}, Serve: s.restSearch},
	}, s.purgeRoutes()...)
}

// restSpaces is GET /api/v1/spaces?include_archived=true&limit=…&cursor=….
func (s *Service) restSpaces(ctx context.Context, q *rest.Query) (any, error) {
	limit, err := q.Int("limit", 1, MaxListLimit, DefaultListLimit)
	if err != nil {
		return nil, err
	}
	res, err := s.ListSpacesPage(ctx, q.Read, SpaceFilter{IncludeArchived: q.Str("include_archived") == "true", Limit: limit, Cursor: q.Str("cursor")})
	if res.Spaces == nil {
		res.Spaces = []Space{}
	}
	return res, err
}

// restSpace is GET /api/v1/spaces/{key}.
func (s *Service) restSpace(ctx context.Context, q *rest.Query) (any, error) {
	return s.GetSpace(ctx, q.Read, q.Path("key"))
}

// restVersions is GET /api/v1/pages/{id}/versions?limit=…&cursor=….
func (s *Service) restVersions(ctx context.Context, q *rest.Query) (any, error) {
	limit, err := q.Int("limit", 1, MaxListLimit, DefaultListLimit)
	if err != nil {
		return nil, err
	}
	return s.ListPageVersions(ctx, q.Read, q.Path("id"), q.Str("cursor"), limit)
}

// restPage is GET /api/v1/pages/{id}.
func (s *Service) restPage(ctx context.Context, q *rest.Query) (any, error) {
	return s.GetPage(ctx, q.Read, q.Path("id"))
}

// restPages is GET /api/v1/pages?space=…&parent=…&limit=…&cursor=… (parent
// given empty lists the space's top pages).
func (s *Service) restPages(ctx context.Context, q *rest.Query) (any, error) {
	limit, err := q.Int("limit", 1, MaxListLimit, DefaultListLimit)
	if err != nil {
		return nil, err
	}
	f := PageFilter{Space: q.Str("space"), Limit: limit, Cursor: q.Str("cursor")}
	if q.Has("parent") {
		p := q.Str("parent")
		f.Parent = &p
	}
	res, err := s.ListPages(ctx, q.Read, f)
	if res.Pages == nil {
		res.Pages = []PageSummary{}
	}
	return res, err
}

// restSearch is GET /api/v1/search/pages?q=…&space=…&limit=….
func (s *Service) restSearch(ctx context.Context, q *rest.Query) (any, error) {
	limit, err := q.Int("limit", 1, MaxSearchLimit, DefaultSearchLimit)
	if err != nil {
		return nil, err
	}
	return s.SearchKnowledge(ctx, q.Read, SearchQuery{Query: q.Str("q"), Space: q.Str("space"), Limit: limit, Cursor: q.Str("cursor")})
}
