package tracker

import (
	"context"
	"database/sql"
	"strconv"
	"sync/atomic"

	"github.com/crewlet/crewlet/engine/semantic"
	"github.com/crewlet/crewlet/engine/sqlite"
)

// The tracker is a semantic.Corpus (its work items and their comments are
// embedded by the vectors domain's duty) and a semantic.Searcher (its
// searches rank with the vectors once engine/node links an Index).
var (
	_ semantic.Corpus   = (*Service)(nil)
	_ semantic.Searcher = (*Service)(nil)
)

// indexHolder holds the linked index (atomic.Value needs one concrete
// type).
type indexHolder struct{ ix semantic.Index }

// semanticIndex is the linked index, nil where none is.
func (s *Service) semanticIndex() semantic.Index {
	if h, _ := s.sem.Load().(indexHolder); h.ix != nil {
		return h.ix
	}
	return nil
}

// UseIndex links the vectors' index: search_work_items then ranks by
// hybrid retrieval and similar_work_items by vector similarity too.
func (s *Service) UseIndex(ix semantic.Index) { s.sem.Store(indexHolder{ix}) }

// semHolder is the Service's slot for the index.
type semHolder = atomic.Value

// Kinds are work items and comments.
func (s *Service) Kinds() []semantic.Kind {
	return []semantic.Kind{semantic.WorkItem, semantic.Comment}
}

// CommentSource is a comment's source id: cm_<its sequence>.
func CommentSource(seq int64) string { return "cm_" + strconv.FormatInt(seq, 10) }

// Sources reads the items whose own fields moved after since (a title or
// description edit moves the item's version) and the comments added or
// edited after it, every one for since 0, trashed items included (a
// restore brings them back, vector and all).
func (s *Service) Sources(ctx context.Context, since uint64, fn func(semantic.Source) error) (uint64, error) {
	opts, err := s.replica.AtLogEnd(ctx)
	if err != nil {
		return 0, err
	}
	info, err := s.replica.Read(ctx, opts, func(ctx context.Context, tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, title, description FROM tracker_items WHERE version > ?1 OR ?1 = 0`, since)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id, title, desc string
			if err := rows.Scan(&id, &title, &desc); err != nil {
				rows.Close()
				return err
			}
			if err := fn(semantic.Source{ID: id, Kind: semantic.WorkItem, Text: semantic.Text(title, desc)}); err != nil {
				rows.Close()
				return err
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		crows, err := tx.QueryContext(ctx, `SELECT c.item, c.seq, c.body FROM tracker_comments c
			LEFT JOIN tracker_comment_versions v ON v.item = c.item AND v.seq = c.seq WHERE c.seq > ?1 OR v.version > ?1 OR ?1 = 0`, since)
		if err != nil {
			return err
		}
		defer crows.Close()
		for crows.Next() {
			var item, body string
			var seq int64
			if err := crows.Scan(&item, &seq, &body); err != nil {
				return err
			}
			if err := fn(semantic.Source{ID: CommentSource(seq), Kind: semantic.Comment, Owner: item, Text: body}); err != nil {
				return err
			}
		}
		return crows.Err()
	})
	return info.SeenThrough.Seq, err
}

// Live lists every item's id and every comment's source id.
func (s *Service) Live(ctx context.Context, fn func(id string) error) error {
	opts, err := s.replica.AtLogEnd(ctx)
	if err != nil {
		return err
	}
	_, err = s.replica.Read(ctx, opts, func(ctx context.Context, tx *sql.Tx) error {
		ids, err := sqlite.Strings(ctx, tx, `SELECT id FROM tracker_items UNION ALL SELECT 'cm_' || seq FROM tracker_comments`)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := fn(id); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}
