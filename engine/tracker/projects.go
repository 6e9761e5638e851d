package tracker

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// ProjectRead answers get_project: the project with its items counted by
// status (the trash counted apart).
type ProjectRead struct {
	engine.ReadInfo
	Project Project          `json:"project"`
	Counts  map[string]int64 `json:"counts"`
	Trashed int64            `json:"trashed"`
}

// projectColumns are a project's columns over tracker_projects p and
// tracker_project_state s.
const projectColumns = `p.key, p.name, p.last_number, p.active, max(p.version, p.scoped_through), p.created_at, coalesce(s.archived, 0)`

const projectFrom = ` FROM tracker_projects p LEFT JOIN tracker_project_state s ON s.key = p.key`

func scanProject(sc interface{ Scan(...any) error }) (Project, error) {
	var p Project
	var created int64
	err := sc.Scan(&p.Key, &p.Name, &p.LastNumber, &p.TaskCounts.Active, &p.Version, &created, &p.Archived)
	p.CreatedAt = time.Unix(0, created).UTC()
	return p, err
}

// ListProjectsIn lists the projects, the archived ones only when
// includeArchived.
func (s *Service) ListProjectsIn(ctx context.Context, r engine.ReadOptions, includeArchived bool) (ProjectList, error) {
	out := ProjectList{Projects: []Project{}}
	info, err := s.replica.Read(ctx, linearizable(r), func(ctx context.Context, tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+projectColumns+projectFrom+` WHERE ? OR coalesce(s.archived, 0) = 0 ORDER BY p.key`, includeArchived)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			p, err := scanProject(rows)
			if err != nil {
				return err
			}
			out.Projects = append(out.Projects, p)
		}
		return rows.Err()
	})
	out.ReadInfo = info
	return out, err
}

// GetProject reads one project with its counts by status.
func (s *Service) GetProject(ctx context.Context, r engine.ReadOptions, key string) (ProjectRead, error) {
	if !projectKeyRE.MatchString(key) {
		return ProjectRead{}, invalid("project %q is not a project key (e.g. ENG); list_projects shows them.", key)
	}
	out := ProjectRead{Counts: map[string]int64{}}
	for _, st := range Statuses {
		out.Counts[st] = 0
	}
	info, err := s.replica.ReadObject(ctx, linearizable(r), func(ctx context.Context, tx *sql.Tx) ([]string, error) {
		scope := []string{trackrec.ProjectScope(key)}
		var err error
		out.Project, err = scanProject(tx.QueryRowContext(ctx, `SELECT `+projectColumns+projectFrom+` WHERE p.key = ?`, key))
		if errors.Is(err, sql.ErrNoRows) {
			return scope, notFoundProject(key)
		}
		if err != nil {
			return scope, err
		}
		rows, err := tx.QueryContext(ctx, `SELECT status, trashed != 0, count(*) FROM tracker_items WHERE project = ? GROUP BY 1, 2`, key)
		if err != nil {
			return scope, err
		}
		defer rows.Close()
		for rows.Next() {
			var st string
			var trashed bool
			var n int64
			if err := rows.Scan(&st, &trashed, &n); err != nil {
				return scope, err
			}
			if trashed {
				out.Trashed += n
			} else {
				out.Counts[st] += n
			}
		}
		return scope, rows.Err()
	})
	out.ReadInfo = info
	return out, err
}

func notFoundProject(key string) error {
	return engine.Refuse(engine.CodeNotFound, "project %s does not exist; list_projects shows the projects (include_archived for the archived ones).", key)
}

// UpdateProject renames a project or archives it (archived true) or
// brings it back (false): an archived project takes no new items and is
// left out of list_projects unless asked for. One record about the
// project; ifMatch (w.IfMatch) refuses stale where its version moved.
func (s *Service) UpdateProject(ctx context.Context, w engine.WriteOptions, key string, name *string, archived *bool) (ProjectWrite, error) {
	if !projectKeyRE.MatchString(key) {
		return ProjectWrite{}, invalid("project %q is not a project key (e.g. ENG); list_projects shows them.", key)
	}
	if name == nil && archived == nil {
		return ProjectWrite{}, invalid("nothing to change: pass name, archived or both.")
	}
	if name != nil {
		if err := checkText("name", *name, MaxNameBytes, true); err != nil {
			return ProjectWrite{}, err
		}
	}
	op, err := s.opFor(ctx, w, "update_project", key)
	if err != nil {
		return ProjectWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	wr, err := s.replica.Write(ctx, op, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		p, err := getProject(ctx, tx, key)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, notFoundProject(key)
		}
		if err != nil {
			return nil, err
		}
		if w.IfMatch != 0 && p.Version != w.IfMatch {
			ref := engine.Refuse(engine.CodeStale, "project %s is at version %d, not the if_match %d you named; read it again and decide against version %d.", key, p.Version, w.IfMatch, p.Version)
			return nil, ref.With("current_version", p.Version)
		}
		return &statelog.Proposal{Kind: trackrec.KindUpdateProject, Subject: trackrec.ProjectSubject(key), Scope: []string{trackrec.ProjectScope(key)},
			Payload: trackrec.UpdateProject{Key: key, Name: name, Archived: archived}}, nil
	})
	out := ProjectWrite{WriteResult: wr.WriteResult}
	if err != nil || wr.Outcome != engine.Applied {
		return out, err
	}
	_, err = s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
		p, err := scanProject(tx.QueryRowContext(ctx, `SELECT `+projectColumns+projectFrom+` WHERE p.key = ?`, key))
		out.Project = &p
		return err
	})
	return out, err
}

// rowQuerier runs a one-row query: a transaction, or one whose statements
// are prepared once (Service.hot).
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// checkOpenProject refuses a new item (a create, a move into it) in an
// archived project.
func checkOpenProject(ctx context.Context, q rowQuerier, key string) error {
	var archived bool
	err := q.QueryRowContext(ctx, `SELECT archived FROM tracker_project_state WHERE key = ?`, key).Scan(&archived)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !archived) {
		return nil
	}
	if err != nil {
		return err
	}
	return archivedProject(key)
}

// archivedProject is the refusal of a new item in an archived project.
func archivedProject(key string) error {
	return invalid("project %s is archived and takes no new items; file it in another project, or update_project %s with archived false first.", key, key)
}
