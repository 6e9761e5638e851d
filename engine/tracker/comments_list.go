package tracker

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// CommentPage answers list_comments: a page of an item's comments, newest
// first; NextCursor continues with older ones. get_work_item shows only
// the newest MaxReadComments; this reaches every one.
type CommentPage struct {
	engine.ReadInfo
	Key        string    `json:"key"`
	Comments   []Comment `json:"comments"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// ListComments reads a page of an item's comments, newest first. The
// cursor names the oldest comment a page returned (its id, the sequence
// that filed it): comments are filed only at newer sequences, so a later
// comment neither shifts nor repeats a page, and an edit changes a
// comment's body and version, never its place.
func (s *Service) ListComments(ctx context.Context, r engine.ReadOptions, key, cursor string, limit int) (CommentPage, error) {
	if err := checkItemKey(key); err != nil {
		return CommentPage{}, err
	}
	if limit == 0 {
		limit = DefaultListLimit
	}
	if limit < 0 || limit > MaxListLimit {
		return CommentPage{}, invalid("limit %d is out of range; give 1 to %d.", limit, MaxListLimit)
	}
	before, err := commentCursor(cursor)
	if err != nil {
		return CommentPage{}, err
	}
	out := CommentPage{Key: key, Comments: []Comment{}}
	info, err := s.replica.ReadObject(ctx, linearizable(r), func(ctx context.Context, tx *sql.Tx) ([]string, error) {
		id, err := s.resolve(ctx, tx, key)
		if err != nil {
			return []string{trackrec.ProjectScope(key[:strings.LastIndexByte(key, '-')])}, err
		}
		// readComments answers oldest first; a page here is newest first.
		cs, err := s.readComments(ctx, tx, limit+1, `c.item = ? AND c.seq < ?`, id, before)
		for i := len(cs) - 1; i >= 0; i-- {
			out.Comments = append(out.Comments, cs[i])
		}
		if err != nil {
			return []string{trackrec.ItemScope(id)}, err
		}
		return itemScope(ctx, tx, id)
	})
	if len(out.Comments) > limit {
		out.Comments = out.Comments[:limit]
		out.NextCursor = base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "c%d", out.Comments[limit-1].ID))
	}
	out.ReadInfo = info
	return out, err
}

// commentCursor decodes a comments cursor; none starts at the newest.
func commentCursor(cursor string) (uint64, error) {
	if cursor == "" {
		return 1<<63 - 1, nil
	}
	raw, derr := base64.RawURLEncoding.DecodeString(cursor)
	var seq uint64
	if _, serr := fmt.Sscanf(string(raw), "c%d", &seq); derr != nil || serr != nil {
		return 0, invalid("cursor %q is not one a previous page of list_comments returned; start again without it.", cursor)
	}
	return seq, nil
}
