package kbapply

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb/kbrec"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
)

// GateDeleted is the deletion gate's word on statelog_record_gated.
const GateDeleted = "deleted"

// The schema. kb_pages.n is the sequence of the record that created the
// page: unique, the same on every node, and the integer rowid the search
// index is keyed by. The index is an external-content FTS5 table kept in
// step by triggers, so it changes in the same transaction as the rows (and
// the checkpoint) and never disagrees with them. kb_titles_fts indexes the
// titles alone, so finding the title matches of a common word reads the
// titles' postings rather than every body's. kb_purged is the deletion
// gate's marker: one row per purged page, kept for ever.
const schema = `
CREATE TABLE IF NOT EXISTS kb_spaces (
	key              TEXT PRIMARY KEY,
	name             TEXT NOT NULL,
	page_template    TEXT NOT NULL DEFAULT '',
	editing          TEXT NOT NULL DEFAULT 'open',
	version          INTEGER NOT NULL,
	settings_through INTEGER NOT NULL DEFAULT 0,
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kb_pages (
	n              INTEGER PRIMARY KEY,
	id             TEXT NOT NULL UNIQUE,
	space          TEXT NOT NULL,
	parent         TEXT NOT NULL DEFAULT '',
	title          TEXT NOT NULL,
	body           TEXT NOT NULL,
	version        INTEGER NOT NULL,
	scoped_through INTEGER NOT NULL DEFAULT 0,
	created_at     INTEGER NOT NULL,
	updated_at     INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS kb_pages_tree ON kb_pages(space, parent, n);
CREATE TABLE IF NOT EXISTS kb_purged (
	id        TEXT PRIMARY KEY,
	space     TEXT NOT NULL,
	parent    TEXT NOT NULL,
	seq       INTEGER NOT NULL,
	purged_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS kb_pages_fts USING fts5(title, body, content='kb_pages', content_rowid='n', tokenize='porter unicode61');
CREATE VIRTUAL TABLE IF NOT EXISTS kb_titles_fts USING fts5(title, content='kb_pages', content_rowid='n', tokenize='porter unicode61');
CREATE TRIGGER IF NOT EXISTS kb_pages_fts_ai AFTER INSERT ON kb_pages BEGIN
	INSERT INTO kb_pages_fts(rowid, title, body) VALUES (new.n, new.title, new.body);
	INSERT INTO kb_titles_fts(rowid, title) VALUES (new.n, new.title);
END;
CREATE TRIGGER IF NOT EXISTS kb_pages_fts_ad AFTER DELETE ON kb_pages BEGIN
	INSERT INTO kb_pages_fts(kb_pages_fts, rowid, title, body) VALUES ('delete', old.n, old.title, old.body);
	INSERT INTO kb_titles_fts(kb_titles_fts, rowid, title) VALUES ('delete', old.n, old.title);
END;
CREATE TRIGGER IF NOT EXISTS kb_pages_fts_au AFTER UPDATE OF title, body ON kb_pages BEGIN
	INSERT INTO kb_pages_fts(kb_pages_fts, rowid, title, body) VALUES ('delete', old.n, old.title, old.body);
	INSERT INTO kb_pages_fts(rowid, title, body) VALUES (new.n, new.title, new.body);
	INSERT INTO kb_titles_fts(kb_titles_fts, rowid, title) VALUES ('delete', old.n, old.title);
	INSERT INTO kb_titles_fts(rowid, title) VALUES (new.n, new.title);
END;
`

// Domain is the knowledge base as the replication framework drives it.
type Domain struct{}

var _ statelog.GatedDomain = Domain{}

// Name is "pages": the knowledge base's records go on crewlet.pages.….
func (Domain) Name() engine.Domain { return engine.DomainPages }

// Schema is the knowledge base's tables and search index.
func (Domain) Schema() string { return schema + lifeSchema }

// Gates is the deletion gate.
func (Domain) Gates() []statelog.Gate { return []statelog.Gate{deletionGate{}} }

// Kinds are the domain's record kinds with the lowest format version that
// applies each (kbrec.Kinds).
func (Domain) Kinds() map[string]int { return kbrec.Kinds }

// GateKinds are the domain's records that install a gate (kbrec.GateKinds).
func (Domain) GateKinds() []string { return kbrec.GateKinds }

// Apply writes one record's rows. Every rule is decided from the rows
// alone, so every node reaches the same ones: a record that is moot here
// (its space or page gone) writes nothing, a parent that is gone or would
// close a cycle is not taken, and a page is never left under a parent that
// does not exist.
func (Domain) Apply(ctx context.Context, tx *sql.Tx, rec *record.Record, at statelog.Applying) error {
	ts := at.Time.UnixNano()
	switch rec.Kind {
	case kbrec.KindCreateSpace:
		return applyCreateSpace(ctx, tx, rec, at.Seq, ts)
	case kbrec.KindUpdateSpace:
		return applyUpdateSpace(ctx, tx, rec, at.Seq, ts)
	case kbrec.KindCreatePage:
		return applyCreatePage(ctx, tx, rec, at.Seq, ts)
	case kbrec.KindUpdatePage:
		return applyUpdatePage(ctx, tx, rec, at.Seq, ts)
	case kbrec.KindPurgePage:
		return applyPurgePage(ctx, tx, rec, at.Seq, ts)
	}
	if ok, err := applyLife(ctx, tx, rec, at.Seq, ts); ok {
		return err
	}
	// A kind this build does not know, at a format version it claims to
	// read: apply nothing rather than guess.
	return nil
}

// applyCreateSpace files a space; a key already filed keeps its first row.
func applyCreateSpace(ctx context.Context, tx *sql.Tx, rec *record.Record, seq uint64, ts int64) error {
	var p kbrec.CreateSpace
	if json.Unmarshal(rec.Payload, &p) != nil {
		return nil // undecodable payload of a known kind: moot
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO kb_spaces(key, name, version, created_at, updated_at) VALUES(?,?,?,?,?)
			ON CONFLICT(key) DO NOTHING`, p.Key, p.Name, seq, ts, ts)
	return err
}

// applyUpdateSpace changes a space's name and settings; an editing mode
// this build does not know is not taken. settings_through moves only when
// a setting is in the record.
func applyUpdateSpace(ctx context.Context, tx *sql.Tx, rec *record.Record, seq uint64, ts int64) error {
	var p kbrec.UpdateSpace
	if json.Unmarshal(rec.Payload, &p) != nil {
		return nil
	}
	return updateSpaceRows(ctx, tx, p, seq, ts)
}

// updateSpaceRows writes an update_space payload's changes.
func updateSpaceRows(ctx context.Context, tx *sql.Tx, p kbrec.UpdateSpace, seq uint64, ts int64) error {
	if p.Editing != nil && *p.Editing != kbrec.EditingOpen && *p.Editing != kbrec.EditingLocked {
		p.Editing = nil
	}
	settings := p.PageTemplate != nil || p.Editing != nil
	_, err := tx.ExecContext(ctx, `UPDATE kb_spaces SET name = coalesce(?, name), page_template = coalesce(?, page_template),
			editing = coalesce(?, editing), version = ?, settings_through = CASE WHEN ? THEN ? ELSE settings_through END, updated_at = ?
			WHERE key = ?`, p.Name, p.PageTemplate, p.Editing, seq, settings, seq, ts, p.Key)
	return err
}

// applyCreatePage files a page in its space, under its parent while that
// still exists (liveParent); a space that is gone makes it moot.
func applyCreatePage(ctx context.Context, tx *sql.Tx, rec *record.Record, seq uint64, ts int64) error {
	var p kbrec.CreatePage
	if json.Unmarshal(rec.Payload, &p) != nil || rec.Subject != kbrec.PageSubject(p.ID) {
		// A page record names its page by its subject, which is what the
		// deletion gate holds; one naming another page is moot.
		return nil
	}
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM kb_spaces WHERE key = ?`, p.Space).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	parent, err := liveParent(ctx, tx, p.Space, p.Parent)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO kb_pages(n, id, space, parent, title, body, version, created_at, updated_at)
			VALUES(?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING`, seq, p.ID, p.Space, parent, p.Title, p.Body, seq, ts, ts)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	// Under a parent that went into the trash before it applied, the page
	// goes into the trash with it (restoring the parent brings it back).
	if _, err := tx.ExecContext(ctx, `INSERT INTO kb_trash(id, seq) SELECT ?, seq FROM kb_trash WHERE id = ? ON CONFLICT DO NOTHING`, p.ID, parent); err != nil {
		return err
	}
	return recordVersion(ctx, tx, rec, p.ID, seq, ts)
}

// applyUpdatePage changes a page's title and body, and its parent where
// the move is still possible here (CanMove): a move that is not keeps the
// page where it is.
func applyUpdatePage(ctx context.Context, tx *sql.Tx, rec *record.Record, seq uint64, ts int64) error {
	var p kbrec.UpdatePage
	if json.Unmarshal(rec.Payload, &p) != nil || rec.Subject != kbrec.PageSubject(p.ID) {
		return nil
	}
	var space, parent string
	err := tx.QueryRowContext(ctx, `SELECT space, parent FROM kb_pages WHERE id = ?`, p.ID).Scan(&space, &parent)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if p.Parent != nil && *p.Parent != parent {
		ok, err := CanMove(ctx, tx, space, p.ID, *p.Parent)
		if err != nil {
			return err
		}
		if ok {
			parent = *p.Parent
		}
	}
	_, err = tx.ExecContext(ctx, `UPDATE kb_pages SET title = coalesce(?, title), body = coalesce(?, body), parent = ?,
			version = ?, updated_at = ? WHERE id = ?`, p.Title, p.Body, parent, seq, ts, p.ID)
	if err != nil {
		return err
	}
	return recordVersion(ctx, tx, rec, p.ID, seq, ts)
}

// applyPurgePage writes the purge marker, re-files the page's children
// where it stood and deletes its row.
func applyPurgePage(ctx context.Context, tx *sql.Tx, rec *record.Record, seq uint64, ts int64) error {
	var p kbrec.PurgePage
	if json.Unmarshal(rec.Payload, &p) != nil || rec.Subject != kbrec.PageSubject(p.ID) {
		return nil
	}
	var space, parent string
	err := tx.QueryRowContext(ctx, `SELECT space, parent FROM kb_pages WHERE id = ?`, p.ID).Scan(&space, &parent)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	// The marker is written whether or not the page is here: it is
	// what holds every later record about the page, on every node.
	if _, err := tx.ExecContext(ctx, `INSERT INTO kb_purged(id, space, parent, seq, purged_at) VALUES(?,?,?,?,?) ON CONFLICT DO NOTHING`,
		p.ID, space, parent, seq, ts); err != nil {
		return err
	}
	if space == "" {
		return nil
	}
	// The children are re-filed where the page stood, never orphaned.
	// They are not what the record is about, so their version stays and
	// scoped_through carries the purge.
	if _, err := tx.ExecContext(ctx, `UPDATE kb_pages SET parent = ?, scoped_through = ? WHERE space = ? AND parent = ?`,
		parent, seq, space, p.ID); err != nil {
		return err
	}
	if _, err = tx.ExecContext(ctx, `DELETE FROM kb_pages WHERE id = ?`, p.ID); err != nil {
		return err
	}
	return forgetPage(ctx, tx, p.ID)
}

// liveParent is the parent a new page is filed under: the one it names
// while that page exists in the same space, else the top of the space (the
// parent was purged between the decision and the apply).
func liveParent(ctx context.Context, tx *sql.Tx, space, parent string) (string, error) {
	if parent == "" {
		return "", nil
	}
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM kb_pages WHERE id = ? AND space = ?`, parent, space).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return parent, err
}

// CanMove reports whether page may sit under parent: the top of the space
// always, otherwise a page of the same space, not in the trash, that is
// neither page itself nor below it (which would cut the subtree off in a
// cycle).
func CanMove(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, space, page, parent string) (bool, error) {
	if parent == "" {
		return true, nil
	}
	if parent == page {
		return false, nil
	}
	var inSpace, cycle int
	err := q.QueryRowContext(ctx, `WITH RECURSIVE up(id, depth) AS (
			SELECT ?, 0
			UNION ALL
			SELECT p.parent, up.depth + 1 FROM kb_pages p JOIN up ON p.id = up.id WHERE p.parent != '' AND up.depth < 100000
		)
		SELECT (SELECT count(*) FROM kb_pages WHERE id = ? AND space = ? AND id NOT IN (SELECT id FROM kb_trash)), (SELECT count(*) FROM up WHERE id = ?)`,
		parent, parent, space, page).Scan(&inSpace, &cycle)
	if err != nil {
		return false, err
	}
	return inSpace == 1 && cycle == 0, nil
}

// deletionGate drops every record about a purged page that comes after
// its purge: a record on the page's subject, or one whose declared scope
// names the page, whoever wrote it and however late it arrives.
type deletionGate struct{}

func (deletionGate) Name() string { return GateDeleted }

func (deletionGate) Holds(ctx context.Context, tx statelog.Reader, rec *record.Record, seq uint64) (bool, error) {
	ids := make([]string, 0, 2)
	if id, ok := kbrec.PageOfSubject(rec.Subject); ok {
		ids = append(ids, id)
	}
	for _, s := range rec.Scope {
		if id, ok := kbrec.ScopedPage(s); ok {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		var at uint64
		err := tx.QueryRowContext(ctx, `SELECT seq FROM kb_purged WHERE id = ?`, id).Scan(&at)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return false, err
		}
		if seq > at {
			return true, nil
		}
	}
	return false, nil
}

// Audited are the knowledge base's records the audit trail lists: a purge.
func (Domain) Audited() []string { return []string{kbrec.KindPurgePage} }
