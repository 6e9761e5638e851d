package tracker

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/ledger"
)

// Service is the tracker's decide side: it validates input, decides
// against the local rows, and hands records to the write path.
type Service struct {
	replica *statelog.Replica
	clock   engine.Clock
}

// NewService builds the service over the tracker's replica.
func NewService(r *statelog.Replica, clock engine.Clock) *Service {
	if clock == nil {
		clock = engine.SystemClock{}
	}
	return &Service{replica: r, clock: clock}
}

// Replica is the tracker's replica (tests and benchmarks reach the
// framework through it).
func (s *Service) Replica() *statelog.Replica { return s.replica }

var (
	projectKeyRE = regexp.MustCompile(`^[A-Z][A-Z0-9]{1,9}$`)
	itemKeyRE    = regexp.MustCompile(`^([A-Z][A-Z0-9]{1,9})-([1-9][0-9]{0,17})$`)
)

func invalid(format string, args ...any) error {
	return engine.Refuse(engine.CodeInvalidArgument, format, args...)
}

func checkText(field, v string, maxBytes int, required bool) error {
	if required && strings.TrimSpace(v) == "" {
		return invalid("%s is empty; give a non-empty %s.", field, field)
	}
	if len(v) > maxBytes {
		return invalid("%s is %d bytes; at most %d are accepted. Shorten it.", field, len(v), maxBytes)
	}
	return nil
}

func checkStatus(st string) error {
	if !slices.Contains(Statuses, st) {
		return invalid("status %q is not one of %s.", st, strings.Join(Statuses, ", "))
	}
	return nil
}

// opFor returns the operation a write runs under.
func (s *Service) opFor(ctx context.Context, w engine.WriteOptions, verb, object string) (statelog.Op, error) {
	op, err := ledger.ForCall(s.clock.Now(), w.OpID, w.Unit, w.UnitStart, w.CallIndex, verb, object, w.Digest)
	if err != nil {
		var ce *ledger.CallError
		if errors.As(err, &ce) && ce.Reused {
			return op, engine.Refuse(engine.CodeOpReused, "%s", ce.Msg)
		}
		return op, invalid("%v", err)
	}
	return op, nil
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
		return &statelog.Proposal{Kind: KindCreateProject, Subject: projectSubject(key), Scope: []string{"project:" + key},
			Payload: createProject{Key: key, Name: name}}, nil
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
		p, err = getProject(ctx, tx, key)
		return err
	})
	return p, err
}

func getProject(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, key string) (Project, error) {
	var p Project
	var created int64
	err := q.QueryRowContext(ctx, `SELECT key, name, last_number, max(version, scoped_through), created_at FROM tracker_projects WHERE key = ?`, key).
		Scan(&p.Key, &p.Name, &p.LastNumber, &p.Version, &created)
	p.CreatedAt = time.Unix(0, created).UTC()
	return p, err
}

// ListProjects lists every project.
func (s *Service) ListProjects(ctx context.Context, r engine.ReadOptions) (ProjectList, error) {
	out := ProjectList{Projects: []Project{}}
	info, err := s.replica.Read(ctx, linearizable(r), func(ctx context.Context, tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT key, name, last_number, max(version, scoped_through), created_at FROM tracker_projects ORDER BY key`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p Project
			var created int64
			if err := rows.Scan(&p.Key, &p.Name, &p.LastNumber, &p.Version, &created); err != nil {
				return err
			}
			p.CreatedAt = time.Unix(0, created).UTC()
			out.Projects = append(out.Projects, p)
		}
		return rows.Err()
	})
	out.ReadInfo = info
	return out, err
}

// CreateWorkItem files a work item in a project under its next number.
// The item's id derives from the operation, so a retried create answers
// the item the first copy filed.
func (s *Service) CreateWorkItem(ctx context.Context, w engine.WriteOptions, in NewWorkItem) (ItemWrite, error) {
	if !projectKeyRE.MatchString(in.Project) {
		return ItemWrite{}, invalid("project %q is not a project key (2-10 upper-case letters and digits, e.g. ENG); list_projects shows them.", in.Project)
	}
	if err := checkText("title", in.Title, MaxTitleBytes, true); err != nil {
		return ItemWrite{}, err
	}
	if err := checkText("description", in.Description, MaxDescriptionBytes, false); err != nil {
		return ItemWrite{}, err
	}
	if err := checkText("assignee", in.Assignee, MaxAssigneeBytes, false); err != nil {
		return ItemWrite{}, err
	}
	if in.Status == "" {
		in.Status = StatusOpen
	}
	if err := checkStatus(in.Status); err != nil {
		return ItemWrite{}, err
	}
	op, err := s.opFor(ctx, w, "create_work_item", in.Project)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	id := itemID(op.ID)
	wr, err := s.replica.Write(ctx, op, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		p, err := getProject(ctx, tx, in.Project)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, engine.Refuse(engine.CodeNotFound, "project %s does not exist; list_projects shows the projects, or create_project files it.", in.Project)
		}
		if err != nil {
			return nil, err
		}
		return &statelog.Proposal{Kind: KindCreateWorkItem, Subject: projectSubject(in.Project),
			Scope:   []string{"project:" + in.Project, "item:" + id},
			Payload: createWorkItem{ID: id, Project: in.Project, Number: p.LastNumber + 1, Title: in.Title, Description: in.Description, Status: in.Status, Assignee: in.Assignee}}, nil
	})
	if err == nil && wr.Unvouched {
		return s.createFromRow(ctx, wr, id)
	}
	return s.itemAnswer(ctx, wr, err, id)
}

// createFromRow answers a create the ledger can no longer vouch for from
// its item's own row (the id derives from the op): the item the first copy
// filed, under the key it took, where this node holds it; unknown with no
// number minted where it does not.
func (s *Service) createFromRow(ctx context.Context, wr statelog.Written, id string) (ItemWrite, error) {
	var it WorkItem
	var created uint64
	_, err := s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		it, err = s.getItem(ctx, tx, "id", id)
		if err == nil {
			err = tx.QueryRowContext(ctx, `SELECT created_seq FROM tracker_items WHERE id = ?`, id).Scan(&created)
		}
		return err
	})
	out := ItemWrite{WriteResult: wr.WriteResult}
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.Outcome, out.Message, out.Item = engine.Applied, "", &it
	out.Position = s.replica.Position(created).Token()
	return out, nil
}

// itemID derives a work item's id from the operation that creates it.
func itemID(op ledger.OpID) string { return "wi_" + strings.ReplaceAll(op.UUID.String(), "-", "") }

// itemAnswer renders a write's answer with the item as this node's rows
// hold it: on a replayed answer that is the first copy's item, never what
// this attempt decided.
func (s *Service) itemAnswer(ctx context.Context, wr statelog.Written, err error, id string) (ItemWrite, error) {
	out := ItemWrite{WriteResult: wr.WriteResult}
	if err != nil || wr.Outcome != engine.Applied {
		return out, err
	}
	var it WorkItem
	_, rerr := s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		it, err = s.getItem(ctx, tx, "id", id)
		return err
	})
	if rerr == nil {
		out.Item = &it
	} else if !errors.Is(rerr, sql.ErrNoRows) {
		return out, rerr
	}
	return out, nil
}

const itemColumns = `id, key, project, number, title, description, status, assignee, max(version, scoped_through), created_at, updated_at`

func scanItem(sc interface{ Scan(...any) error }) (WorkItem, error) {
	var it WorkItem
	var created, updated int64
	err := sc.Scan(&it.ID, &it.Key, &it.Project, &it.Number, &it.Title, &it.Description, &it.Status, &it.Assignee, &it.Version, &created, &updated)
	it.CreatedAt, it.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	return it, err
}

func (s *Service) getItem(ctx context.Context, tx *sql.Tx, column, value string) (WorkItem, error) {
	return scanItem(s.replica.QueryRow(ctx, tx, `SELECT `+itemColumns+` FROM tracker_items WHERE `+column+` = ?`, value))
}

func checkItemKey(key string) error {
	if !itemKeyRE.MatchString(key) {
		return invalid("key %q is not a work item key like ENG-8 (project key, '-', number).", key)
	}
	return nil
}

func notFoundItem(key string) error {
	return engine.Refuse(engine.CodeNotFound, "work item %s does not exist; list_work_items shows a project's items.", key)
}

// GetWorkItem reads one item by key.
func (s *Service) GetWorkItem(ctx context.Context, r engine.ReadOptions, key string) (ItemRead, error) {
	if err := checkItemKey(key); err != nil {
		return ItemRead{}, err
	}
	var out ItemRead
	// The read is about the item, or, where there is none by that key,
	// about its project's numbering: a retained record covering either
	// refuses deferred rather than answering without it.
	info, err := s.replica.ReadObject(ctx, linearizable(r), func(ctx context.Context, tx *sql.Tx) ([]string, error) {
		it, err := s.getItem(ctx, tx, "key", key)
		if errors.Is(err, sql.ErrNoRows) {
			return []string{"project:" + key[:strings.LastIndexByte(key, '-')]}, notFoundItem(key)
		}
		out.Item = it
		return []string{"item:" + it.ID}, err
	})
	out.ReadInfo = info
	return out, err
}

// ListWorkItems lists items in key order, a page at a time.
func (s *Service) ListWorkItems(ctx context.Context, r engine.ReadOptions, f ListFilter) (ItemList, error) {
	if f.Project != "" && !projectKeyRE.MatchString(f.Project) {
		return ItemList{}, invalid("project %q is not a project key (e.g. ENG).", f.Project)
	}
	if f.Status != "" {
		if err := checkStatus(f.Status); err != nil {
			return ItemList{}, err
		}
	}
	if f.Limit == 0 {
		f.Limit = DefaultListLimit
	}
	if f.Limit < 0 || f.Limit > MaxListLimit {
		return ItemList{}, invalid("limit %d is out of range; give 1 to %d.", f.Limit, MaxListLimit)
	}
	afterProject, afterNumber := "", int64(0)
	if f.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(f.Cursor)
		m := itemKeyRE.FindStringSubmatch(string(raw))
		if err != nil || m == nil {
			return ItemList{}, invalid("cursor %q is not one a previous page returned; start again without it.", f.Cursor)
		}
		afterProject = m[1]
		afterNumber, _ = strconv.ParseInt(m[2], 10, 64)
	}
	out := ItemList{Items: []WorkItem{}}
	info, err := s.replica.Read(ctx, linearizable(r), func(ctx context.Context, tx *sql.Tx) error {
		q := `SELECT ` + itemColumns + ` FROM tracker_items WHERE (project > ? OR (project = ? AND number > ?))`
		args := []any{afterProject, afterProject, afterNumber}
		if f.Project != "" {
			q += ` AND project = ?`
			args = append(args, f.Project)
		}
		if f.Status != "" {
			q += ` AND status = ?`
			args = append(args, f.Status)
		}
		if f.Assignee != "" {
			q += ` AND assignee = ?`
			args = append(args, f.Assignee)
		}
		q += ` ORDER BY project, number LIMIT ?`
		args = append(args, f.Limit+1)
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			it, err := scanItem(rows)
			if err != nil {
				return err
			}
			out.Items = append(out.Items, it)
		}
		return rows.Err()
	})
	if len(out.Items) > f.Limit {
		out.Items = out.Items[:f.Limit]
		out.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(out.Items[f.Limit-1].Key))
	}
	out.ReadInfo = info
	return out, err
}

// UpdateWorkItem changes an item's fields. With ifMatch set, the update
// applies only while the item's version is that one, else refuses stale
// naming the current version.
func (s *Service) UpdateWorkItem(ctx context.Context, w engine.WriteOptions, key string, ifMatch uint64, p ItemPatch) (ItemWrite, error) {
	if err := checkItemKey(key); err != nil {
		return ItemWrite{}, err
	}
	if p.Title == nil && p.Description == nil && p.Status == nil && p.Assignee == nil {
		return ItemWrite{}, invalid("nothing to update: give at least one of title, description, status, assignee.")
	}
	if p.Title != nil {
		if err := checkText("title", *p.Title, MaxTitleBytes, true); err != nil {
			return ItemWrite{}, err
		}
	}
	if p.Description != nil {
		if err := checkText("description", *p.Description, MaxDescriptionBytes, false); err != nil {
			return ItemWrite{}, err
		}
	}
	if p.Assignee != nil {
		if err := checkText("assignee", *p.Assignee, MaxAssigneeBytes, false); err != nil {
			return ItemWrite{}, err
		}
	}
	if p.Status != nil {
		if err := checkStatus(*p.Status); err != nil {
			return ItemWrite{}, err
		}
	}
	op, err := s.opFor(ctx, w, "update", key)
	if err != nil {
		return ItemWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	var id string
	wr, err := s.replica.Write(ctx, op, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		it, err := s.getItem(ctx, tx, "key", key)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, notFoundItem(key)
		}
		if err != nil {
			return nil, err
		}
		if ifMatch != 0 && it.Version != ifMatch {
			ref := engine.Refuse(engine.CodeStale, "%s is at version %d, not the if_match %d you named; read it again and decide against version %d.", key, it.Version, ifMatch, it.Version)
			return nil, ref.With("current_version", it.Version)
		}
		id = it.ID
		return &statelog.Proposal{Kind: KindUpdateWorkItem, Subject: itemSubject(it.ID), Scope: []string{"item:" + it.ID},
			Payload: updateWorkItem{ID: it.ID, Title: p.Title, Description: p.Description, Status: p.Status, Assignee: p.Assignee}}, nil
	})
	if id == "" && err == nil {
		// Answered from the ledger without deciding: find the item by key.
		var it WorkItem
		if _, rerr := s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
			var e error
			it, e = s.getItem(ctx, tx, "key", key)
			return e
		}); rerr == nil {
			id = it.ID
		}
	}
	return s.itemAnswer(ctx, wr, err, id)
}

// String helps logs.
func (p ItemPatch) String() string {
	return fmt.Sprintf("title=%v description=%v status=%v assignee=%v", p.Title != nil, p.Description != nil, p.Status != nil, p.Assignee != nil)
}
