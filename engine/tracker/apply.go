package tracker

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
)

// Record kinds of the tracker domain.
const (
	KindCreateProject  = "tracker.create_project"
	KindCreateWorkItem = "tracker.create_work_item"
	KindUpdateWorkItem = "tracker.update_work_item"
)

const schema = `
CREATE TABLE IF NOT EXISTS tracker_projects (
	key            TEXT PRIMARY KEY,
	name           TEXT NOT NULL,
	last_number    INTEGER NOT NULL DEFAULT 0,
	version        INTEGER NOT NULL,
	scoped_through INTEGER NOT NULL DEFAULT 0,
	created_at     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tracker_items (
	id             TEXT PRIMARY KEY,
	key            TEXT NOT NULL UNIQUE,
	project        TEXT NOT NULL,
	number         INTEGER NOT NULL,
	title          TEXT NOT NULL,
	description    TEXT NOT NULL,
	status         TEXT NOT NULL,
	assignee       TEXT NOT NULL,
	version        INTEGER NOT NULL,
	scoped_through INTEGER NOT NULL DEFAULT 0,
	created_seq    INTEGER NOT NULL,
	created_at     INTEGER NOT NULL,
	updated_at     INTEGER NOT NULL,
	UNIQUE (project, number)
) WITHOUT ROWID;
`

// Subjects of the tracker's stream.
func projectSubject(key string) string {
	return statelog.SubjectPrefix(engine.DomainTracker) + "project." + key
}
func itemSubject(id string) string {
	return statelog.SubjectPrefix(engine.DomainTracker) + "item." + id
}

// Payloads.
type createProject struct {
	Key  string `json:"key"`
	Name string `json:"name"`
}

type createWorkItem struct {
	ID          string `json:"id"`
	Project     string `json:"project"`
	Number      int64  `json:"number"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Status      string `json:"status"`
	Assignee    string `json:"assignee"`
}

type updateWorkItem struct {
	ID          string  `json:"id"`
	Title       *string `json:"title,omitempty"`
	Description *string `json:"description,omitempty"`
	Status      *string `json:"status,omitempty"`
	Assignee    *string `json:"assignee,omitempty"`
}

// Domain is the tracker as the replication framework drives it.
type Domain struct{}

var _ statelog.Domain = Domain{}

// Name is "tracker".
func (Domain) Name() engine.Domain { return engine.DomainTracker }

// Schema is the tracker's tables.
func (Domain) Schema() string { return schema }

// Apply writes one record's rows. Records were decided against the rows
// their subject's anchor named, so applying is deterministic; one that is
// moot here (its project gone, its number taken) writes nothing.
func (Domain) Apply(ctx context.Context, tx *sql.Tx, rec *record.Record, at statelog.Applying) error {
	ts := at.Time.UnixNano()
	switch rec.Kind {
	case KindCreateProject:
		var p createProject
		if err := json.Unmarshal(rec.Payload, &p); err != nil {
			return nil // undecodable payload of a known kind: moot
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO tracker_projects(key, name, last_number, version, created_at) VALUES(?,?,0,?,?)
			ON CONFLICT(key) DO NOTHING`, p.Key, p.Name, at.Seq, ts)
		return err
	case KindCreateWorkItem:
		var c createWorkItem
		if err := json.Unmarshal(rec.Payload, &c); err != nil {
			return nil
		}
		var last int64
		err := tx.QueryRowContext(ctx, `SELECT last_number FROM tracker_projects WHERE key = ?`, c.Project).Scan(&last)
		if err == sql.ErrNoRows {
			return nil
		}
		if err != nil {
			return err
		}
		// The number is consumed whether or not the item files, so numbers
		// are never reused.
		if c.Number > last {
			if _, err := tx.ExecContext(ctx, `UPDATE tracker_projects SET last_number = ?, version = ? WHERE key = ?`, c.Number, at.Seq, c.Project); err != nil {
				return err
			}
		} else {
			return nil
		}
		// A second copy of a create (landed after the duplicate window and
		// the ledger's reach) has consumed its number above but files
		// nothing: the item id derives from the op, so there is never a
		// second item, and the gap in the numbering is visible.
		_, err = tx.ExecContext(ctx, `INSERT INTO tracker_items(id, key, project, number, title, description, status, assignee, version, created_seq, created_at, updated_at)
			VALUES(?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING`,
			c.ID, fmt.Sprintf("%s-%d", c.Project, c.Number), c.Project, c.Number, c.Title, c.Description, c.Status, c.Assignee, at.Seq, at.Seq, ts, ts)
		return err
	case KindUpdateWorkItem:
		var u updateWorkItem
		if err := json.Unmarshal(rec.Payload, &u); err != nil {
			return nil
		}
		_, err := tx.ExecContext(ctx, `UPDATE tracker_items SET
			title = coalesce(?, title), description = coalesce(?, description),
			status = coalesce(?, status), assignee = coalesce(?, assignee),
			version = ?, updated_at = ? WHERE id = ?`,
			u.Title, u.Description, u.Status, u.Assignee, at.Seq, ts, u.ID)
		return err
	}
	// A kind this build does not know is at a format version it claims to
	// read: apply nothing rather than guess.
	return nil
}
