package kb

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb/kbrec"
	"github.com/crewlet/crewlet/engine/statelog"
)

// Service is the knowledge base's decide side: it validates input, decides
// against the local rows, and hands records to the write path.
type Service struct {
	replica statelog.DomainReplica
	clock   engine.Clock
	// sem is the vectors' index once linked (UseIndex).
	sem atomic.Value
}

// NewService builds the service over the pages replica.
func NewService(r statelog.DomainReplica, clock engine.Clock) *Service {
	if clock == nil {
		clock = engine.SystemClock{}
	}
	return &Service{replica: r, clock: clock}
}

// Replica is the pages replica (tests and benchmarks reach the framework
// through it).
func (s *Service) Replica() statelog.DomainReplica { return s.replica }

var (
	spaceKeyRE = regexp.MustCompile(`^[A-Z][A-Z0-9]{1,9}$`)
	pageIDRE   = regexp.MustCompile(`^pg_[0-9a-f]{32}$`)
)

func invalid(format string, args ...any) error {
	return engine.Refuse(engine.CodeInvalidArgument, format, args...)
}

func checkText(field, v string, maxBytes int, required bool) error {
	return engine.CheckText(field, v, maxBytes, required)
}

func checkSpaceKey(field, key string) error {
	if !spaceKeyRE.MatchString(key) {
		return invalid("%s %q is not a space key: 2-10 upper-case letters and digits starting with a letter (e.g. DOCS); list_spaces shows them.", field, key)
	}
	return nil
}

func checkPageID(field, id string) error {
	if !pageIDRE.MatchString(id) {
		return invalid("%s %q is not a page id like pg_0193…; create_page, list_pages and search_knowledge answer page ids.", field, id)
	}
	return nil
}

func checkEditing(v string) error {
	if !slices.Contains(EditingValues, v) {
		return invalid("editing %q is not one of %s.", v, strings.Join(EditingValues, ", "))
	}
	return nil
}

// opFor returns the operation a write runs under: the one the caller
// brought back (which must name this very write and call), the one a seat
// derives from its turn, or a fresh one sealed to the call.
func (s *Service) opFor(w engine.WriteOptions, verb, object string) (statelog.Op, error) {
	return statelog.OpFor(s.clock.Now(), w, verb, object)
}

func linearizable(r engine.ReadOptions) engine.ReadOptions {
	if r.Level == "" {
		r.Level = engine.Linearizable
	}
	return r
}

// pageID derives a page's id from the operation that creates it, so a
// retried create answers the page the first copy filed.
func pageID(op statelog.Op) string { return "pg_" + strings.ReplaceAll(op.ID.UUID.String(), "-", "") }

type querier interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

const spaceColumns = `key, name, page_template, editing, EXISTS(SELECT 1 FROM kb_archived a WHERE a.key = kb_spaces.key), version, settings_through,
	(SELECT count(*) FROM kb_pages WHERE kb_pages.space = kb_spaces.key AND id NOT IN (SELECT id FROM kb_trash)), created_at, updated_at`

func scanSpace(sc interface{ Scan(...any) error }) (Space, error) {
	var sp Space
	var created, updated int64
	err := sc.Scan(&sp.Key, &sp.Name, &sp.PageTemplate, &sp.Editing, &sp.Archived, &sp.Version, &sp.SettingsThrough, &sp.Pages, &created, &updated)
	sp.CreatedAt, sp.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	return sp, err
}

func getSpace(ctx context.Context, q querier, key string) (Space, error) {
	return scanSpace(q.QueryRowContext(ctx, `SELECT `+spaceColumns+` FROM kb_spaces WHERE key = ?`, key))
}

// spaceTakingPages reads a space a page is being written into: one that
// exists, is open for editing and not archived; anything else refused.
func spaceTakingPages(ctx context.Context, q querier, key string) (Space, error) {
	sp, err := getSpace(ctx, q, key)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return sp, notFoundSpace(key)
	case err != nil:
		return sp, err
	case sp.Editing == EditingLocked:
		return sp, lockedSpace(key)
	case sp.Archived:
		return sp, archivedSpace(key)
	}
	return sp, nil
}

func notFoundSpace(key string) error {
	return engine.Refuse(engine.CodeNotFound, "space %s does not exist; list_spaces shows the spaces, or create_space files it.", key)
}

// A page's scoped_through is the later of the records that rewrote its
// row without being about it and the space's last settings record, which
// covers every page in the space.
const pageColumns = `p.id, p.space, p.parent, p.title, p.body, s.editing, EXISTS(SELECT 1 FROM kb_trash t WHERE t.id = p.id), p.version,
	max(p.scoped_through, s.settings_through), p.created_at, p.updated_at`

func scanPage(sc interface{ Scan(...any) error }) (Page, error) {
	var pg Page
	var created, updated int64
	err := sc.Scan(&pg.ID, &pg.Space, &pg.Parent, &pg.Title, &pg.Body, &pg.Editing, &pg.Trashed, &pg.Version, &pg.ScopedThrough, &created, &updated)
	pg.CreatedAt, pg.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	return pg, err
}

func (s *Service) getPage(ctx context.Context, tx *sql.Tx, id string) (Page, error) {
	return scanPage(s.replica.Prepared(tx).QueryRowContext(ctx, `SELECT `+pageColumns+` FROM kb_pages p JOIN kb_spaces s ON s.key = p.space WHERE p.id = ?`, id))
}

// purgedAt returns the sequence a page was purged at, 0 when it was not.
func purgedAt(ctx context.Context, q querier, id string) (uint64, error) {
	var seq uint64
	err := q.QueryRowContext(ctx, `SELECT seq FROM kb_purged WHERE id = ?`, id).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq, err
}

// pageMissing refuses a page this node holds no row for: deleted (for
// good, naming the purge's position) where a purge destroyed it, else
// not_found.
func (s *Service) pageMissing(ctx context.Context, q querier, field, id string) error {
	at, err := purgedAt(ctx, q, id)
	if err != nil {
		return err
	}
	if at > 0 {
		p := s.replica.Position(at)
		ref := engine.Refuse(engine.CodeDeleted, "%s %s was purged at %s; every record about it applies nowhere, for ever. Create a new page instead.", field, id, p.Token())
		ref.Position = &p
		return ref
	}
	return engine.Refuse(engine.CodeNotFound, "%s %s does not exist; list_pages shows a space's pages and search_knowledge finds them by words.", field, id)
}

func archivedSpace(key string) error {
	return engine.Refuse(engine.CodeInvalidArgument, "space %s is archived, so it takes no new pages; update_space with archived=false brings it back.", key)
}

func trashedPage(field, id string) error {
	return engine.Refuse(engine.CodeInvalidArgument, "%s %s is in the trash; update_page with trashed=false restores it.", field, id)
}

func lockedSpace(key string) error {
	return invalid("space %s is locked (its editing setting), so its pages take no edits; update_space with editing=open opens it.", key)
}

// CreateSpace files a space under key with a name. Its settings start
// open with no page template.
func (s *Service) CreateSpace(ctx context.Context, w engine.WriteOptions, key, name string) (SpaceWrite, error) {
	if err := checkSpaceKey("space key", key); err != nil {
		return SpaceWrite{}, err
	}
	if err := checkText("name", name, MaxNameBytes, true); err != nil {
		return SpaceWrite{}, err
	}
	op, err := s.opFor(w, "create_space", key)
	if err != nil {
		return SpaceWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	wr, err := s.replica.Write(ctx, op, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		if _, err := getSpace(ctx, tx, key); err == nil {
			return nil, engine.Refuse(engine.CodeAlreadyExists, "space %s already exists; use it, or choose another key.", key)
		} else if !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		return &statelog.Proposal{Kind: kbrec.KindCreateSpace, Subject: kbrec.SpaceSubject(key), Scope: []string{kbrec.SpaceScope(key)},
			Payload: kbrec.CreateSpace{Key: key, Name: name}}, nil
	})
	return s.spaceAnswer(ctx, wr, err, key)
}

// UpdateSpace changes a space's name or settings. With ifMatch set, it
// applies only while the space's version is that one, else refuses stale
// naming the current version. A settings record (page_template, editing)
// declares the whole space as its scope: it covers every page in it.
func (s *Service) UpdateSpace(ctx context.Context, w engine.WriteOptions, key string, ifMatch uint64, p SpacePatch) (SpaceWrite, error) {
	if err := checkSpaceKey("space key", key); err != nil {
		return SpaceWrite{}, err
	}
	if p.Name == nil && p.PageTemplate == nil && p.Editing == nil && p.Archived == nil {
		return SpaceWrite{}, invalid("nothing to update: give at least one of name, page_template, editing, archived.")
	}
	if p.Name != nil {
		if err := checkText("name", *p.Name, MaxNameBytes, true); err != nil {
			return SpaceWrite{}, err
		}
	}
	if p.PageTemplate != nil {
		if err := checkText("page_template", *p.PageTemplate, MaxBodyBytes, false); err != nil {
			return SpaceWrite{}, err
		}
	}
	if p.Editing != nil {
		if err := checkEditing(*p.Editing); err != nil {
			return SpaceWrite{}, err
		}
	}
	op, err := s.opFor(w, "update_space", key)
	if err != nil {
		return SpaceWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	wr, err := s.replica.Write(ctx, op, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		sp, err := getSpace(ctx, tx, key)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, notFoundSpace(key)
		}
		if err != nil {
			return nil, err
		}
		if ifMatch != 0 && sp.Version != ifMatch {
			ref := engine.Refuse(engine.CodeStale, "space %s is at version %d, not the if_match %d you named; read it again and decide against version %d.", key, sp.Version, ifMatch, sp.Version)
			return nil, ref.With("current_version", sp.Version)
		}
		upd := kbrec.UpdateSpace{Key: key, Name: p.Name, PageTemplate: p.PageTemplate, Editing: p.Editing}
		if p.Archived != nil {
			return &statelog.Proposal{Kind: kbrec.KindArchiveSpace, Subject: kbrec.SpaceSubject(key), Scope: []string{kbrec.SpaceScope(key)},
				Payload: kbrec.ArchiveSpace{UpdateSpace: upd, Archived: *p.Archived}}, nil
		}
		return &statelog.Proposal{Kind: kbrec.KindUpdateSpace, Subject: kbrec.SpaceSubject(key), Scope: []string{kbrec.SpaceScope(key)}, Payload: upd}, nil
	})
	return s.spaceAnswer(ctx, wr, err, key)
}

func (s *Service) spaceAnswer(ctx context.Context, wr statelog.Written, err error, key string) (SpaceWrite, error) {
	out := SpaceWrite{WriteResult: wr.WriteResult}
	if err != nil || wr.Outcome != engine.Applied {
		return out, err
	}
	var sp Space
	_, rerr := s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		sp, err = getSpace(ctx, tx, key)
		return err
	})
	if rerr == nil {
		out.Space = &sp
	} else if !errors.Is(rerr, sql.ErrNoRows) {
		return out, rerr
	}
	return out, nil
}

// CreatePage files a page in a space, under parent (empty: at the top).
// An empty body takes the space's page template. The page's id derives
// from the operation, so a retried create answers the page the first copy
// filed.
func (s *Service) CreatePage(ctx context.Context, w engine.WriteOptions, in NewPage) (PageWrite, error) {
	if err := checkSpaceKey("space", in.Space); err != nil {
		return PageWrite{}, err
	}
	if err := checkText("title", in.Title, MaxTitleBytes, true); err != nil {
		return PageWrite{}, err
	}
	if err := checkText("body", in.Body, MaxBodyBytes, false); err != nil {
		return PageWrite{}, err
	}
	if in.Parent != "" {
		if err := checkPageID("parent", in.Parent); err != nil {
			return PageWrite{}, err
		}
	}
	op, err := s.opFor(w, "create_page", in.Space)
	if err != nil {
		return PageWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	id := pageID(op)
	wr, err := s.replica.Write(ctx, op, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		sp, err := spaceTakingPages(ctx, tx, in.Space)
		if err != nil {
			return nil, err
		}
		if in.Parent != "" {
			parent, err := s.getPage(ctx, tx, in.Parent)
			if errors.Is(err, sql.ErrNoRows) {
				return nil, s.pageMissing(ctx, tx, "parent", in.Parent)
			}
			if err != nil {
				return nil, err
			}
			if parent.Space != in.Space {
				return nil, invalid("parent %s is in space %s, not %s; a page's parent is a page of its own space.", in.Parent, parent.Space, in.Space)
			}
			if parent.Trashed {
				return nil, trashedPage("parent", in.Parent)
			}
		}
		body := in.Body
		if body == "" {
			body = sp.PageTemplate
		}
		return &statelog.Proposal{Kind: kbrec.KindCreatePage, Subject: kbrec.PageSubject(id), Scope: []string{kbrec.SpaceScope(in.Space), kbrec.PageScope(id)},
			Payload: kbrec.CreatePage{ID: id, Space: in.Space, Parent: in.Parent, Title: in.Title, Body: body}}, nil
	})
	out, err := s.pageAnswer(ctx, wr, err, id)
	if err == nil && out.Page != nil && out.Page.Parent != in.Parent && !wr.Replayed {
		out.Message = "The parent was purged before this page applied, so the page was filed at the top of its space; update_page moves it."
	}
	return out, err
}

// pageAnswer renders a write's answer with the page as this node's rows
// hold it: on a replayed answer that is the first copy's page, never what
// this attempt decided.
func (s *Service) pageAnswer(ctx context.Context, wr statelog.Written, err error, id string) (PageWrite, error) {
	out := PageWrite{WriteResult: wr.WriteResult}
	if err != nil || wr.Outcome != engine.Applied {
		return out, err
	}
	var pg Page
	_, rerr := s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		pg, err = s.getPage(ctx, tx, id)
		return err
	})
	if rerr == nil {
		out.Page = &pg
	} else if !errors.Is(rerr, sql.ErrNoRows) {
		return out, rerr
	}
	return out, nil
}

// PurgePage destroys a page for good (operator only): its row and its
// search entry go, its children are re-filed where it stood (under its
// parent, or at the top of the space), and a marker makes every later
// record about it apply nowhere. The record declares the whole space as
// its scope, since it re-files pages in it.
func (s *Service) PurgePage(ctx context.Context, w engine.WriteOptions, id string) (PurgeWrite, error) {
	if err := checkPageID("id", id); err != nil {
		return PurgeWrite{}, err
	}
	op, err := s.opFor(w, "purge_page", id)
	if err != nil {
		return PurgeWrite{WriteResult: engine.WriteResult{OpID: w.OpID}}, err
	}
	out := PurgeWrite{ID: id, Refiled: []string{}}
	wr, err := s.replica.Write(ctx, op, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		pg, err := s.getPage(ctx, tx, id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, s.pageMissing(ctx, tx, "page", id)
		}
		if err != nil {
			return nil, err
		}
		return &statelog.Proposal{Kind: kbrec.KindPurgePage, Subject: kbrec.PageSubject(id), Scope: []string{kbrec.SpaceScope(pg.Space), kbrec.PageScope(id)},
			Payload: kbrec.PurgePage{ID: id}}, nil
	})
	out.WriteResult = wr.WriteResult
	if err != nil || wr.Outcome != engine.Applied {
		return out, err
	}
	// What the purge did, as the rows hold it: the marker names the space
	// and the parent; the children now carry the purge's scoped_through.
	_, rerr := s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
		var seq uint64
		if err := tx.QueryRowContext(ctx, `SELECT space, parent, seq FROM kb_purged WHERE id = ?`, id).Scan(&out.Space, &out.RefiledTo, &seq); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT id FROM kb_pages WHERE space = ? AND parent = ? AND scoped_through = ? ORDER BY n`, out.Space, out.RefiledTo, seq)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				return err
			}
			out.Refiled = append(out.Refiled, c)
		}
		return rows.Err()
	})
	if rerr != nil && !errors.Is(rerr, sql.ErrNoRows) {
		return out, rerr
	}
	return out, nil
}
