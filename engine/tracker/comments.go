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

// CommentInput is comment_on_work_item: a new comment on Key, or, with
// CommentID, an edit of that comment (Body) or its deletion (Delete). The
// Author is who writes: only a comment's author edits or deletes it.
type CommentInput struct {
	Key       string
	Author    string
	Body      string
	CommentID uint64
	Delete    bool
}

// CommentWrite answers comment_on_work_item: the comment as it now stands
// (absent once deleted). A comment never moves its item's version.
type CommentWrite struct {
	engine.WriteResult
	Comment *Comment `json:"comment,omitempty"`
}

// Comment adds, edits or deletes a comment; each is one record about the
// item that leaves the item's version alone (see apply.comment).
func (s *Service) Comment(ctx context.Context, w engine.WriteOptions, in CommentInput) (CommentWrite, error) {
	if err := checkItemKey(in.Key); err != nil {
		return CommentWrite{}, err
	}
	if in.Author == "" {
		in.Author = "operator"
	}
	if err := checkText("author", in.Author, MaxAssigneeBytes, true); err != nil {
		return CommentWrite{}, err
	}
	if in.Delete && in.CommentID == 0 {
		return CommentWrite{}, invalid("delete needs comment_id: the id of the comment to delete (get_work_item lists them).")
	}
	if !in.Delete {
		if err := checkText("body", in.Body, MaxCommentBytes, true); err != nil {
			return CommentWrite{}, err
		}
	}
	verb := "comment"
	if in.CommentID != 0 {
		verb = "edit_comment"
	}
	op, err := s.opFor(ctx, w, verb, in.Key)
	if err != nil {
		return CommentWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	var id string
	wr, err := s.replica.Write(ctx, op, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		var err error
		if id, err = s.resolve(ctx, tx, in.Key); err != nil {
			return nil, err
		}
		scope, err := itemScope(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		p := &statelog.Proposal{Kind: trackrec.KindComment, Subject: trackrec.ItemSubject(id), Scope: scope,
			Payload: trackrec.Comment{ID: id, Author: in.Author, Body: in.Body}}
		if in.CommentID != 0 {
			if err := s.checkCommentAuthor(ctx, tx, in, id); err != nil {
				return nil, err
			}
			p.Kind, p.Payload = trackrec.KindEditComment, trackrec.EditComment{ID: id, Comment: in.CommentID, Author: in.Author, Body: in.Body, Delete: in.Delete}
		}
		return p, nil
	})
	out := CommentWrite{WriteResult: wr.WriteResult}
	if err != nil || wr.Outcome != engine.Applied || in.Delete {
		return out, err
	}
	cid := in.CommentID
	if cid == 0 {
		cid = wr.Seq
	}
	_, err = s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
		cs, err := s.readComments(ctx, tx, 1, `c.seq = ?`, cid)
		if len(cs) == 1 {
			out.Comment = &cs[0]
		}
		return err
	})
	return out, err
}

// checkCommentAuthor refuses an edit of a comment that is not there or
// is someone else's.
func (s *Service) checkCommentAuthor(ctx context.Context, tx *sql.Tx, in CommentInput, id string) error {
	var author string
	err := s.replica.Prepared(tx).QueryRowContext(ctx, `SELECT author FROM tracker_comments WHERE item = ? AND seq = ?`, id, in.CommentID).Scan(&author)
	if errors.Is(err, sql.ErrNoRows) {
		return engine.Refuse(engine.CodeNotFound, "comment %d on %s does not exist; get_work_item lists its comments with their ids.", in.CommentID, in.Key)
	}
	if err != nil {
		return err
	}
	if author != in.Author {
		return invalid("comment %d on %s is by %s, not %s: only its author can edit or delete it; add a comment of your own instead.", in.CommentID, in.Key, author, in.Author)
	}
	return nil
}

// readComments reads an item's comments where cond holds (over
// tracker_comments c), newest limit of them, oldest first.
func (s *Service) readComments(ctx context.Context, tx *sql.Tx, limit int, cond string, args ...any) ([]Comment, error) {
	rows, err := s.replica.Prepared(tx).QueryContext(ctx, `SELECT id, version, author, body, at FROM (
		SELECT c.seq AS id, coalesce(v.version, c.seq) AS version, c.author AS author, c.body AS body, c.at AS at
		FROM tracker_comments c LEFT JOIN tracker_comment_versions v ON v.item = c.item AND v.seq = c.seq
		WHERE `+cond+` ORDER BY c.seq DESC LIMIT ?) ORDER BY id`, append(args, limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Comment{}
	for rows.Next() {
		var c Comment
		var at int64
		if err := rows.Scan(&c.ID, &c.Version, &c.Author, &c.Body, &at); err != nil {
			return nil, err
		}
		c.At = time.Unix(0, at).UTC()
		out = append(out, c)
	}
	return out, rows.Err()
}
