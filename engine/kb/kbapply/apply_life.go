package kbapply

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/crewlet/crewlet/engine/kb/kbrec"
	"github.com/crewlet/crewlet/engine/record"
)

// The lifecycle's tables, in tables of their own (never new columns of
// the old ones: the schema is created if missing, never altered, so a
// node's existing file takes them as they are). kb_archived holds an
// archived space; kb_trash a page in the trash, with the sequence of the
// trash record that put it there (restoring a page takes out what that
// record put in, and nothing trashed apart from it); kb_versions every
// record of a page's own, with the page as it stood after it; kb_comments
// the comments.
const lifeSchema = `
CREATE TABLE IF NOT EXISTS kb_archived (
	key TEXT PRIMARY KEY,
	seq INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kb_trash (
	id  TEXT PRIMARY KEY,
	seq INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kb_versions (
	id      TEXT NOT NULL,
	seq     INTEGER NOT NULL,
	kind    TEXT NOT NULL,
	actor   TEXT NOT NULL,
	at      INTEGER NOT NULL,
	space   TEXT NOT NULL,
	parent  TEXT NOT NULL,
	title   TEXT NOT NULL,
	body    TEXT NOT NULL,
	trashed INTEGER NOT NULL,
	UNIQUE(id, seq)
);
CREATE TABLE IF NOT EXISTS kb_comments (
	id         TEXT NOT NULL UNIQUE,
	page       TEXT NOT NULL,
	author     TEXT NOT NULL,
	body       TEXT NOT NULL,
	seq        INTEGER NOT NULL,
	version    INTEGER NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS kb_comments_page ON kb_comments(page, seq);
`

// applyLife applies the lifecycle kinds; ok is false for any other kind.
func applyLife(ctx context.Context, tx *sql.Tx, rec *record.Record, seq uint64, ts int64) (bool, error) {
	switch rec.Kind {
	case kbrec.KindArchiveSpace:
		return true, applyArchiveSpace(ctx, tx, rec, seq, ts)
	case kbrec.KindMovePage:
		return true, applyMovePage(ctx, tx, rec, seq, ts)
	case kbrec.KindTrashPage:
		return true, applyTrashPage(ctx, tx, rec, seq, ts)
	case kbrec.KindComment:
		return true, applyComment(ctx, tx, rec, seq, ts)
	}
	return false, nil
}

// applyArchiveSpace applies the settings the record carries, then
// archives the space or brings it back.
func applyArchiveSpace(ctx context.Context, tx *sql.Tx, rec *record.Record, seq uint64, ts int64) error {
	var p kbrec.ArchiveSpace
	if json.Unmarshal(rec.Payload, &p) != nil {
		return nil
	}
	if err := updateSpaceRows(ctx, tx, p.UpdateSpace, seq, ts); err != nil {
		return err
	}
	var err error
	if p.Archived {
		_, err = tx.ExecContext(ctx, `INSERT INTO kb_archived(key, seq) SELECT key, ? FROM kb_spaces WHERE key = ? ON CONFLICT DO NOTHING`, seq, p.Key)
	} else {
		_, err = tx.ExecContext(ctx, `DELETE FROM kb_archived WHERE key = ?`, p.Key)
	}
	return err
}

// subtreeSQL is a page and every page below it, as ids.
const subtreeSQL = `WITH RECURSIVE down(id) AS (
	SELECT ?1 UNION SELECT c.id FROM kb_pages c JOIN down ON c.parent = down.id
)`

// applyMovePage moves a page with its subtree to another space: under the
// parent it names there while that is a live page of that space outside
// the subtree, else at the top of the space. The pages below keep their
// parents and versions; scoped_through carries the move. A space that
// does not exist makes the record moot.
func applyMovePage(ctx context.Context, tx *sql.Tx, rec *record.Record, seq uint64, ts int64) error {
	var p kbrec.MovePage
	if json.Unmarshal(rec.Payload, &p) != nil || rec.Subject != kbrec.PageSubject(p.ID) {
		return nil
	}
	var one int
	if err := tx.QueryRowContext(ctx, `SELECT 1 FROM kb_spaces WHERE key = ?`, p.Space).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return err
	}
	if err := tx.QueryRowContext(ctx, `SELECT 1 FROM kb_pages WHERE id = ?`, p.ID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return err
	}
	parent := ""
	if p.Parent != nil && *p.Parent != "" {
		ok, err := CanMove(ctx, tx, p.Space, p.ID, *p.Parent)
		if err != nil {
			return err
		}
		if ok {
			parent = *p.Parent
		}
	}
	if _, err := tx.ExecContext(ctx, subtreeSQL+` UPDATE kb_pages SET space = ?2, scoped_through = ?3 WHERE id IN (SELECT id FROM down) AND id != ?1`,
		p.ID, p.Space, seq); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE kb_pages SET space = ?, parent = ?, title = coalesce(?, title), body = coalesce(?, body),
			version = ?, updated_at = ? WHERE id = ?`, p.Space, parent, p.Title, p.Body, seq, ts, p.ID); err != nil {
		return err
	}
	return recordVersion(ctx, tx, rec, p.ID, seq, ts)
}

// applyTrashPage puts a page and the part of its subtree not already in
// the trash into it, or takes out of it what the page's own trash record
// put in. A restore is not taken while the page's parent is in the trash
// (the page would be live under a trashed page).
func applyTrashPage(ctx context.Context, tx *sql.Tx, rec *record.Record, seq uint64, ts int64) error {
	var p kbrec.TrashPage
	if json.Unmarshal(rec.Payload, &p) != nil || rec.Subject != kbrec.PageSubject(p.ID) {
		return nil
	}
	var parent string
	var trashedAt sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT p.parent, t.seq FROM kb_pages p LEFT JOIN kb_trash t ON t.id = p.id WHERE p.id = ?`, p.ID).Scan(&parent, &trashedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case p.Trashed && !trashedAt.Valid:
		if _, err := tx.ExecContext(ctx, subtreeSQL+` INSERT INTO kb_trash(id, seq) SELECT id, ?2 FROM down WHERE true ON CONFLICT DO NOTHING`, p.ID, seq); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE kb_pages SET scoped_through = ? WHERE id IN (SELECT id FROM kb_trash WHERE seq = ?) AND id != ?`, seq, seq, p.ID); err != nil {
			return err
		}
	case !p.Trashed && trashedAt.Valid:
		var inTrash int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM kb_trash WHERE id = ?`, parent).Scan(&inTrash); err != nil || inTrash > 0 {
			return err
		}
		if _, err := tx.ExecContext(ctx, subtreeSQL+` UPDATE kb_pages SET scoped_through = ?2 WHERE id != ?1 AND id IN (SELECT id FROM kb_trash WHERE seq = ?3 AND id IN (SELECT id FROM down))`,
			p.ID, seq, trashedAt.Int64); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, subtreeSQL+` DELETE FROM kb_trash WHERE seq = ?2 AND id IN (SELECT id FROM down)`, p.ID, trashedAt.Int64); err != nil {
			return err
		}
	default:
		return nil // already where the record puts it
	}
	if _, err := tx.ExecContext(ctx, `UPDATE kb_pages SET version = ?, updated_at = ? WHERE id = ?`, seq, ts, p.ID); err != nil {
		return err
	}
	return recordVersion(ctx, tx, rec, p.ID, seq, ts)
}

// applyComment files, edits or deletes a comment. An edit or a delete is
// taken only from the comment's author (the decision checked it; the
// apply checks it again from the rows, so a record decided elsewhere
// cannot change another author's words). A comment on a page that is gone
// is moot.
func applyComment(ctx context.Context, tx *sql.Tx, rec *record.Record, seq uint64, ts int64) error {
	var p kbrec.Comment
	if json.Unmarshal(rec.Payload, &p) != nil || rec.Subject != kbrec.CommentSubject(p.ID) {
		return nil
	}
	var author string
	err := tx.QueryRowContext(ctx, `SELECT author FROM kb_comments WHERE id = ?`, p.ID).Scan(&author)
	if errors.Is(err, sql.ErrNoRows) {
		if p.Delete {
			return nil
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO kb_comments(id, page, author, body, seq, version, created_at, updated_at)
			SELECT ?, id, ?, ?, ?, ?, ?, ? FROM kb_pages WHERE id = ?`, p.ID, p.Author, p.Body, seq, seq, ts, ts, p.Page)
		return err
	}
	if err != nil || author != p.Author {
		return err
	}
	if p.Delete {
		_, err = tx.ExecContext(ctx, `DELETE FROM kb_comments WHERE id = ?`, p.ID)
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE kb_comments SET body = ?, version = ?, updated_at = ? WHERE id = ?`, p.Body, seq, ts, p.ID)
	return err
}

// recordVersion keeps the page as it stands after a record of its own:
// that record is a version of it.
func recordVersion(ctx context.Context, tx *sql.Tx, rec *record.Record, id string, seq uint64, ts int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO kb_versions(id, seq, kind, actor, at, space, parent, title, body, trashed)
		SELECT p.id, ?, ?, ?, ?, p.space, p.parent, p.title, p.body, EXISTS(SELECT 1 FROM kb_trash t WHERE t.id = p.id)
		FROM kb_pages p WHERE p.id = ? ON CONFLICT DO NOTHING`, seq, rec.Kind, rec.By, ts, id)
	return err
}

// forgetPage removes what the lifecycle tables hold of a purged page.
func forgetPage(ctx context.Context, tx *sql.Tx, id string) error {
	for _, q := range []string{`DELETE FROM kb_versions WHERE id = ?`, `DELETE FROM kb_comments WHERE page = ?`, `DELETE FROM kb_trash WHERE id = ?`} {
		if _, err := tx.ExecContext(ctx, q, id); err != nil {
			return err
		}
	}
	return nil
}
