package tracker

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// Service is the tracker's decide side: it validates input, decides
// against the local rows, and hands records to the write path.
type Service struct {
	replica statelog.DomainReplica
	clock   engine.Clock
	// sem is the vectors' index once linked (UseIndex).
	sem semHolder
}

// NewService builds the service over the tracker's replica.
func NewService(r statelog.DomainReplica, clock engine.Clock) *Service {
	if clock == nil {
		clock = engine.SystemClock{}
	}
	return &Service{replica: r, clock: clock}
}

// Replica is the tracker's replica (tests and benchmarks reach the
// framework through it).
func (s *Service) Replica() statelog.DomainReplica { return s.replica }

var (
	projectKeyRE = regexp.MustCompile(`^[A-Z][A-Z0-9]{1,9}$`)
	itemKeyRE    = regexp.MustCompile(`^([A-Z][A-Z0-9]{1,9})-([1-9][0-9]{0,17})$`)
)

func invalid(format string, args ...any) error {
	return engine.Refuse(engine.CodeInvalidArgument, format, args...)
}

func checkText(field, v string, maxBytes int, required bool) error {
	return engine.CheckText(field, v, maxBytes, required)
}

func checkStatus(st string) error {
	if !slices.Contains(Statuses, st) {
		return invalid("status %q is not one of %s.", st, strings.Join(Statuses, ", "))
	}
	return nil
}

// opFor returns the operation a write runs under.
func (s *Service) opFor(_ context.Context, w engine.WriteOptions, verb, object string) (statelog.Op, error) {
	return statelog.OpFor(s.clock.Now(), w, verb, object)
}

func linearizable(r engine.ReadOptions) engine.ReadOptions {
	if r.Level == "" {
		r.Level = engine.Linearizable
	}
	return r
}

// CreateProject files a project under key (2-10 upper-case letters and
// digits, starting with a letter).
func (s *Service) CreateProject(ctx context.Context, w engine.WriteOptions, key, name string) (ProjectWrite, error) {
	if !projectKeyRE.MatchString(key) {
		return ProjectWrite{}, invalid("project key %q is not 2-10 upper-case letters and digits starting with a letter (e.g. ENG).", key)
	}
	if err := checkText("name", name, MaxNameBytes, true); err != nil {
		return ProjectWrite{}, err
	}
	op, err := s.opFor(ctx, w, "create_project", key)
	if err != nil {
		return ProjectWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	wr, err := s.replica.Write(ctx, op, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		if _, err := getProject(ctx, tx, key); err == nil {
			return nil, engine.Refuse(engine.CodeAlreadyExists, "project %s already exists; use it, or choose another key.", key)
		} else if !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		return &statelog.Proposal{Kind: trackrec.KindCreateProject, Subject: trackrec.ProjectSubject(key), Scope: []string{trackrec.ProjectScope(key)},
			Payload: trackrec.CreateProject{Key: key, Name: name}}, nil
	})
	out := ProjectWrite{WriteResult: wr.WriteResult}
	if err != nil {
		return out, err
	}
	if wr.Outcome == engine.Applied {
		p, err := s.readProject(ctx, key)
		if err != nil {
			return out, err
		}
		out.Project = &p
	}
	return out, nil
}

func (s *Service) readProject(ctx context.Context, key string) (Project, error) {
	var p Project
	_, err := s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		p, err = getProject(ctx, s.replica.Prepared(tx), key)
		return err
	})
	return p, err
}

func getProject(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, key string) (Project, error) {
	var p Project
	var created int64
	err := q.QueryRowContext(ctx, `SELECT key, name, last_number, active, max(version, scoped_through), created_at FROM tracker_projects WHERE key = ?`, key).
		Scan(&p.Key, &p.Name, &p.LastNumber, &p.TaskCounts.Active, &p.Version, &created)
	p.CreatedAt = time.Unix(0, created).UTC()
	return p, err
}

// ListProjects lists the projects that are not archived.
func (s *Service) ListProjects(ctx context.Context, r engine.ReadOptions) (ProjectList, error) {
	return s.ListProjectsIn(ctx, r, false)
}
