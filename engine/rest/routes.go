package rest

import (
	"context"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// routes is the read path's route table: one line a route. The knowledge
// base's (/api/v1/spaces, /api/v1/pages/{id}) and the replication answers'
// (/api/v1/retention, Grammar false) go here, or in Handler's extra.
func (s *server) routes() []Route {
	return append([]Route{
		{Pattern: "/api/v1/projects", Grammar: true, Serve: s.projects},
		{Pattern: "/api/v1/work-items", Grammar: true, Keys: []string{"project", "status", "assignee", "limit", "cursor"}, Serve: s.workItems},
		{Pattern: "/api/v1/work-items/{key}", Grammar: true, Serve: s.workItem},
	}, s.kbRoutes()...)
}

func (s *server) tracker() (Tracker, error) {
	if s.cfg.Tracker == nil {
		return nil, engine.Refuse(engine.CodeNotFound, "this node serves no tracker.")
	}
	return s.cfg.Tracker, nil
}

// projects is GET /api/v1/projects: list_projects' answer.
func (s *server) projects(ctx context.Context, q *Query) (any, error) {
	t, err := s.tracker()
	if err != nil {
		return nil, err
	}
	res, err := t.ListProjects(ctx, q.Read)
	if res.Projects == nil {
		res.Projects = []tracker.Project{}
	}
	return res, err
}

// workItems is GET /api/v1/work-items?project=ENG&status=…&assignee=…&limit=…&cursor=…:
// list_work_items' answer.
func (s *server) workItems(ctx context.Context, q *Query) (any, error) {
	t, err := s.tracker()
	if err != nil {
		return nil, err
	}
	limit, err := q.Int("limit", 1, tracker.MaxListLimit, tracker.DefaultListLimit)
	if err != nil {
		return nil, err
	}
	res, err := t.ListWorkItems(ctx, q.Read, tracker.ListFilter{
		Project: q.Str("project"), Status: q.Str("status"), Assignee: q.Str("assignee"), Limit: limit, Cursor: q.Str("cursor"),
	})
	if res.Items == nil {
		res.Items = []tracker.WorkItem{}
	}
	return res, err
}

// workItem is GET /api/v1/work-items/{key}: get_work_item's answer.
func (s *server) workItem(ctx context.Context, q *Query) (any, error) {
	t, err := s.tracker()
	if err != nil {
		return nil, err
	}
	return t.GetWorkItem(ctx, q.Read, q.Path("key"))
}
