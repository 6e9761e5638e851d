package kb

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb/kbrec"
	"github.com/crewlet/crewlet/engine/statelog"
)

var commentIDRE = regexp.MustCompile(`^cm_[0-9a-f]{32}$`)

// CommentEdit is the input of comment_on_page: a new comment (no ID), an
// edit of one (ID and Body) or its deletion (ID and Delete).
type CommentEdit struct {
	Page   string
	ID     string
	Body   string
	Delete bool
}

// CommentOnPage adds a comment to a page, or edits or deletes one. The
// author is who asks (engine.ActorOf: the seat, or the operator's actor);
// only the author edits or deletes a comment. A comment is its own
// object, on its own subject: it does not move the page's version. Its id
// derives from the operation, so a retried comment answers the first.
func (s *Service) CommentOnPage(ctx context.Context, w engine.WriteOptions, in CommentEdit) (CommentWrite, error) {
	if err := checkCommentEdit(in); err != nil {
		return CommentWrite{}, err
	}
	author := engine.ActorOf(ctx)
	if author == "" {
		author = "operator"
	}
	op, err := s.opFor(w, "comment_on_page", in.Page)
	if err != nil {
		return CommentWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	id := in.ID
	if id == "" {
		id = "cm_" + strings.ReplaceAll(op.ID.UUID.String(), "-", "")
	}
	wr, err := s.replica.Write(ctx, op, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		pg, err := s.getPage(ctx, tx, in.Page)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, s.pageMissing(ctx, tx, "page", in.Page)
		}
		if err != nil {
			return nil, err
		}
		if pg.Trashed {
			return nil, trashedPage("page", in.Page)
		}
		if in.ID != "" {
			var by string
			err := tx.QueryRowContext(ctx, `SELECT author FROM kb_comments WHERE id = ? AND page = ?`, in.ID, in.Page).Scan(&by)
			if errors.Is(err, sql.ErrNoRows) {
				return nil, engine.Refuse(engine.CodeNotFound, "comment %s is not on page %s (deleted, or never written); get_page lists the page's comments.", in.ID, in.Page)
			}
			if err != nil {
				return nil, err
			}
			if by != author {
				return nil, invalid("comment %s is by %s, and only its author edits or deletes it; add a comment of your own instead.", in.ID, by)
			}
		}
		return &statelog.Proposal{Kind: kbrec.KindComment, Subject: kbrec.CommentSubject(id), Scope: []string{kbrec.SpaceScope(pg.Space), kbrec.PageScope(in.Page)},
			Payload: kbrec.Comment{ID: id, Page: in.Page, Author: author, Body: in.Body, Delete: in.Delete}}, nil
	})
	out := CommentWrite{WriteResult: wr.WriteResult}
	if err != nil || wr.Outcome != engine.Applied {
		return out, err
	}
	_, rerr := s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
		var c Comment
		var created, updated int64
		err := tx.QueryRowContext(ctx, `SELECT id, author, body, version, created_at, updated_at FROM kb_comments WHERE id = ?`, id).
			Scan(&c.ID, &c.Author, &c.Body, &c.Version, &created, &updated)
		if err == nil {
			c.CreatedAt, c.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
			out.Comment = &c
		}
		return err
	})
	if rerr != nil && !errors.Is(rerr, sql.ErrNoRows) {
		return out, rerr
	}
	return out, nil
}

func checkCommentEdit(in CommentEdit) error {
	if err := checkPageID("id", in.Page); err != nil {
		return err
	}
	if in.ID == "" && in.Delete {
		return invalid("delete needs comment_id: the id of the comment to delete (get_page lists them).")
	}
	if in.ID != "" && !commentIDRE.MatchString(in.ID) {
		return invalid("comment_id %q is not a comment id like cm_0193…; get_page lists the page's comments with their ids.", in.ID)
	}
	if in.Delete {
		if in.Body != "" {
			return invalid("a delete takes no body; pass comment_id and delete=true alone.")
		}
		return nil
	}
	return checkText("body", in.Body, MaxCommentBytes, true)
}
