package trackapply

// The apply of the lifecycle records: comments (which never move their
// item's version), comment edits, project updates, and who wrote a record
// that changed an item's history.

import (
	"database/sql"
	"errors"
	"strconv"

	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// comment adds a comment. The item's version is left alone: it covers the
// item's own fields, status, tags, watchers, edges and parent, so a
// concurrent if_match update is not refused stale because someone
// commented. The comment's history row and updated_at move; its id and
// first version are the record's sequence.
func (a *apply) comment(c *trackrec.Comment) error {
	it, err := a.item(c.ID)
	if err != nil || it == nil {
		return err
	}
	if _, err := a.at.Exec(a.ctx, a.tx, `INSERT INTO tracker_comments(item, seq, author, body, at) VALUES(?,?,?,?,?) ON CONFLICT DO NOTHING`,
		it.ID, a.seq, c.Author, c.Body, a.ts); err != nil {
		return err
	}
	return a.commentChanged(it, "comment", "", c.Author)
}

// commentChanged writes what a comment's change moves on its item without
// touching the item's row version: a history row, updated_at and the
// search posting.
func (a *apply) commentChanged(it *itemRow, field, old, new string) error {
	a.hist.add(it.ID, a.seq, it.n, field, old, new, it.Handoffs, a.ts, it.Doc)
	it.n++
	if _, err := a.at.Exec(a.ctx, a.tx, `UPDATE tracker_items SET updated_at = ? WHERE id = ?`, a.ts, it.ID); err != nil {
		return err
	}
	a.at.Wrote(1)
	return a.reindex(it, true)
}

// editComment changes a comment where its author is the record's: a
// comment gone, or by someone else, is moot.
func (a *apply) editComment(e *trackrec.EditComment) error {
	it, err := a.item(e.ID)
	if err != nil || it == nil {
		return err
	}
	var author string
	err = a.at.QueryRow(a.ctx, a.tx, `SELECT author FROM tracker_comments WHERE item = ? AND seq = ?`, it.ID, e.Comment).Scan(&author)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && author != e.Author) {
		return nil
	}
	if err != nil {
		return err
	}
	id := strconv.FormatUint(e.Comment, 10)
	if e.Delete {
		for _, q := range []string{`DELETE FROM tracker_comments WHERE item = ? AND seq = ?`, `DELETE FROM tracker_comment_versions WHERE item = ? AND seq = ?`} {
			if _, err := a.at.Exec(a.ctx, a.tx, q, it.ID, e.Comment); err != nil {
				return err
			}
		}
		return a.commentChanged(it, "comment_deleted", id, e.Author)
	}
	if _, err := a.at.Exec(a.ctx, a.tx, `UPDATE tracker_comments SET body = ? WHERE item = ? AND seq = ?`, e.Body, it.ID, e.Comment); err != nil {
		return err
	}
	if _, err := a.at.Exec(a.ctx, a.tx, `INSERT INTO tracker_comment_versions(item, seq, version) VALUES(?,?,?)
		ON CONFLICT(item, seq) DO UPDATE SET version = excluded.version`, it.ID, e.Comment, a.seq); err != nil {
		return err
	}
	a.at.Wrote(2)
	return a.commentChanged(it, "comment_edited", id, e.Author)
}

// updateProject renames or archives a project: the record is about it,
// so its version moves.
func (a *apply) updateProject(u *trackrec.UpdateProject) error {
	var name string
	err := a.at.QueryRow(a.ctx, a.tx, `SELECT name FROM tracker_projects WHERE key = ?`, u.Key).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if u.Name != nil {
		name = *u.Name
	}
	if _, err := a.at.Exec(a.ctx, a.tx, `UPDATE tracker_projects SET name = ?, version = ? WHERE key = ?`, name, a.seq, u.Key); err != nil {
		return err
	}
	if u.Archived != nil {
		if _, err := a.at.Exec(a.ctx, a.tx, `INSERT INTO tracker_project_state(key, archived) VALUES(?, ?)
			ON CONFLICT(key) DO UPDATE SET archived = excluded.archived`, u.Key, *u.Archived); err != nil {
			return err
		}
	}
	a.at.Wrote(2)
	return nil
}

// recordBy notes who wrote a record that wrote history rows, so an item's
// history says who changed what. A record that names nobody (an older
// build's, or a write outside any surface) notes nothing.
func (a *apply) recordBy(by string) error {
	if by == "" {
		return nil
	}
	if a.creating {
		a.held.by.add(a.seq, by)
		a.at.Wrote(1)
		return nil
	}
	if _, err := a.at.Exec(a.ctx, a.tx, `INSERT INTO tracker_record_by(seq, by) VALUES(?, ?) ON CONFLICT DO NOTHING`, a.seq, by); err != nil {
		return err
	}
	a.at.Wrote(1)
	return nil
}
