package tracker

import (
	"context"
	"net/http"

	"github.com/crewlet/crewlet/engine/rest"
)

// Routes are the tracker's HTTP routes: its REST read routes, the same
// answers as list_projects, list_work_items, get_work_item and
// search_work_items and an item's history, at the read level the grammar
// asks (stale by default), and a task's purge (operator.go).
func (s *Service) Routes() []rest.Route {
	return append([]rest.Route{
		{Method: http.MethodGet, Pattern: "/api/v1/projects", Grammar: true, Serve: s.restProjects},
		{Method: http.MethodGet, Pattern: "/api/v1/work-items", Grammar: true, Keys: []string{"project", "status", "assignee", "tag", "priority", "type", "keys", "parent", "updated_since", "trashed", "sort", "limit", "cursor"}, Serve: s.restWorkItems},
		{Method: http.MethodGet, Pattern: "/api/v1/work-items/{key}", Grammar: true, Serve: s.restWorkItem},
		{Method: http.MethodGet, Pattern: "/api/v1/work-items/{key}/history", Grammar: true, Serve: s.restHistory},
		{Method: http.MethodGet, Pattern: "/api/v1/search/work-items", Grammar: true, Keys: []string{"q", "project", "limit", "cursor"}, Serve: s.restSearch},
	}, s.purgeRoutes()...)
}

// restProjects is GET /api/v1/projects.
func (s *Service) restProjects(ctx context.Context, q *rest.Query) (any, error) {
	res, err := s.ListProjects(ctx, q.Read)
	if res.Projects == nil {
		res.Projects = []Project{}
	}
	return res, err
}

// restWorkItems is GET /api/v1/work-items?project=ENG&status=…&assignee=…&limit=…&cursor=…, with the
// filters list_work_items takes (comma-separated values; trashed=true).
func (s *Service) restWorkItems(ctx context.Context, q *rest.Query) (any, error) {
	limit, err := q.Int("limit", 1, MaxListLimit, DefaultListLimit)
	if err != nil {
		return nil, err
	}
	trashed := q.Str("trashed")
	if trashed != "" && trashed != "true" && trashed != "false" {
		return nil, invalid("trashed %q is not true or false.", trashed)
	}
	res, err := s.ListWorkItems(ctx, q.Read, ListFilter{
		Project: q.Str("project"), Status: q.Str("status"), Assignee: q.Str("assignee"), Limit: limit, Cursor: q.Str("cursor"),
		Tag: q.Str("tag"), Priority: q.Str("priority"), Type: q.Str("type"), Keys: q.Str("keys"), Parent: q.Str("parent"),
		UpdatedSince: q.Str("updated_since"), Trashed: trashed == "true", Sort: q.Str("sort"),
	})
	if res.Items == nil {
		res.Items = []WorkItem{}
	}
	return res, err
}

// restWorkItem is GET /api/v1/work-items/{key}.
func (s *Service) restWorkItem(ctx context.Context, q *rest.Query) (any, error) {
	return s.GetWorkItem(ctx, q.Read, q.Path("key"))
}

// restHistory is GET /api/v1/work-items/{key}/history.
func (s *Service) restHistory(ctx context.Context, q *rest.Query) (any, error) {
	return s.ItemHistory(ctx, q.Read, q.Path("key"))
}

// restSearch is GET /api/v1/search/work-items?q=…&project=…&limit=….
func (s *Service) restSearch(ctx context.Context, q *rest.Query) (any, error) {
	limit, err := q.Int("limit", 1, MaxSearchLimit, DefaultSearchLimit)
	if err != nil {
		return nil, err
	}
	return s.SearchWorkItemsPage(ctx, q.Read, SearchQuery{Query: q.Str("q"), Project: q.Str("project"), Limit: limit, Cursor: q.Str("cursor")})
}
