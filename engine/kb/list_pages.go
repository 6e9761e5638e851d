package kb

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// ListPages lists a space's live pages in creation order, a page at a
// time: the whole space, its top-level pages, or one page's children. The
// order is the creation number, so a page created between two pages of
// the listing comes after every page already listed: shown once, at the
// end, never shifting the rest.
func (s *Service) ListPages(ctx context.Context, r engine.ReadOptions, f PageFilter) (PageList, error) {
	if err := checkPageFilter(&f); err != nil {
		return PageList{}, err
	}
	parent := "*"
	if f.Parent != nil {
		parent = "=" + *f.Parent
	}
	pg, err := openCursor(f.Cursor, fingerprint("list_pages", f.Space, parent))
	if err != nil {
		return PageList{}, err
	}
	after, err := pg.afterInt()
	if err != nil {
		return PageList{}, err
	}
	out := PageList{Pages: []PageSummary{}}
	var lastN int64
	more := false
	info, err := s.replica.Read(ctx, pg.floor(r), func(ctx context.Context, tx *sql.Tx) error {
		if _, err := getSpace(ctx, tx, f.Space); errors.Is(err, sql.ErrNoRows) {
			return notFoundSpace(f.Space)
		} else if err != nil {
			return err
		}
		q := `SELECT p.n, p.id, p.space, p.parent, p.title,
			(SELECT count(*) FROM kb_pages c WHERE c.space = p.space AND c.parent = p.id AND c.id NOT IN (SELECT id FROM kb_trash)),
			p.version, max(p.scoped_through, s.settings_through), p.updated_at
			FROM kb_pages p JOIN kb_spaces s ON s.key = p.space WHERE p.space = ? AND p.n > ? AND p.id NOT IN (SELECT id FROM kb_trash)`
		args := []any{f.Space, after}
		if f.Parent != nil {
			q += ` AND p.parent = ?`
			args = append(args, *f.Parent)
		}
		q += ` ORDER BY p.n LIMIT ?`
		args = append(args, f.Limit+1)
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ps PageSummary
			var n, updated int64
			if err := rows.Scan(&n, &ps.ID, &ps.Space, &ps.Parent, &ps.Title, &ps.Children, &ps.Version, &ps.ScopedThrough, &updated); err != nil {
				return err
			}
			if len(out.Pages) == f.Limit {
				more = true
				break
			}
			ps.UpdatedAt = time.Unix(0, updated).UTC()
			out.Pages = append(out.Pages, ps)
			lastN = n
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if f.Parent != nil && *f.Parent != "" {
			if _, err := s.getPage(ctx, tx, *f.Parent); errors.Is(err, sql.ErrNoRows) {
				return s.pageMissing(ctx, tx, "parent", *f.Parent)
			} else if err != nil {
				return err
			}
		}
		return nil
	})
	out.ReadInfo = info
	if err == nil && more {
		out.NextCursor = pg.next(info, strconv.FormatInt(lastN, 10))
	}
	return out, err
}

// checkPageFilter refuses a malformed filter before anything is read, and
// fills the default page size.
func checkPageFilter(f *PageFilter) error {
	if err := checkSpaceKey("space", f.Space); err != nil {
		return err
	}
	if f.Parent != nil && *f.Parent != "" {
		if err := checkPageID("parent", *f.Parent); err != nil {
			return err
		}
	}
	return checkLimit(&f.Limit, DefaultListLimit, MaxListLimit)
}
