package kb

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// ListSpaces lists every space in key order, archived ones included, with
// its settings and how many live pages it holds (completions, resources).
func (s *Service) ListSpaces(ctx context.Context, r engine.ReadOptions) (SpaceList, error) {
	return s.listSpaces(ctx, r, SpaceFilter{IncludeArchived: true}, -1)
}

// ListSpacesPage is list_spaces: the spaces in key order, a page at a
// time, archived ones only when asked.
func (s *Service) ListSpacesPage(ctx context.Context, r engine.ReadOptions, f SpaceFilter) (SpaceList, error) {
	if err := checkLimit(&f.Limit, DefaultListLimit, MaxListLimit); err != nil {
		return SpaceList{}, err
	}
	return s.listSpaces(ctx, r, f, f.Limit)
}

func (s *Service) listSpaces(ctx context.Context, r engine.ReadOptions, f SpaceFilter, limit int) (SpaceList, error) {
	pg, err := openCursor(f.Cursor, fingerprint("list_spaces", strconv.FormatBool(f.IncludeArchived)))
	if err != nil {
		return SpaceList{}, err
	}
	out := SpaceList{Spaces: []Space{}}
	more := false
	info, err := s.replica.Read(ctx, pg.floor(r), func(ctx context.Context, tx *sql.Tx) error {
		q := `SELECT ` + spaceColumns + ` FROM kb_spaces WHERE key > ?`
		if !f.IncludeArchived {
			q += ` AND key NOT IN (SELECT key FROM kb_archived)`
		}
		lim := limit + 1
		if limit < 0 {
			lim = -1 // SQLite: no limit
		}
		rows, err := tx.QueryContext(ctx, q+` ORDER BY key LIMIT ?`, pg.after, lim)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			sp, err := scanSpace(rows)
			if err != nil {
				return err
			}
			if limit >= 0 && len(out.Spaces) == limit {
				more = true
				break
			}
			out.Spaces = append(out.Spaces, sp)
		}
		return rows.Err()
	})
	out.ReadInfo = info
	if err == nil && more {
		out.NextCursor = pg.next(info, out.Spaces[len(out.Spaces)-1].Key)
	}
	return out, err
}

// GetSpace reads one space: its settings, whether it is archived and how
// many live pages it holds.
func (s *Service) GetSpace(ctx context.Context, r engine.ReadOptions, key string) (SpaceRead, error) {
	if err := checkSpaceKey("key", key); err != nil {
		return SpaceRead{}, err
	}
	var out SpaceRead
	info, err := s.replica.Read(ctx, linearizable(r), func(ctx context.Context, tx *sql.Tx) error {
		sp, err := getSpace(ctx, tx, key)
		if errors.Is(err, sql.ErrNoRows) {
			return notFoundSpace(key)
		}
		out.Space = sp
		return err
	})
	out.ReadInfo = info
	return out, err
}

// GetPage reads one page by id, body and comments included.
func (s *Service) GetPage(ctx context.Context, r engine.ReadOptions, id string) (PageRead, error) {
	return s.FindPage(ctx, r, PageQuery{ID: id})
}

// FindPage is get_page: a page by id, or by its title within a space
// (a title two live pages of the space share is refused naming them),
// as it stands or at one of its versions.
func (s *Service) FindPage(ctx context.Context, r engine.ReadOptions, q PageQuery) (PageRead, error) {
	if err := checkPageQuery(q); err != nil {
		return PageRead{}, err
	}
	out := PageRead{Comments: []Comment{}}
	info, err := s.replica.Read(ctx, linearizable(r), func(ctx context.Context, tx *sql.Tx) error {
		id := q.ID
		if id == "" {
			var err error
			if id, err = s.pageByTitle(ctx, tx, q.Space, q.Title); err != nil {
				return err
			}
		}
		pg, err := s.getPage(ctx, tx, id)
		if errors.Is(err, sql.ErrNoRows) {
			return s.pageMissing(ctx, tx, "page", id)
		}
		if err != nil {
			return err
		}
		if q.Version != 0 {
			if pg, err = s.pageVersion(ctx, tx, pg, q.Version); err != nil {
				return err
			}
		}
		out.Page = pg
		out.Comments, err = s.comments(ctx, tx, id)
		return err
	})
	out.ReadInfo = info
	return out, err
}

func checkPageQuery(q PageQuery) error {
	switch {
	case q.ID != "" && (q.Title != "" || q.Space != ""):
		return invalid("give either id, or title with space, not both.")
	case q.ID != "":
		return checkPageID("id", q.ID)
	case q.Title == "" || q.Space == "":
		return invalid("name the page: give id, or title with space.")
	}
	if err := checkSpaceKey("space", q.Space); err != nil {
		return err
	}
	return checkText("title", q.Title, MaxTitleBytes, true)
}

// pageByTitle finds the live page of a space with exactly this title.
func (s *Service) pageByTitle(ctx context.Context, tx *sql.Tx, space, title string) (string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id FROM kb_pages WHERE space = ? AND title = ? AND id NOT IN (SELECT id FROM kb_trash) ORDER BY n LIMIT 5`, space, title)
	if err != nil {
		return "", err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return "", err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", err
	}
	switch len(ids) {
	case 0:
		return "", engine.Refuse(engine.CodeNotFound, "no page of space %s is titled %q; search_knowledge finds pages by words, list_pages lists the space.", space, title)
	case 1:
		return ids[0], nil
	}
	return "", invalid("several pages of space %s are titled %q (%s); get_page by id names one.", space, title, strings.Join(ids, ", "))
}

// pageVersion is the page as it stood after its record at version.
func (s *Service) pageVersion(ctx context.Context, tx *sql.Tx, cur Page, version uint64) (Page, error) {
	pg := Page{ID: cur.ID, Editing: cur.Editing, Version: version, CreatedAt: cur.CreatedAt}
	var at int64
	err := s.replica.Prepared(tx).QueryRowContext(ctx, `SELECT space, parent, title, body, trashed, at FROM kb_versions WHERE id = ? AND seq = ?`, cur.ID, version).
		Scan(&pg.Space, &pg.Parent, &pg.Title, &pg.Body, &pg.Trashed, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return pg, engine.Refuse(engine.CodeNotFound, "page %s has no version %d; list_page_versions lists its versions.", cur.ID, version)
	}
	pg.UpdatedAt = time.Unix(0, at).UTC()
	return pg, err
}

// comments are a page's newest comments, oldest first.
func (s *Service) comments(ctx context.Context, tx *sql.Tx, page string) ([]Comment, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, author, body, version, created_at, updated_at FROM
		(SELECT * FROM kb_comments WHERE page = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq`, page, MaxReadComments)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Comment{}
	for rows.Next() {
		var c Comment
		var created, updated int64
		if err := rows.Scan(&c.ID, &c.Author, &c.Body, &c.Version, &created, &updated); err != nil {
			return nil, err
		}
		c.CreatedAt, c.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
		out = append(out, c)
	}
	return out, rows.Err()
}

// ListPageVersions lists a page's versions, newest first: every record of
// its own (create, update, move, trash, restore), who wrote it, when and
// at which position. get_page with version reads one.
func (s *Service) ListPageVersions(ctx context.Context, r engine.ReadOptions, id, cursor string, limit int) (VersionList, error) {
	if err := checkPageID("id", id); err != nil {
		return VersionList{}, err
	}
	if err := checkLimit(&limit, DefaultListLimit, MaxListLimit); err != nil {
		return VersionList{}, err
	}
	pg, err := openCursor(cursor, fingerprint("list_page_versions", id))
	if err != nil {
		return VersionList{}, err
	}
	before, err := pg.afterInt()
	if err != nil {
		return VersionList{}, err
	}
	if before == 0 {
		before = 1<<63 - 1
	}
	out := VersionList{Versions: []PageVersion{}}
	more := false
	info, err := s.replica.Read(ctx, pg.floor(r), func(ctx context.Context, tx *sql.Tx) error {
		if _, err := s.getPage(ctx, tx, id); errors.Is(err, sql.ErrNoRows) {
			return s.pageMissing(ctx, tx, "page", id)
		} else if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT seq, kind, actor, at, space, parent, title, trashed FROM kb_versions
			WHERE id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`, id, before, limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var v PageVersion
			var at int64
			if err := rows.Scan(&v.Version, &v.Kind, &v.By, &at, &v.Space, &v.Parent, &v.Title, &v.Trashed); err != nil {
				return err
			}
			if len(out.Versions) == limit {
				more = true
				break
			}
			v.At = time.Unix(0, at).UTC()
			v.Position = s.replica.Position(v.Version).Token()
			out.Versions = append(out.Versions, v)
		}
		return rows.Err()
	})
	out.ReadInfo = info
	if err == nil && more {
		out.NextCursor = pg.next(info, strconv.FormatUint(out.Versions[len(out.Versions)-1].Version, 10))
	}
	return out, err
}
